"""`memsub verify` catches tampering with the installed schema, and `memsub repair` restores it.

Each case tampers with one class of object the way an attacker holding a superuser connection would; `verify`
then runs as the installing login and must exit 1 naming the object. Repair must restore every case, after which
`verify` passes. The reference is the catalog snapshot shipped in the package; a test keeps it current.
"""

from __future__ import annotations

import json
import re

import psycopg
import pytest
from click.testing import CliRunner, Result

from memsub.cli import main as cli

from helpers import TENANT_A, TENANT_B, set_context


def _partial_index_redefined(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    row = conn.execute("select indexdef from pg_indexes where schemaname = 'memsub' "
                       "and indexname = 'idx_reasoning_traces_packet'").fetchone()
    assert row is not None and " WHERE " in str(row[0])
    conn.execute("drop index memsub.idx_reasoning_traces_packet")
    conn.execute(str(row[0]).split(" WHERE ")[0].encode() + b" WHERE (packet_id IS NULL)")


def _vector_index_redefined(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """An HNSW index rebuilt with tuned build parameters (which verify accepts) and another distance (which it
    must not)."""
    conn.execute("drop index memsub.idx_embeddings_vector_entity")
    conn.execute("create index idx_embeddings_vector_entity on memsub.memory_embeddings using hnsw "
                 "(vector vector_l2_ops) with (m = 24, ef_construction = 128) where embedding_type = 'entity'")


def _body_replaced(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    row = conn.execute("select pg_get_functiondef(p.oid), p.prosrc, l.lanname from pg_proc p "
                       "join pg_language l on l.oid = p.prolang "
                       "where p.oid = 'memsub.is_platform_admin()'::regprocedure").fetchone()
    assert row is not None
    definition, body, language = (str(value) for value in row)
    replacement = "select true" if language == "sql" else "begin return true; end"
    conn.execute(definition.replace(body, replacement).encode())


# (case, statements as the attacker, object verify must name, attribute it must name or None)
TAMPERING: list[tuple[str, list[str] | object, str, str | None]] = [
    ("weakened policy", ["alter policy tenant_isolation on memsub.packet_store using (true)"],
     "policy tenant_isolation on memsub.packet_store", "using"),
    ("backdoor policy", ["create policy backdoor on memsub.sessions using (true)"],
     "policy backdoor on memsub.sessions", None),
    ("row level security disabled", ["alter table memsub.memory_entries disable row level security"],
     "table memsub.memory_entries", "row level security"),
    ("row level security not forced", ["alter table memsub.semantic_memory no force row level security"],
     "table memsub.semantic_memory", "forced row level security"),
    ("function body replaced", _body_replaced, "function memsub.is_platform_admin()", "body"),
    ("switched to security definer", ["alter function memsub.current_org_id() security definer"],
     "function memsub.current_org_id()", "security"),
    ("search_path changed",
     ["alter function memsub.write_packet(jsonb, vector[]) set search_path = public, pg_catalog"],
     "function memsub.write_packet(jsonb,vector[])", "configuration"),
    ("volatility changed", ["alter function memsub.current_org_id() volatile"],
     "function memsub.current_org_id()", "volatility"),
    ("grant revoked", ["revoke execute on function memsub.write_packet(jsonb, vector[]) from memsub_app"],
     "function memsub.write_packet(jsonb,vector[])", "privileges"),
    ("grant added", ["grant insert, update on memsub.packet_store to memsub_app"],
     "table memsub.packet_store", "privileges"),
    ("column grant added", ["grant update (tenant_id) on memsub.sessions to memsub_analyst"],
     "column memsub.sessions.tenant_id", "privileges"),
    ("function granted to public", ["grant execute on function memsub._fan_out_packet(memsub.packet_fields, uuid, "
                                    "uuid, uuid, double precision, text, vector[]) to public"],
     "function memsub._fan_out_packet(memsub.packet_fields,uuid,uuid,uuid,double precision,text,vector[])",
     "privileges"),
    ("index dropped", ["drop index memsub.idx_packet_thread"], "index memsub.idx_packet_thread", None),
    ("index predicate changed", _partial_index_redefined, "index memsub.idx_reasoning_traces_packet", "definition"),
    ("vector index distance changed", _vector_index_redefined, "index memsub.idx_embeddings_vector_entity",
     "definition"),
    ("constraint dropped", ["alter table memsub.packet_store drop constraint packet_store_scope_known"],
     "constraint packet_store_scope_known on memsub.packet_store", None),
    ("trigger added", ["create function public.spy() returns trigger language plpgsql as "
                       "'begin return new; end'",
                       "create trigger spy before insert on memsub.sessions for each row "
                       "execute function public.spy()"],
     "trigger spy on memsub.sessions", None),
    ("trigger disabled", ["alter table memsub.packet_store disable trigger packet_store_immutable"],
     "trigger packet_store_immutable on memsub.packet_store", "enabled"),
    ("function added", ["create function memsub.backdoor() returns setof memsub.packet_store language sql "
                        "security definer as 'select * from memsub.packet_store'"],
     "function memsub.backdoor()", None),
    ("owner changed", ["alter function memsub.purge_expired(uuid) owner to memsub_app"],
     "function memsub.purge_expired(uuid)", "owner"),
    ("column default changed", ["alter table memsub.packet_store alter column scope set default 'cursor'"],
     "column memsub.packet_store.scope", "default"),
    ("owner role granted", ["grant memsub_owner to memsub_app"], "role memsub_owner", "members"),
    ("expiry owner granted", ["grant memsub_expiry_owner to memsub_app"], "role memsub_expiry_owner", "members"),
    ("membership options changed", ["grant memsub_app to memsub_tenant_admin with inherit false"],
     "role memsub_tenant_admin", "member of"),
    ("role given bypassrls", ["alter role memsub_analyst bypassrls"], "role memsub_analyst", "attributes"),
    ("role setting added", ["alter role memsub_app set row_security = off"], "role memsub_app", "settings"),
    ("not null dropped", ["alter table memsub.packet_store alter column packet_type drop not null"],
     "column memsub.packet_store.packet_type", "not null"),
    ("view redefined", ["create or replace view memsub.tenant_entity_graph as select m.tenant_id, m.source_entity, "
                        "m.relationship_type, m.target_entity, m.total_mentions, m.max_confidence, m.avg_confidence, "
                        "m.last_seen, m.relationship_count from memsub.mv_entity_graph m"],
     "view memsub.tenant_entity_graph", "definition"),
    ("table made unlogged", ["alter table memsub.audit set unlogged"], "table memsub.audit", "persistence"),
    ("default privileges added", ["alter default privileges for role memsub_owner in schema memsub "
                                  "grant select on tables to public"],
     "default privileges of memsub_owner on tables in memsub", None),
    ("schema usage revoked", ["revoke usage on schema memsub from memsub_analyst"], "schema memsub", "privileges"),
    ("constraint added", ["alter table memsub.sessions add constraint stall check (false) not valid"],
     "constraint stall on memsub.sessions", None),
]
CASES = [pytest.param(statements, obj, attribute, id=case) for case, statements, obj, attribute in TAMPERING]


def _tamper(db, statements) -> None:
    with db.connect(autocommit=True) as conn:
        if callable(statements):
            statements(conn)
        else:
            for statement in statements:
                conn.execute(statement)


def _verify(db, *options: str) -> Result:
    """verify as the installing login (the tests install as the superuser), with the default reference: the
    shipped snapshot on the server version it was taken on."""
    return CliRunner().invoke(cli, ["verify", "--dsn", db.dsn(), *options])


@pytest.fixture
def untamper_roles(db):
    """Role memberships are cluster-wide: undo a role tampering that a failing test left behind."""
    yield
    with db.connect(autocommit=True) as conn:
        conn.execute("revoke memsub_owner from memsub_app")
        conn.execute("revoke memsub_expiry_owner from memsub_app")
        conn.execute("alter role memsub_analyst nobypassrls")
        conn.execute("alter role memsub_app reset all")
        conn.execute("grant memsub_app to memsub_tenant_admin with inherit true, set true")


@pytest.mark.parametrize(("statements", "obj", "attribute"), CASES)
def test_verify_names_each_kind_of_tampering(db, untamper_roles, statements, obj, attribute):
    _tamper(db, statements)

    result = _verify(db)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if obj in line]
    assert lines, result.output
    if attribute:
        assert any(f"{obj}: {attribute}:" in line for line in lines), result.output

    as_json = json.loads(_verify(db, "--json").stdout)
    assert as_json["ok"] is False
    assert any(d["object"] == obj and (attribute is None or d["attribute"] == attribute)
               for d in as_json["differences"]), as_json


def test_repair_restores_every_kind_of_tampering_and_verify_then_passes(db, untamper_roles):
    for _, statements, _, _ in TAMPERING:
        _tamper(db, statements)
    named = {obj for _, _, obj, _ in TAMPERING}
    before = _verify(db)
    assert before.exit_code == 1
    assert all(obj in before.output for obj in named), before.output

    result = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output
    restored = [line for line in result.output.splitlines() if line.startswith("restored: ")]
    assert all(any(obj in line for line in restored) for obj in named), result.output

    after = _verify(db)
    assert after.exit_code == 0, after.output
    with db.connect() as conn:  # the backdoor really is gone, the policy really is back
        assert conn.execute("select count(*) from pg_policies where policyname = 'backdoor'").fetchone() == (0,)
        assert conn.execute("select has_function_privilege('memsub_app', 'memsub.write_packet(jsonb, vector[])', "
                            "'execute')").fetchone() == (True,)


def test_repair_reports_an_unexpected_table_and_keeps_its_data(db):
    with db.connect(autocommit=True) as conn:
        conn.execute("create table memsub.loot (secret text)")
        conn.execute("insert into memsub.loot values ('kept')")
    result = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert result.exit_code == 1
    assert "still different: unexpected: table memsub.loot" in result.output
    with db.connect() as conn:
        assert conn.execute("select secret from memsub.loot").fetchall() == [("kept",)]


def test_the_shipped_snapshot_is_current(db):
    """The snapshot in the package equals a fresh installation's catalog. When this fails after a change to
    sql/ or migrations/, regenerate it with `make catalog-snapshot` and review the diff."""
    from memsub import catalog_check

    with db.connect(autocommit=True) as conn:
        found = catalog_check.fingerprint(conn)
    differences = catalog_check.compare(catalog_check.load_snapshot().objects, found)
    assert not differences, "stale catalog snapshot (make catalog-snapshot):\n" + "\n".join(
        d.describe() for d in differences[:40])


def test_another_vector_dimension_verifies_against_the_same_snapshot(db384):
    result = _verify(db384)
    assert result.exit_code == 0, result.output


def test_a_read_only_login_can_verify(db):
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn("analyst")])
    assert result.exit_code == 0, result.output
    _tamper(db, ["alter policy tenant_isolation on memsub.packet_store using (true)"])
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn("analyst")])
    assert result.exit_code == 1
    assert "policy tenant_isolation on memsub.packet_store: using:" in result.output


def test_scratch_reference_is_built_from_the_shipped_sql_and_dropped(db):
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn(), "--reference", "scratch"])
    assert result.exit_code == 0, result.output
    assert "scratch database" in result.output
    _tamper(db, ["create policy backdoor on memsub.sessions using (true)"])
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn(), "--reference", "scratch", "--json"])
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["reference"] == "scratch"
    assert [d["object"] for d in document["differences"]] == ["policy backdoor on memsub.sessions"]
    with db.connect() as conn:
        assert conn.execute("select count(*) from pg_database where datname like 'memsub_verify_%'"
                            ).fetchone() == (0,)


def test_a_clean_installation_can_be_the_reference(db, empty_db):
    from memsub.migrator import Migrator

    Migrator(empty_db.dsn()).migrate()
    _tamper(db, ["alter table memsub.sessions disable row level security"])
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn(), "--reference-dsn", empty_db.dsn()])
    assert result.exit_code == 1
    assert re.search(r"changed: table memsub.sessions: row level security: expected enabled, found disabled",
                     result.output), result.output


def test_repair_refuses_a_database_with_pending_migrations(empty_db):
    from memsub.migrator import Migrator

    Migrator(empty_db.dsn()).migrate("1.0.0")
    result = CliRunner().invoke(cli, ["repair", "--dsn", empty_db.dsn()])
    assert result.exit_code == 2
    assert "cannot repair" in result.output and "pending" in result.output
    verify = CliRunner().invoke(cli, ["verify", "--dsn", empty_db.dsn()])
    assert verify.exit_code == 1
    assert "catalog not compared: migrations are pending" in verify.output


# -- tampering that needs an ordinary login to show what it gives away -----------------------------------------


@pytest.fixture
def untamper_admin_grants(db):
    """Undo the membership grants below (cluster-wide) even when a test fails half-way."""
    yield
    with db.connect(autocommit=True) as conn:
        for role, member in (("memsub_owner", "memsub_test_app"), ("memsub_platform_admin", "memsub_test_analyst")):
            for grantor in ("memsub_app", "memsub_analyst", "current_user"):
                conn.execute(f"revoke {role} from {member} granted by {grantor} cascade")
        conn.execute("revoke memsub_owner from memsub_app cascade")
        conn.execute("revoke memsub_platform_admin from memsub_analyst cascade")


@pytest.mark.parametrize(("role", "grantee", "login", "member"), [
    ("memsub_owner", "memsub_app", "app", "memsub_test_app"),
    ("memsub_platform_admin", "memsub_analyst", "analyst", "memsub_test_analyst"),
], ids=["owner to app", "platform admin to analyst"])
def test_an_admin_option_membership_is_reported_and_repair_revokes_it(db, untamper_admin_grants, role, grantee,
                                                                     login, member):
    """A membership WITH ADMIN and neither INHERIT nor SET confers no rights of the role itself, but lets every
    login of the grantee grant the role to itself."""
    _tamper(db, [f"grant {role} to {grantee} with admin true, inherit false, set false"])
    with db.connect(login, autocommit=True) as conn:  # the escalation it allows, as an ordinary login
        conn.execute(f"grant {role} to {member}")
        assert conn.execute("select pg_has_role(%s, 'member')", [role]).fetchone() == (True,)
    with db.connect(autocommit=True) as conn:  # keep only the planted grant
        conn.execute(f"revoke {role} from {member} granted by {grantee}")

    result = _verify(db)
    assert result.exit_code == 1, result.output
    assert f"changed: role {grantee}: member of: expected" in result.output, result.output
    assert f"{role}:admin" in result.output, result.output

    repaired = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert repaired.exit_code == 0, repaired.output
    with db.connect(autocommit=True) as conn:
        assert conn.execute("select count(*) from pg_auth_members where roleid = %s::regrole "
                            "and member = %s::regrole", [role, grantee]).fetchone() == (0,)
    assert _verify(db).exit_code == 0


def test_a_memsub_table_made_the_child_of_a_table_outside_memsub_is_reported_and_repair_detaches_it(db):
    """Reading a parent returns its children's rows under the parent's privileges and policies, not the
    child's: every tenant's facts become readable by any login."""
    with db.connect("app") as conn:
        for tenant in (TENANT_A, TENANT_B):
            conn.execute("select memsub.set_context(%s)", [tenant])
            conn.execute("select memsub.assert_fact('secret of ' || %s::text, 'is', '\"x\"', 0.9)", [tenant])
            conn.commit()
    _tamper(db, ["create table public.peek (tenant_id uuid, subject text)",
                 "alter table memsub.knowledge_facts inherit public.peek",
                 "grant select on public.peek to public"])
    with db.connect("nobody") as conn:  # a login holding no memsub role
        assert conn.execute("select count(distinct tenant_id) from public.peek").fetchone() == (2,)

    result = _verify(db)
    assert result.exit_code == 1, result.output
    assert "changed: table memsub.knowledge_facts: parents: expected (none), found public.peek" in result.output

    repaired = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert repaired.exit_code == 0, repaired.output
    with db.connect("nobody") as conn:
        assert conn.execute("select count(*) from public.peek").fetchone() == (0,)
    assert _verify(db).exit_code == 0


def test_a_detached_partition_is_reported_and_repair_attaches_it_again(db):
    with db.connect(autocommit=True) as conn:
        bound = conn.execute("select pg_get_expr(relpartbound, oid) from pg_class "
                             "where oid = 'memsub.memory_embeddings_p03'::regclass").fetchone()[0]
    _tamper(db, ["alter table memsub.memory_embeddings detach partition memsub.memory_embeddings_p03"])
    result = _verify(db)
    assert result.exit_code == 1, result.output
    assert "table memsub.memory_embeddings_p03: parents: expected memsub.memory_embeddings " + bound \
        in result.output, result.output

    repaired = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert repaired.exit_code == 0, repaired.output
    assert _verify(db).exit_code == 0


def test_disabled_foreign_key_enforcement_is_reported_and_repair_enables_it(db):
    """`disable trigger all` also disables the internal triggers that enforce the table's foreign keys."""
    _tamper(db, ["alter table memsub.reasoning_traces disable trigger all"])
    with db.connect(autocommit=True) as conn:  # the foreign key no longer holds
        conn.execute("insert into memsub.reasoning_traces (tenant_id, packet_id) values (%s, %s)",
                     [TENANT_A, TENANT_B])
        conn.execute("delete from memsub.reasoning_traces where tenant_id = %s", [TENANT_A])

    result = _verify(db)
    assert result.exit_code == 1, result.output
    assert re.search(r"changed: constraint \S+ on memsub\.reasoning_traces: internal triggers: expected "
                     r"enabled on .+, found disabled on memsub\.reasoning_traces", result.output), result.output

    repaired = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert repaired.exit_code == 0, repaired.output
    assert _verify(db).exit_code == 0
    with db.connect(autocommit=True) as conn, pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute("insert into memsub.reasoning_traces (tenant_id, packet_id) values (%s, %s)",
                     [TENANT_A, TENANT_B])


# -- what re-applying sql/ cannot do on its own ------------------------------------------------------------------


def _redefine(conn: psycopg.Connection[tuple[object, ...]], signature: str, old: str, new: str,
              drop: bool = False) -> None:
    row = conn.execute("select pg_get_functiondef(%s::regprocedure)", [signature]).fetchone()
    assert row is not None and old in str(row[0])
    if drop:
        conn.execute(f"drop function {signature}")
    conn.execute(str(row[0]).replace(old, new).encode())


def test_repair_restores_a_function_given_a_parameter_default(db):
    """CREATE OR REPLACE cannot remove a parameter default, so sql/ alone cannot restore the function."""
    with db.connect(autocommit=True) as conn:
        _redefine(conn, "memsub._check_unit(double precision, text)", "p_field text)", "p_field text DEFAULT 'x')")
    _tamper(db, ["create policy backdoor on memsub.sessions using (true)"])
    before = _verify(db)
    assert before.exit_code == 1 and "function memsub._check_unit(double precision,text): arguments:" \
        in before.output, before.output

    result = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output
    assert _verify(db).exit_code == 0


def test_repair_restores_a_function_whose_parameter_was_renamed(db):
    """CREATE OR REPLACE cannot rename a parameter either."""
    with db.connect(autocommit=True) as conn:
        _redefine(conn, "memsub.write_packet(jsonb, vector[])", "p_envelope", "p_env", drop=True)
        conn.execute("grant execute on function memsub.write_packet(jsonb, vector[]) to memsub_app")
    assert _verify(db).exit_code == 1

    result = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output
    assert _verify(db).exit_code == 0
    with db.connect("app") as conn:  # the re-created function is the app's to call again
        assert conn.execute("select has_function_privilege('memsub.write_packet(jsonb, vector[])', 'execute')"
                            ).fetchone() == (True,)


def test_repair_recreates_a_dropped_materialized_view_and_what_depends_on_it(db):
    """A migration created the view, so re-applying sql/ cannot (and its tenant_* view, which sql/ creates over
    it, fails without it): repair re-creates it from the reference, owned and populated as before."""
    _tamper(db, ["drop materialized view memsub.mv_entity_graph cascade",
                 "create policy backdoor on memsub.sessions using (true)"])
    result = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output
    assert "restored: recreated materialized view memsub.mv_entity_graph" in result.output
    assert _verify(db).exit_code == 0
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        assert conn.execute("select count(*) from memsub.tenant_entity_graph").fetchone() == (0,)


def test_repair_that_cannot_restore_an_object_restores_the_rest_and_names_it_in_one_line(db):
    """A re-runnable file that fails is reported in one line; the other files are still applied, and what
    the run-once migrations created is still restored."""
    _tamper(db, ["drop function memsub._check_unit(double precision, text)",
                 "create function memsub._check_unit(p_value double precision, p_field text) returns integer "
                 "language sql as 'select 1'",
                 # a table is never dropped by repair, so the function its default calls cannot be either
                 "create table memsub.loot (one integer default memsub._check_unit(1, 'x'))",
                 "create policy backdoor on memsub.sessions using (true)",
                 "alter table memsub.sessions no force row level security"])
    result = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert result.exit_code == 1, result.output
    failures = [line for line in result.stdout.splitlines() if line.startswith("failed: ")]
    assert failures and all("\n" not in line for line in failures), result.output
    assert any("memsub._check_unit" in line for line in failures), result.output
    errors = [line for line in result.stderr.splitlines() if not line.startswith("memsub: server ")]
    assert len(errors) == 1, result.stderr
    assert "still different: changed: function memsub._check_unit(double precision,text): result:" \
        in result.stdout, result.output
    with db.connect() as conn:
        assert conn.execute("select count(*) from pg_policies where policyname = 'backdoor'").fetchone() == (0,)
        assert conn.execute("select relforcerowsecurity from pg_class where oid = 'memsub.sessions'::regclass"
                            ).fetchone() == (True,)


def test_repair_restores_the_rest_of_a_file_one_of_whose_statements_cannot_be_applied(db):
    """One function of sql/020_argument_checks.sql cannot be restored (a table default holds its tampered
    result type); another function of the same file had its body replaced. The file's other statements are
    still applied, one at a time: the second function is restored, and only the first is named."""
    _tamper(db, ["drop function memsub._check_unit(double precision, text)",
                 "create function memsub._check_unit(p_value double precision, p_field text) returns integer "
                 "language sql as 'select 1'",
                 "create table memsub.loot (one integer default memsub._check_unit(1, 'x'))",
                 "create or replace function memsub.normalize_text(p_value text) returns text "
                 "language sql immutable as 'select ''tampered'''"])
    result = CliRunner().invoke(cli, ["repair", "--dsn", db.dsn()])
    assert result.exit_code == 1, result.output
    failures = [line for line in result.stdout.splitlines() if line.startswith("failed: ")]
    assert failures and all("memsub._check_unit" in line for line in failures), result.output
    assert "normalize_text" not in result.stdout.split("still different:", 1)[-1], result.output
    with db.connect() as conn:
        assert conn.execute("select memsub.normalize_text('  A  b ')").fetchone() != ("tampered",)
        history = conn.execute("select count(*) from memsub.schema_repeatable_history "
                               "where file_name = '020_argument_checks.sql'").fetchone()
    after = _verify(db)
    assert "normalize_text" not in after.output, after.output
    assert "function memsub._check_unit(double precision,text)" in after.output, after.output
    assert history == (1,)
