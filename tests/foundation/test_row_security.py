"""Row-level security of the packet area, checked against a reference model of the policies.

A grid of packets (2 tenants x 3 orgs x 4 scope/user/session cases) is written through memsub.write_packet,
each case three times: live, expired and purged (expired, then removed by purge_expired, leaving a tombstone);
each viewer (a database role plus a context) must see exactly what the model says: no expired packet, and the
tombstones it would have seen as packets. Dropping any single
policy must make some viewer's view differ from the model: the mutation test proves that automatically.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any, get_args

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsub.models import Scope

from helpers import TENANT_A, TENANT_B, expect_error, set_context, soak_factor, write

ORG_1 = uuid.UUID("01000000-0000-0000-0000-000000000001")
ORG_2 = uuid.UUID("02000000-0000-0000-0000-000000000002")
USER_1 = uuid.UUID("00000000-0000-0000-0001-000000000001")
USER_2 = uuid.UUID("00000000-0000-0000-0001-000000000002")
USER_3 = uuid.UUID("00000000-0000-0000-0001-000000000003")

CASES = [("shared", USER_1, "s1"), ("l-private", USER_1, "s1"), ("cursor", USER_1, "s1"), ("l-private", USER_2, "s2")]


@dataclass(frozen=True)
class Packet:
    label: str
    tenant: uuid.UUID
    org: uuid.UUID | None
    scope: str
    user: uuid.UUID
    session: str
    thread: uuid.UUID
    packet_id: uuid.UUID
    state: str = "live"  # live, expired (ttl passed) or purged (only a tombstone left)


@dataclass(frozen=True)
class Viewer:
    name: str
    role: str
    tenant: uuid.UUID | None
    org: uuid.UUID | None = None
    user: uuid.UUID | None = None
    session: str | None = None
    roles: tuple[str, ...] = ()
    forged_roles: str | None = None  # memsub.roles set by hand after set_context: breaks the context's seal
    context: bool = True

    @property
    def platform(self) -> bool:
        return "platform_admin" in self.roles

    @property
    def tenant_admin(self) -> bool:
        return "tenant_admin" in self.roles or self.platform

    def sees_packet(self, packet: Packet) -> bool:
        """The policies as a specification: never expired; tenant -> org -> user visibility, admin overrides."""
        return packet.state == "live" and self.may_see(packet)

    def sees_tombstone(self, packet: Packet) -> bool:
        return packet.state == "purged" and self.may_see(packet)

    def may_see(self, packet: Packet) -> bool:
        if not self.context or self.forged_roles:  # a forged context reads nothing: every read is refused
            return False
        if self.platform:
            return True
        if packet.tenant != self.tenant:
            return False
        if self.tenant_admin:
            return True
        if packet.org is not None and packet.org != self.org:
            return False
        if packet.scope == "shared":
            return True
        if packet.scope == "l-private":
            return packet.user == self.user
        return packet.user == self.user or packet.session == self.session

    def sees_thread(self, packet: Packet) -> bool:
        return self.context and not self.forged_roles and (self.platform or packet.tenant == self.tenant)


VIEWERS = [
    Viewer("app A, no org, user 1, session 1", "app", TENANT_A, None, USER_1, "s1"),
    Viewer("app A, org 1, user 1", "app", TENANT_A, ORG_1, USER_1, None),
    Viewer("app A, org 1, user 2, session 2", "app", TENANT_A, ORG_1, USER_2, "s2"),
    Viewer("app A, org 2, user 3, session 1", "app", TENANT_A, ORG_2, USER_3, "s1"),
    Viewer("app A, no user", "app", TENANT_A),
    Viewer("app B, org 1, user 1, session 1", "app", TENANT_B, ORG_1, USER_1, "s1"),
    Viewer("app A forging admin roles", "app", TENANT_A, None, USER_3, forged_roles="platform_admin,tenant_admin"),
    Viewer("tenant admin of A", "tenant_admin", TENANT_A, None, USER_3, roles=("tenant_admin",)),
    Viewer("tenant admin role without asking", "tenant_admin", TENANT_A, ORG_2, USER_3),
    Viewer("platform admin", "platform_admin", None, roles=("platform_admin",)),
    Viewer("analyst A, org 1, user 1", "analyst", TENANT_A, ORG_1, USER_1),
    Viewer("app without context", "app", None, context=False),
]


EXPIRED = {"timestamp": "2020-01-01T00:00:00Z", "ttl": "2020-01-02T00:00:00Z"}


def populate(db) -> list[Packet]:
    packets: list[Packet] = []
    threads = {key: uuid.uuid4() for key in itertools.product([TENANT_A, TENANT_B], [None, ORG_1, ORG_2])}

    def write_grid(state: str) -> None:
        with db.connect("app") as conn:
            for (tenant, org), thread in threads.items():
                for scope, user, session in CASES:
                    set_context(conn, tenant, org, user, session=session)
                    label = f"{tenant.hex[:1]}/{org.hex[:2] if org else '--'}/{scope}/{user.hex[-1]}/{state}"
                    envelope = {"packet_type": "event", "payload": label, "scope": scope, "thread_id": str(thread)}
                    written = write(conn, envelope | (EXPIRED if state != "live" else {}))
                    packets.append(Packet(label, tenant, org, scope, user, session, thread,
                                          written["packet_id"], state))
                    conn.commit()

    write_grid("purged")
    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        conn.execute("select memsub.purge_expired()")
        conn.commit()
    write_grid("live")
    write_grid("expired")
    return packets


def observe(db, viewer: Viewer) -> tuple[set[str], set[uuid.UUID], set[uuid.UUID]]:
    with db.connect(viewer.role) as conn:
        if viewer.context:
            set_context(conn, viewer.tenant, viewer.org, viewer.user, viewer.roles, viewer.session)
        if viewer.forged_roles:
            conn.execute("select set_config('memsub.roles', %s, true)", [viewer.forged_roles])

        def read(statement: str) -> set[Any]:
            """The rows a read returns; none when it is refused for a context that lost its seal."""
            try:
                with conn.transaction():
                    return {r[0] for r in conn.execute(statement)}
            except psycopg.errors.InsufficientPrivilege:
                if not viewer.forged_roles:
                    raise
                return set()

        labels = read("select envelope ->> 'payload' from memsub.packet_store")
        threads = read("select thread_id from memsub.packet_threads")
        tombstones = read("select packet_id from memsub.packet_tombstones")
    return labels, threads, tombstones


def mismatches(db, packets: list[Packet]) -> list[str]:
    found: list[str] = []
    for viewer in VIEWERS:
        labels, threads, tombstones = observe(db, viewer)
        expected = {p.label for p in packets if viewer.sees_packet(p)}
        expected_tombstones = {p.packet_id for p in packets if viewer.sees_tombstone(p)}
        if tombstones != expected_tombstones:
            found.append(f"{viewer.name}: tombstones differ ({len(tombstones)} seen, "
                         f"{len(expected_tombstones)} expected)")
        expected_threads = {p.thread for p in packets if viewer.sees_thread(p)}
        if labels != expected:
            extra, missing = sorted(labels - expected), sorted(expected - labels)
            found.append(f"{viewer.name}: packets extra {extra} missing {missing}")
        if threads != expected_threads:
            found.append(f"{viewer.name}: threads differ ({len(threads)} seen, {len(expected_threads)} expected)")
    return found


def test_every_viewer_sees_exactly_what_the_policies_allow(db):
    packets = populate(db)
    assert mismatches(db, packets) == []


# Every policy on the packet area, each of which must matter.
PACKET_POLICIES = [
    ("packet_store", "tenant_isolation"), ("packet_store", "admin_override"),
    ("packet_store", "org_isolation"), ("packet_store", "user_visibility"), ("packet_store", "not_expired"),
    ("packet_threads", "tenant_isolation"), ("packet_threads", "admin_override"),
    ("packet_tombstones", "tenant_isolation"), ("packet_tombstones", "admin_override"),
    ("packet_tombstones", "org_isolation"), ("packet_tombstones", "user_visibility"),
]


def test_the_mutation_list_names_every_packet_area_policy(db):
    with db.connect() as conn:
        actual = set(conn.execute("select tablename, policyname from pg_policies where schemaname = 'memsub' "
                                  "and tablename in ('packet_store', 'packet_threads', 'packet_tombstones')"
                                  ).fetchall())
    assert actual == set(PACKET_POLICIES)


# Two ways a change to the SQL could lose a policy: dropping it, or weakening it to true.
POLICY_MUTATIONS = {"dropped": "drop policy {policy} on memsub.{table}",
                    "weakened": "alter policy {policy} on memsub.{table} using (true)"}


@pytest.mark.parametrize("mutation", list(POLICY_MUTATIONS.values()), ids=list(POLICY_MUTATIONS))
@pytest.mark.parametrize(("table", "policy"), PACKET_POLICIES, ids=[f"{t}.{p}" for t, p in PACKET_POLICIES])
def test_dropping_or_weakening_any_single_policy_is_detected(db, table, policy, mutation):
    packets = populate(db)
    with db.connect() as conn:
        conn.execute(mutation.format(policy=policy, table=table))
    assert mismatches(db, packets) != []


def test_tenant_cannot_read_or_reference_another_tenants_packets(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        secret = write(conn, {"packet_type": "event", "payload": "A only", "thread_id": str(uuid.uuid4())})
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert conn.execute("select * from memsub.get_packet(%s)", [secret["packet_id"]]).fetchall() == []
        assert conn.execute("select * from memsub.get_thread(%s)", [secret["thread_id"]]).fetchall() == []
        assert conn.execute("select count(*) from memsub.packet_store").fetchone() == (0,)
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            write(conn, {"packet_type": "insight", "payload": 1,
                         "lineage": {"parent_ids": [str(secret["packet_id"])]}})
        conn.rollback()
        # A lineage walk from it is refused as one from a packet that does not exist, in the same words.
        unknown = uuid.uuid4()
        messages = []
        for packet_id in (secret["packet_id"], unknown):
            set_context(conn, TENANT_B)
            error = expect_error(conn, "P0002", "packet_id", "select * from memsub.get_lineage(%s, 'descendants')",
                                 [packet_id])
            messages.append(str(error.diag.message_primary).replace(str(packet_id), "ID"))
        assert messages[0] == messages[1]


def test_context_roles_need_membership(db):
    with db.connect("app") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="memsub_platform_admin"):
            set_context(conn, None, roles=["platform_admin"])
    with db.connect("app") as conn:
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="unknown role"):
            set_context(conn, TENANT_A, roles=["superuser"])
    with db.connect("app") as conn:
        with pytest.raises(psycopg.errors.NullValueNotAllowed):
            set_context(conn, None)


def test_context_is_transaction_local(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        write(conn, {"packet_type": "event", "payload": 1})
        conn.commit()
        assert conn.execute("select memsub.current_tenant_id()").fetchone() == (None,)
        assert conn.execute("select count(*) from memsub.packet_store").fetchone() == (0,)


def test_a_role_without_memsub_grants_gets_nothing(db):
    with db.connect("nobody") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select count(*) from memsub.packet_store")
    with db.connect("nobody") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select memsub.write_packet('{}')")


def test_every_tenant_table_has_forced_row_security(db):
    with db.connect() as conn:
        rows = conn.execute("""
            select c.relname, c.relrowsecurity, c.relforcerowsecurity,
                   exists (select from pg_policies p where p.schemaname = 'memsub' and p.tablename = c.relname
                                                       and p.policyname = 'tenant_isolation'),
                   c.relispartition,
                   exists (select from pg_policies p where p.schemaname = 'memsub' and p.tablename = c.relname)
              from pg_class c
             where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p')
               and exists (select from pg_attribute a
                            where a.attrelid = c.oid and a.attname = 'tenant_id')""").fetchall()
    assert rows, "no tenant tables found"
    tables = [r for r in rows if not r[4]]
    assert [r[0] for r in tables if r[1:4] != (True, True, True)] == []
    # A partition is read through its table, whose policies apply there; read directly it forces row-level
    # security with no policy of its own, so it shows nobody any row.
    partitions = [r for r in rows if r[4]]
    assert sorted(r[0] for r in partitions) == [f"memory_embeddings_p{n:02d}" for n in range(16)]
    assert [r[0] for r in partitions if (r[1], r[2], r[5]) != (True, True, False)] == []


def test_a_partition_of_memory_embeddings_shows_its_rows_only_through_the_table(db):
    """memory_embeddings is partitioned by tenant. The client roles have no privilege on a partition, and even
    its owner (whose SECURITY DEFINER functions write the table) reads nothing from one directly, while through
    the table the policies apply as before."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        write(conn, {"packet_type": "event", "payload": {"n": 1},
                     "memory": {"embeddings": [{"embedding_type": "content", "vector": [0.5] * 1536}]}})
        conn.commit()
        set_context(conn, TENANT_A)
        assert conn.execute("select count(*) from memsub.memory_embeddings").fetchone() == (1,)
        partition = conn.execute("select memsub._embedding_partition(%s)", [TENANT_A]).fetchone()
        conn.commit()
    assert partition is not None
    name = f"memsub.memory_embeddings_p{partition[0]:02d}"
    for login in ("app", "analyst", "tenant_admin", "platform_admin"):
        with db.connect(login) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"select count(*) from {name}")  # noqa: S608 - a fixed partition name
    with db.connect() as conn:
        assert conn.execute(f"select count(*) from {name}").fetchone() == (1,)  # noqa: S608 - the superuser
        conn.execute("set role memsub_owner")
        assert conn.execute(f"select count(*) from {name}").fetchone() == (0,)  # noqa: S608
        conn.execute("reset role")


def test_security_definer_functions_pin_search_path_and_belong_to_a_nologin_role(db):
    with db.connect() as conn:
        rows = conn.execute("""
            select p.oid::regprocedure::text, p.proconfig, r.rolcanlogin
              from pg_proc p join pg_roles r on r.oid = p.proowner
             where p.pronamespace = 'memsub'::regnamespace and p.prosecdef""").fetchall()
    assert rows
    for name, config, can_login in rows:
        assert any(c.startswith("search_path=") for c in (config or [])), name
        assert can_login is False, name


def test_every_function_pins_search_path(db):
    # PostgreSQL forbids a SET clause on a procedure that commits; such procedures must be SECURITY INVOKER
    # (they cannot raise anyone's privileges) and schema-qualify every name instead.
    with db.connect() as conn:
        rows = conn.execute(r"""
            select p.oid::regprocedure::text, p.prokind, p.prosecdef, p.prosrc ~* '\mcommit\M'
              from pg_proc p
             where p.pronamespace = 'memsub'::regnamespace
               and not exists (select from unnest(p.proconfig) c where c like 'search_path=%')""").fetchall()
    assert [r for r in rows if r[1:] != ("p", False, True)] == []


def test_nothing_is_granted_to_public(db):
    with db.connect() as conn:
        rows = conn.execute("""
            select 'schema memsub' where has_schema_privilege('public', 'memsub', 'usage')
            union all
            select c.oid::regclass::text from pg_class c, aclexplode(c.relacl) a
             where c.relnamespace = 'memsub'::regnamespace and a.grantee = 0
            union all
            select p.oid::regprocedure::text
              from pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
             where p.pronamespace = 'memsub'::regnamespace and a.grantee = 0
            union all
            select t.oid::regtype::text from pg_type t, aclexplode(coalesce(t.typacl, acldefault('T', t.typowner))) a
             where t.typnamespace = 'memsub'::regnamespace and a.grantee = 0 and t.typtype in ('c', 'e', 'd')
               and (t.typrelid = 0 or (select relkind from pg_class where oid = t.typrelid) = 'c')""").fetchall()
    assert rows == []


def test_memsub_roles_cannot_log_in_or_bypass_row_security(db):
    with db.connect() as conn:
        rows = conn.execute("select rolname, rolcanlogin, rolbypassrls, rolsuper from pg_roles "
                            "where rolname like 'memsub\\_%' and rolname not like 'memsub\\_test\\_%'").fetchall()
    # The two owner roles bypass row-level security by design (materialized views; retrieval functions that
    # apply the tenant predicates themselves); like every memsub role they cannot log in.
    bypassing = {"memsub_view_owner", "memsub_retrieval_owner"}
    assert {r[0] for r in rows} == {"memsub_owner", "memsub_app", "memsub_tenant_admin", "memsub_platform_admin",
                                    "memsub_analyst", "memsub_expiry_owner"} | bypassing
    assert all(r[1] is False and r[3] is False for r in rows)  # none can log in, none is a superuser
    assert {r[0] for r in rows if r[2]} == bypassing
    # No role is a member of a bypassing owner or of the expiry owner: they own objects, nobody acts as them.
    with db.connect() as conn:
        members = conn.execute("select count(*) from pg_auth_members m join pg_roles r on r.oid = m.roleid "
                               "where r.rolname = any(%s)", [sorted(bypassing | {"memsub_expiry_owner"})]).fetchone()
    assert members == (0,)


def test_admins_keep_their_visibility_inside_write_functions(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER_1)
        private = write(conn, {"packet_type": "event", "payload": "user 1 only", "scope": "l-private"})
        conn.commit()
    envelope = {"packet_type": "insight", "payload": "derived", "lineage": {"parent_ids": [str(private["packet_id"])]}}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER_2)
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            write(conn, envelope)
    with db.connect("tenant_admin") as conn:
        set_context(conn, TENANT_A, user=USER_2)  # a member of memsub_tenant_admin that does not ask for it
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            write(conn, envelope)
    with db.connect("tenant_admin") as conn:
        set_context(conn, TENANT_A, user=USER_2, roles=["tenant_admin"])
        assert write(conn, envelope)["generation"] == 1
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER_2)
        conn.execute("select set_config('memsub.roles', 'tenant_admin', true)")  # forged: the seal is broken
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            write(conn, {**envelope, "payload": "forged"})


# Hypothesis-generated worlds: random tenants, orgs, users, sessions and scopes, random viewers.
_scopes = st.sampled_from(get_args(Scope))
_packets = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([None, 0, 1]), _scopes, st.integers(0, 2),
                              st.integers(0, 2)), min_size=1, max_size=10)
_viewers = st.lists(st.tuples(st.sampled_from(["app", "analyst", "tenant_admin", "platform_admin"]),
                              st.integers(0, 2), st.sampled_from([None, 0, 1]), st.sampled_from([None, 0, 1, 2]),
                              st.sampled_from([None, 0, 1, 2])), min_size=1, max_size=4)


@settings(max_examples=25 * soak_factor(), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(packets=_packets, viewers=_viewers)
def test_generated_worlds_match_the_policy_model(db, packets, viewers):
    tenants = [uuid.uuid4() for _ in range(3)]
    orgs = [uuid.uuid4() for _ in range(2)]
    users = [uuid.uuid4() for _ in range(3)]
    sessions = [f"s-{uuid.uuid4().hex[:6]}" for _ in range(3)]
    written: list[Packet] = []
    with db.connect("app") as conn:
        for number, (tenant, org, scope, user, session) in enumerate(packets):
            set_context(conn, tenants[tenant], orgs[org] if org is not None else None, users[user],
                        session=sessions[session])
            label = f"p{number}"
            result = write(conn, {"packet_type": "event", "payload": label, "scope": scope})
            conn.commit()
            written.append(Packet(label, tenants[tenant], orgs[org] if org is not None else None, scope,
                                  users[user], sessions[session], uuid.UUID(int=0), result["packet_id"]))
    for role, tenant, org, user, session in viewers:
        roles = (role,) if role in ("tenant_admin", "platform_admin") else ()
        viewer = Viewer(role, role, tenants[tenant], orgs[org] if org is not None else None,
                        users[user] if user is not None else None,
                        sessions[session] if session is not None else None, roles)
        with db.connect(viewer.role) as conn:
            set_context(conn, viewer.tenant, viewer.org, viewer.user, viewer.roles, viewer.session)
            seen = {r[0] for r in conn.execute("select envelope ->> 'payload' from memsub.packet_store "
                                               "where tenant_id = any(%s)", [tenants])}
        assert seen == {p.label for p in written if viewer.sees_packet(p)}, viewer
