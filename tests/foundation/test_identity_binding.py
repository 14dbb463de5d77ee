"""Identity binding: which tenants a login may act for is decided by the database, not asserted by the caller.

Every attack here runs as an ordinary login that is a member of memsub_app (or memsub_analyst), never as the
superuser: a login bound to one tenant tries to set, forge or switch to another tenant's context; an unbound
login tries to act at all; a signed context token is expired, tampered with or presented by the wrong login.
The superuser only creates the logins and the victim's data.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memsub.client import Substrate
from memsub.context_tokens import mint_context_token
from memsub.errors import ContextError

from helpers import TENANT_A, TENANT_B, as_tenant_admin, count, set_context, write

ORG_1 = uuid.UUID("01000000-0000-0000-0000-000000000001")
ORG_2 = uuid.UUID("02000000-0000-0000-0000-000000000002")
USER_1 = uuid.UUID("00000000-0000-0000-0001-000000000001")
KEY = bytes(range(32))


def envelope(text: str) -> dict[str, Any]:
    return {"packet_type": "event", "payload": {"text": text}}


@pytest.fixture
def seeded(db):
    """Tenant B holds one packet: what an attacker bound to tenant A wants to read."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        write(conn, envelope("tenant B's secret"))
        conn.commit()
    return db


class Logins:
    """Fresh login roles for one test (cluster-wide, so uniquely named and dropped afterwards)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.created: list[str] = []

    def create(self, member_of: str = "memsub_app") -> str:
        name = f"memsub_svc_{uuid.uuid4().hex[:10]}"
        with self.db.connect(autocommit=True) as conn:
            conn.execute(sql.SQL("create role {} login in role {}").format(
                sql.Identifier(name), sql.Identifier(member_of)))
        self.created.append(name)
        return name

    def connect(self, name: str) -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(self.db.server.dsn(self.db.name, name))

    def admin(self, statement: str, params: list[Any]) -> None:
        """Run a binding statement as the platform admin login (who may manage bindings)."""
        with self.db.connect("platform_admin", autocommit=True) as conn:
            conn.execute(statement, params)


@pytest.fixture
def logins(db) -> Iterator[Logins]:
    made = Logins(db)
    yield made
    with db.connect(autocommit=True) as conn:
        for name in made.created:
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(name)))


def refused(conn: psycopg.Connection[Any], statement: str, params: list[Any] | tuple[Any, ...] = (),
            sqlstate: str = "42501") -> psycopg.Error:
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(statement, params)
    conn.rollback()
    assert caught.value.sqlstate == sqlstate, caught.value
    return caught.value


def refused_with_a_forged_tenant(conn: psycopg.Connection[Any], reads: list[tuple[str, list[Any]]]) -> None:
    """Each read is refused (42501 naming tenant_id) after a login bound to tenant A set its context and then
    wrote tenant B, or a value that is no tenant at all, into the tenant setting by hand."""
    for forged in (str(TENANT_B), "not a tenant"):
        for statement, params in reads:
            set_context(conn, TENANT_A)
            conn.execute("select set_config('memsub.tenant_id', %s, true)", [forged])
            error = refused(conn, statement, params)
            assert error.diag.column_name == "tenant_id", (forged, statement, params)


# -- bound logins ----------------------------------------------------------------------------------------


def test_a_bound_login_acts_for_its_tenant_and_cannot_set_another(seeded, logins):
    svc = logins.create()
    logins.admin("select memsub.bind_login(%s, %s)", [svc, TENANT_A])
    with logins.connect(svc) as conn:
        set_context(conn, TENANT_A)
        write(conn, envelope("mine"))
        assert count(conn) == 1
        conn.commit()
        error = refused(conn, "select memsub.set_context(%s)", [TENANT_B])
        assert error.diag.column_name == "tenant_id"
        assert svc in str(error) and str(TENANT_B) in str(error)


def test_a_bound_login_cannot_forge_the_context_by_hand(seeded, logins):
    svc = logins.create()
    logins.admin("select memsub.bind_login(%s, %s)", [svc, TENANT_A])
    with logins.connect(svc) as conn:
        # never calling set_context at all
        conn.execute("select set_config('memsub.tenant_id', %s, true)", [str(TENANT_B)])
        refused(conn, "select count(*) from memsub.packet_store")
        # a session-level setting outlives transactions
        conn.execute(sql.SQL("set memsub.tenant_id = {}").format(sql.Literal(str(TENANT_B))))
        conn.commit()
        refused(conn, "select count(*) from memsub.packet_store")
        conn.execute("reset memsub.tenant_id")
        conn.commit()
        # after a legitimate context: switch the tenant, or the organization, behind set_context's back
        set_context(conn, TENANT_A)
        conn.execute("select set_config('memsub.tenant_id', %s, true)", [str(TENANT_B)])
        refused(conn, "select count(*) from memsub.packet_store")
        set_context(conn, TENANT_A)
        conn.execute("select set_config('memsub.org_id', %s, true)", [str(ORG_2)])
        refused(conn, "select * from memsub.write_packet(%s::jsonb)", [json.dumps(envelope("x"))])
        # a seal copied from an earlier transaction does not fit a later one
        set_context(conn, TENANT_A)
        seal = conn.execute("select current_setting('memsub.context_seal')").fetchone()
        conn.commit()
        conn.execute("select set_config('memsub.tenant_id', %s, true), set_config('memsub.context_seal', %s, true)",
                     [str(TENANT_A), seal[0] if seal else ""])
        refused(conn, "select count(*) from memsub.packet_store")


def test_packet_reads_keyed_by_a_forged_tenant_are_refused_whether_or_not_anything_matches(db, logins):
    """Packet reads key their index searches by the tenant setting and leave the seal to row-level security
    (checked before a row is returned) or, when nothing is returned, check it themselves: a forged tenant is
    refused for another tenant's packet and for an unknown id alike."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        packet = write(conn, {"packet_type": "event", "payload": {"text": "tenant B's secret"},
                              "memory": {"embeddings": [{"embedding_type": "content", "vector": [0.5] * dimension}]}})
        conn.commit()
    theirs, unknown = packet["packet_id"], uuid.uuid4()
    svc = logins.create()
    logins.admin("select memsub.bind_login(%s, %s)", [svc, TENANT_A])
    reads = [("select * from memsub.get_packet(%s, %s)", [ids, with_vectors])
             for ids in (theirs, unknown) for with_vectors in (False, True)]
    reads += [("select * from memsub.get_packets(%s, false)", [[theirs, unknown]]),
              ("select * from memsub.get_packets_with_vector_values(%s)", [[theirs]]),
              ("select * from memsub.get_packets_with_vector_values(%s)", [[unknown]])]
    with logins.connect(svc) as conn:
        refused_with_a_forged_tenant(conn, reads)
        set_context(conn, TENANT_A)
        for statement, params in reads:  # the login's own context: nothing of tenant B's
            assert conn.execute(statement, params).fetchall() == []
        conn.rollback()
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert len(conn.execute("select * from memsub.get_packets_with_vector_values(%s)", [[theirs]]).fetchall()) == 1


def test_store_reads_keyed_by_a_forged_tenant_are_refused_whether_or_not_anything_matches(db, logins):
    """The LangGraph store's get, search and namespace listing key their reads by the tenant setting and leave the
    seal to row-level security (checked before a row is returned) or, when nothing is returned, check it
    themselves: a forged tenant is refused on a hit and on a miss alike, so a refusal tells nothing about another
    tenant's keys."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        conn.execute("select memsub.langgraph_store_put(%s, %s, %s::jsonb)",
                     [["notes", "b"], "secret", json.dumps({"text": "tenant B's note"})])
        conn.commit()
    svc = logins.create()
    logins.admin("select memsub.bind_login(%s, %s)", [svc, TENANT_A])
    get = "select * from memsub.langgraph_store_get(%s, %s)"
    search = "select * from memsub.langgraph_store_search(%s, %s::jsonb)"
    listing = "select * from memsub.langgraph_store_list_namespaces(%s)"
    reads = [(get, [["notes", "b"], "secret"]), (get, [["notes", "b"], "missing"]),
             (search, [["notes"], None]), (search, [["notes"], json.dumps({"text": "tenant B's note"})]),
             (search, [["elsewhere"], None]), (search, [[], None]),
             (listing, [["notes"]]), (listing, [["elsewhere"]]), (listing, [None])]
    with logins.connect(svc) as conn:
        refused_with_a_forged_tenant(conn, reads)
        for statement, params in reads:  # no context at all
            refused(conn, statement, params)
        # the same calls with the login's own context read its own (empty) store
        set_context(conn, TENANT_A)
        assert conn.execute(get, [["notes", "b"], "secret"]).fetchall() == []
        assert conn.execute(search, [["notes"], None]).fetchall() == []
        assert conn.execute(listing, [None]).fetchall() == []
        conn.rollback()
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert len(conn.execute(get, [["notes", "b"], "secret"]).fetchall()) == 1


def test_set_role_does_not_change_which_binding_applies(seeded, logins):
    svc = logins.create()
    logins.admin("select memsub.bind_login(%s, %s)", [svc, TENANT_A])
    with logins.connect(svc) as conn:
        conn.execute("set role memsub_app")
        refused(conn, "select memsub.set_context(%s)", [TENANT_B])


def test_an_organization_binding_allows_that_organization_only(db, logins):
    svc = logins.create()
    logins.admin("select memsub.bind_login(%s, %s, %s)", [svc, TENANT_A, ORG_1])
    with logins.connect(svc) as conn:
        set_context(conn, TENANT_A, ORG_1)
        write(conn, envelope("org 1"))  # the context's organization
        conn.commit()
        assert refused(conn, "select memsub.set_context(%s, %s)", [TENANT_A, ORG_2]).diag.column_name == "org_id"
        # no organization would mean acting for the whole tenant
        assert refused(conn, "select memsub.set_context(%s)", [TENANT_A]).diag.column_name == "org_id"
    logins.admin("select memsub.bind_login(%s, %s, %s)", [svc, TENANT_A, ORG_2])
    with logins.connect(svc) as conn:
        set_context(conn, TENANT_A, ORG_2)
        assert count(conn) == 0  # org 1's packet stays in org 1



def test_an_organization_binding_confines_a_tenant_admin_login_too(db, logins):
    """A tenant_admin context passes the organization rules. A member of memsub_tenant_admin bound to one
    organization asked for it and read every organization of the tenant, by set_context or by writing the
    context roles by hand after it. The roles are sealed with the context now, and tenant_admin needs a binding
    to the whole tenant."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_2)
        write(conn, envelope("org 2's own"))
        conn.commit()
    svc = logins.create("memsub_tenant_admin")
    logins.admin("select memsub.bind_login(%s, %s, %s)", [svc, TENANT_A, ORG_1])
    with logins.connect(svc) as conn:
        error = refused(conn, "select memsub.set_context(%s, %s, null, array['tenant_admin'])", [TENANT_A, ORG_1])
        assert error.diag.column_name == "roles"
        set_context(conn, TENANT_A, ORG_1)
        conn.execute("select set_config('memsub.roles', 'tenant_admin', true)")  # by hand, after set_context
        assert refused(conn, "select count(*) from memsub.packet_store").diag.column_name == "tenant_id"
        set_context(conn, TENANT_A, ORG_1)
        assert count(conn) == 0  # org 2's packet stays in org 2
    logins.admin("select memsub.bind_login(%s, %s)", [svc, TENANT_A])  # bound to the whole tenant: admin
    with logins.connect(svc) as conn:
        conn.execute("select memsub.set_context(%s, %s, null, array['tenant_admin'])", [TENANT_A, ORG_1])
        assert count(conn) == 1

def test_an_organization_bound_tenant_admin_login_reads_no_learning_run(db, logins):
    """A learning run counts the accesses, feedback and memories of every organization of the tenant, and
    memsub_tenant_admin may select the table. A member bound to one organization, refused the tenant_admin
    context, still read every run of the tenant through its organization's context: the runs are shown only to
    admin contexts (and analysts)."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_2)
        packet = write(conn, envelope("org 2's activity"))
        conn.execute("select memsub.record_access('packet', %s)", [packet["packet_id"]])
        conn.commit()
    as_tenant_admin(db, "select * from memsub.learn_importance()")
    runs = "select count(*) from memsub.importance_learning_runs"
    svc = logins.create("memsub_tenant_admin")
    logins.admin("select memsub.bind_login(%s, %s, %s)", [svc, TENANT_A, ORG_1])
    with logins.connect(svc) as conn:
        set_context(conn, TENANT_A, ORG_1)
        assert conn.execute(runs).fetchone() == (0,)
        set_context(conn, TENANT_A, ORG_1, USER_1)
        assert conn.execute(runs).fetchone() == (0,)
    logins.admin("select memsub.bind_login(%s, %s)", [svc, TENANT_A])  # the whole tenant: still no admin context
    with logins.connect(svc) as conn:
        set_context(conn, TENANT_A)
        assert conn.execute(runs).fetchone() == (0,)
        set_context(conn, TENANT_A, roles=["tenant_admin"])
        assert conn.execute(runs).fetchone() == (1,)


def test_an_unbound_login_is_refused_unless_the_deployment_allows_it(seeded, logins):
    svc = logins.create()
    analyst = logins.create("memsub_analyst")
    for login in (svc, analyst):
        with logins.connect(login) as conn:
            error = refused(conn, "select memsub.set_context(%s)", [TENANT_B])
            assert error.diag.column_name == "tenant_id" and "no binding" in str(error)
    with db_connect_as(logins, "app") as conn:
        refused(conn, "select memsub.set_unbound_logins('allow')")
    logins.admin("select memsub.set_unbound_logins(%s)", ["allow"])
    with logins.connect(svc) as conn:
        set_context(conn, TENANT_B)
        assert count(conn) == 1
    logins.admin("select memsub.set_unbound_logins(%s)", ["refuse"])
    with logins.connect(svc) as conn:
        refused(conn, "select memsub.set_context(%s)", [TENANT_B])
    with logins.db.connect("platform_admin") as conn:
        error = refused(conn, "select memsub.set_unbound_logins('sometimes')", sqlstate="22023")
        assert error.diag.column_name == "mode"


def db_connect_as(logins: Logins, kind: str) -> psycopg.Connection[tuple[Any, ...]]:
    return logins.db.connect(kind)


def test_a_trusted_login_acts_for_any_tenant_and_unbinding_takes_it_back(seeded, logins):
    svc = logins.create()
    logins.admin("select memsub.trust_login(%s)", [svc])
    with logins.connect(svc) as conn:
        set_context(conn, TENANT_B)
        assert count(conn) == 1
        conn.commit()
    logins.admin("select memsub.unbind_login(%s)", [svc])
    with logins.connect(svc) as conn:
        refused(conn, "select memsub.set_context(%s)", [TENANT_B])


def test_one_transaction_acts_for_one_tenant(seeded, logins):
    svc = logins.create()
    logins.admin("select memsub.trust_login(%s)", [svc])
    with logins.connect(svc) as conn:
        set_context(conn, TENANT_A)
        set_context(conn, TENANT_A, ORG_1, USER_1)  # the same tenant again: fine
        error = refused(conn, "select memsub.set_context(%s)", [TENANT_B])
        assert error.diag.column_name == "tenant_id"
        set_context(conn, TENANT_B)  # a new transaction may
        assert count(conn) == 1


def test_a_tenant_written_by_hand_is_not_the_transactions_tenant(seeded, logins):
    """Only a sealed context binds a transaction to its tenant: settings written by hand before set_context do
    not stop it from setting another tenant (they are replaced, seal and all)."""
    svc = logins.create()
    logins.admin("select memsub.trust_login(%s)", [svc])
    with logins.connect(svc) as conn:
        conn.execute("select set_config('memsub.tenant_id', %s, true)", [str(TENANT_A)])
        set_context(conn, TENANT_B)
        assert conn.execute("select memsub.current_tenant_id()").fetchone() == (TENANT_B,)
        assert count(conn) == 1
        conn.rollback()


def test_platform_admins_need_no_binding(seeded, logins):
    admin = logins.create("memsub_platform_admin")
    with logins.connect(admin) as conn:
        set_context(conn, TENANT_B)
        assert count(conn) == 1
        conn.rollback()
        set_context(conn, None, roles=["platform_admin"])
        assert count(conn) == 1


def test_only_platform_admins_manage_bindings(db, logins):
    svc = logins.create()
    for kind in ("app", "tenant_admin", "analyst"):
        with db.connect(kind) as conn:
            for statement in ("select memsub.bind_login(%s, %s)", "select memsub.unbind_login(%s, %s)"):
                refused(conn, statement, [svc, TENANT_A])
            refused(conn, "select memsub.trust_login(%s)", [svc])
            refused(conn, "select * from memsub.login_bindings")
            refused(conn, "select * from memsub.context_keys")
            # no signing oracle: the seal is computed only inside memsub's own functions
            refused(conn, "select memsub._context_mac('seal', 'anything')")
            refused(conn, "select memsub._store_context(%s, null, null, '{}', null)", [TENANT_A])
    with db.connect("platform_admin") as conn:
        refused(conn, "select * from memsub.context_keys")
        error = refused(conn, "select memsub.bind_login(%s, %s)", ["no_such_login", TENANT_A], "42704")
        assert error.diag.column_name == "login"
        error = refused(conn, "select memsub.bind_login(%s, %s)", ["memsub_app", TENANT_A], "22023")
        assert error.diag.column_name == "login"
        error = refused(conn, "select memsub.bind_login(%s, %s)", [svc, None], "22004")
        assert error.diag.column_name == "tenant_id"
        conn.execute("select memsub.bind_login(%s, %s)", [svc, TENANT_A])
        conn.execute("select memsub.bind_login(%s, %s)", [svc, TENANT_A])  # idempotent
        assert conn.execute("select bound_tenant_id, bound_org_id from memsub.login_bindings where login = %s",
                            [svc]).fetchall() == [(TENANT_A, None)]
        assert conn.execute("select memsub.unbind_login(%s, %s)", [svc, TENANT_A]).fetchone() == (1,)


# -- signed context tokens -------------------------------------------------------------------------------


@pytest.fixture
def signing_key(db) -> bytes:
    with db.connect("platform_admin", autocommit=True) as conn:
        conn.execute("select memsub.set_context_signing_key(%s, %s)", ["gateway-1", KEY])
    return KEY


def test_a_signed_context_is_accepted_for_an_unbound_login(seeded, logins, signing_key):
    svc = logins.create()
    token = mint_context_token(signing_key, "gateway-1", TENANT_B, user_id=USER_1, session_id="s1",
                               ttl_seconds=60, login=svc)
    with logins.connect(svc) as conn:
        conn.execute("select memsub.set_context_signed(%s)", [token])
        assert conn.execute("select memsub.current_tenant_id(), memsub.current_user_id(), "
                            "memsub.current_session_id()").fetchone() == (TENANT_B, USER_1, "s1")
        assert count(conn) == 1
        conn.rollback()
        # the token names the tenant; the login cannot pick another one by hand
        conn.execute("select memsub.set_context_signed(%s)", [token])
        conn.execute("select set_config('memsub.tenant_id', %s, true)", [str(TENANT_A)])
        refused(conn, "select count(*) from memsub.packet_store")


def test_the_client_opens_a_signed_context(seeded, logins, signing_key):
    svc = logins.create()
    token = mint_context_token(signing_key, "gateway-1", TENANT_B, ttl_seconds=60, login=svc)
    with Substrate(logins.db.server.dsn(logins.db.name, svc)) as substrate:
        with substrate.signed(token) as session:
            assert len(session.fetch("select packet_id from memsub.packet_store")) == 1
        with pytest.raises(ContextError) as caught, substrate.signed(token[:-4] + "AAAA"):
            pass
        assert caught.value.sqlstate == "28000" and caught.value.field == "signature"


def _parts(token: str) -> tuple[dict[str, Any], str]:
    payload, signature = token.split(".")
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))), signature


def _encode(claims: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()


def test_bad_signed_contexts_are_refused_naming_the_field(seeded, logins, signing_key):
    svc = logins.create()
    good = mint_context_token(signing_key, "gateway-1", TENANT_A, ttl_seconds=60)
    claims, signature = _parts(good)
    cases = {
        "exp": mint_context_token(signing_key, "gateway-1", TENANT_A, ttl_seconds=60,
                                  now=time.time() - 3600),
        "signature": _encode({**claims, "tenant": str(TENANT_B)}) + "." + signature,
        "kid": mint_context_token(b"k" * 32, "gateway-2", TENANT_B, ttl_seconds=60),
        "login": mint_context_token(signing_key, "gateway-1", TENANT_B, ttl_seconds=60, login="someone_else"),
    }
    forged_key = mint_context_token(b"x" * 32, "gateway-1", TENANT_B, ttl_seconds=60)
    with logins.connect(svc) as conn:
        for field, token in cases.items():
            error = refused(conn, "select memsub.set_context_signed(%s)", [token], "28000")
            assert error.diag.column_name == field, (field, error)
        assert refused(conn, "select memsub.set_context_signed(%s)", [forged_key],
                       "28000").diag.column_name == "signature"
        for malformed in ("", "abc", "a.b.c", _encode({"tenant": "x"}) + "." + signature):
            error = refused(conn, "select memsub.set_context_signed(%s)", [malformed], "22023")
            assert error.diag.column_name == "token"
        assert conn.execute("select memsub.current_tenant_id()").fetchone() == (None,)


def test_a_refused_token_cannot_write_lines_of_its_own_into_the_message(seeded, logins, signing_key):
    """An unauthenticated caller chooses a token's kid and login claims; the refusal quotes them as JSON strings,
    so a newline (a fake line in the server log, which records every error's message) stays escaped, and a long
    claim is cut."""
    svc = logins.create()
    forged = "gateway-9\nLOG:  connection authorized: user=postgres"
    unknown_key = mint_context_token(b"k" * 32, forged, TENANT_B, ttl_seconds=60)
    other_login = mint_context_token(signing_key, "gateway-1", TENANT_B, ttl_seconds=60, login=forged + "x" * 500)
    with logins.connect(svc) as conn:
        for token, field in ((unknown_key, "kid"), (other_login, "login")):
            error = refused(conn, "select memsub.set_context_signed(%s)", [token], "28000")
            message = error.diag.message_primary or ""
            assert error.diag.column_name == field
            assert "\n" not in message and "\\nLOG:" in message, message
            assert len(message) < 300, message


def test_signing_keys_are_managed_by_platform_admins_only(db):
    with db.connect("app") as conn:
        refused(conn, "select memsub.set_context_signing_key(%s, %s)", ["k", KEY])
    with db.connect("platform_admin") as conn:
        error = refused(conn, "select memsub.set_context_signing_key(%s, %s)", ["k", b"short"], "22023")
        assert error.diag.column_name == "secret"
        conn.execute("select memsub.set_context_signing_key(%s, %s)", ["k", KEY])
        assert conn.execute("select memsub.drop_context_signing_key(%s)", ["k"]).fetchone() == (True,)


# -- requested context roles -----------------------------------------------------------------------------


def test_an_unknown_context_role_is_refused_alike_everywhere(db, logins, signing_key):
    # set_context, set_context_signed and create_api_key refuse a role name outside memsub.context_roles() with
    # the same error: 22023 naming roles, the role in the message and the known roles in the hint.
    svc = logins.create()
    token = mint_context_token(signing_key, "gateway-1", TENANT_A, roles=["superuser"],
                               ttl_seconds=60, login=svc)
    errors: dict[str, psycopg.Error] = {}
    with db.connect("app") as conn:
        errors["set_context"] = refused(conn, "select memsub.set_context(%s, p_roles => %s)",
                                        [TENANT_A, ["superuser"]], "22023")
    with logins.connect(svc) as conn:
        errors["set_context_signed"] = refused(conn, "select memsub.set_context_signed(%s)", [token], "22023")
    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        errors["create_api_key"] = refused(
            conn, "select * from memsub.create_api_key(%s, p_roles => %s, p_label => 'k')",
            [TENANT_A, ["superuser"]], "22023")
    for function, error in errors.items():
        assert error.diag.message_primary == f'memsub.{function}: unknown role "superuser"'
        assert error.diag.column_name == "roles"
        assert error.diag.message_hint == "Known context roles: tenant_admin, platform_admin."
