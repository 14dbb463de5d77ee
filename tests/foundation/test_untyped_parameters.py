"""Every function a client role may execute can be called by a driver that sends untyped parameters.

node-postgres, JDBC with ``stringtype=unspecified`` and libpq's ``PQexecParams`` with no parameter types send every
argument as text of type ``unknown`` (OID 0), so the server picks the function from its name and argument count
alone; asyncpg, pgx and JDBC prepare the statement and take the parameter types the server infers from its
Describe, and read every result in binary. Each function is called here the way such a driver calls it, at the
libpq level, as an ordinary login of a role that may execute it, in a context set the same way: positionally with
every argument, positionally with only the arguments that have no default, by name (``p_x => $1``, as in psql),
and prepared, its parameters described, with binary results. The server must resolve every call (no 42725
ambiguous function, no 42883 undefined function, no 42P18 undetermined type) and send every result in binary; a
call may still fail, but only with an error docs/errors.md documents.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.pq import DiagnosticField, ExecStatus
from psycopg.pq.abc import PGconn, PGresult

from helpers import TENANT_A, documented_sqlstates

USER = uuid.UUID("00000000-0000-0000-0001-0000000000f1")
# The client roles in the order a function is called by the first one that may execute it, with the context
# roles such a login asks for.
CALLERS = (("app", ""), ("analyst", ""), ("tenant_admin", "tenant_admin"),
           ("platform_admin", "tenant_admin,platform_admin"))
# What a driver gets when the server cannot pick the function or type a parameter: never acceptable here.
Send = Callable[[PGconn], PGresult]
RESOLUTION_ERRORS = {"42725", "42883", "42P18", "42804", "42846", "42P08", "08P01"}


@dataclass(frozen=True)
class Routine:
    name: str
    kind: str                    # 'f' function, 'p' procedure
    types: tuple[str, ...]       # input argument types, format_type
    names: tuple[str, ...]       # input argument names
    defaults: int                # how many trailing arguments have a default
    caller: str


def sample(type_name: str, dimension: int) -> str:
    """A text literal of the type, as an untyped driver sends it."""
    vector = "[" + ",".join(["1"] + ["0"] * (dimension - 1)) + "]"
    samples = {
        "text": "untyped", "name": "memsub_test_app", "uuid": str(uuid.uuid4()), "jsonb": "{}", "json": "{}",
        "integer": "1", "bigint": "1", "smallint": "1", "double precision": "0.5", "real": "0.5",
        "numeric": "0.5", "boolean": "true", "timestamp with time zone": "2026-01-01T00:00:00Z",
        "interval": "1 hour", "vector": vector, "bytea": "\\x00", "text[]": "{untyped}",
        "uuid[]": "{" + str(uuid.uuid4()) + "}", "integer[]": "{1}", "vector[]": '{"' + vector + '"}',
        "double precision[]": "{" + ",".join(["1"] + ["0"] * (dimension - 1)) + "}", "bytea[]": '{"\\\\x00"}',
    }
    return samples[type_name]


def routines(dsn: str) -> list[Routine]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("""
            select p.proname, p.prokind,
                   array(select format_type(t, null) from unnest(p.proargtypes) as t),
                   case when p.proargnames is null then '{}' else
                        array(select n from unnest(p.proargnames, coalesce(p.proargmodes,
                                  array_fill('i'::"char", array[cardinality(p.proargnames)]))) as a (n, m)
                               where m in ('i', 'b', 'v')) end,
                   p.pronargdefaults,
                   (select c from unnest(%s::text[]) with ordinality as r (c, o)
                     where has_function_privilege('memsub_' || c, p.oid, 'execute') order by o limit 1)
              from pg_proc p
             where p.pronamespace = 'memsub'::regnamespace and p.proname !~ '^_' and p.prokind in ('f', 'p')
             order by 1""", [[c for c, _ in CALLERS]]).fetchall()
    return [Routine(name, kind, tuple(types), tuple(names), defaults, caller)
            for name, kind, types, names, defaults, caller in rows if caller is not None]


def statement(routine: Routine, *, named: bool = False, count: int | None = None) -> bytes:
    """The call, its arguments placeholders $1, $2, ... (by name: ``p_x => $1``)."""
    count = len(routine.types) if count is None else count
    arguments = sql.SQL(", ").join(
        sql.SQL("{} => {}").format(sql.Identifier(routine.names[i]), sql.SQL(f"${i + 1}")) if named
        else sql.SQL(f"${i + 1}") for i in range(count))
    call = sql.SQL("{}({})").format(sql.Identifier("memsub", routine.name), arguments)
    return sql.SQL("call {}" if routine.kind == "p" else "select * from {}").format(call).as_bytes(None)


@pytest.fixture(scope="module")
def world(server: Any, template_db: str) -> Iterator[tuple[Any, str, list[Routine], int]]:
    name = f"memsub_untyped_{uuid.uuid4().hex[:10]}"
    with server.janitor(name, template=template_db):
        dsn = server.dsn(name)
        with psycopg.connect(dsn) as conn:
            dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        yield server, name, routines(dsn), dimension


def _error(result: PGresult) -> tuple[str, str]:
    code = (result.error_field(DiagnosticField.SQLSTATE) or b"").decode()
    return code, result.error_message.decode()


def _run(conn: psycopg.Connection[Any], routine: Routine, send: Send) -> tuple[str, str] | None:
    """Set the context with untyped parameters and run ``send`` in a transaction of its own, rolled back; a
    procedure, which commits as it goes, runs alone in the transaction its CALL starts. The error's SQLSTATE and
    message, or None."""
    pgconn = conn.pgconn
    if routine.kind == "p":
        result = send(pgconn)
        return None if result.status in (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK) else _error(result)
    roles = dict(CALLERS)[routine.caller]
    pgconn.exec_(b"begin")
    pgconn.exec_(b"set local statement_timeout = '5s'")
    try:
        context = pgconn.exec_params(b"select memsub.set_context($1, $2, $3, $4, $5)",
                                     [str(TENANT_A).encode(), None, str(USER).encode(),
                                      ("{" + roles + "}").encode(), b"untyped"], None)
        assert context.status == ExecStatus.TUPLES_OK, _error(context)
        result = send(pgconn)
        if result.status in (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK):
            return None
        return _error(result)
    finally:
        pgconn.exec_(b"rollback")


def _check(routine: Routine, how: str, outcome: tuple[str, str] | None) -> str | None:
    """What is wrong with a call's outcome, or None."""
    if outcome is None:
        return None
    code, message = outcome
    if code in RESOLUTION_ERRORS or code not in documented_sqlstates():
        return f"memsub.{routine.name} {how}: {code} {message.strip()}"
    return None


def _prepared(query: bytes, values: list[bytes], described: list[tuple[list[int], list[int]]]) -> Send:
    """Parse with no parameter types, Describe (the parameter types the server inferred and the result's
    columns), then execute with binary results, as asyncpg and pgx do."""
    def send(pgconn: PGconn) -> PGresult:
        parsed = pgconn.prepare(b"", query, None)
        if parsed.status != ExecStatus.COMMAND_OK:
            return parsed
        description = pgconn.describe_prepared(b"")
        described.append(([description.param_type(i) for i in range(description.nparams)],
                          [description.ftype(i) for i in range(description.nfields)]))
        return pgconn.exec_prepared(b"", values, None, result_format=1)
    return send


def call_untyped(conn: psycopg.Connection[Any], routine: Routine, dimension: int) -> list[str]:
    """Every way an untyped driver calls the routine; what went wrong, and the types each Describe gave."""
    values = [sample(t, dimension).encode() for t in routine.types]
    required = len(routine.types) - routine.defaults
    problems: list[str] = []
    described: list[tuple[list[int], list[int]]] = []
    for how, send in (
            ("positionally", lambda pg: pg.exec_params(statement(routine), values, None, None, result_format=1)),
            ("without its defaults", lambda pg: pg.exec_params(statement(routine, count=required), values[:required],
                                                               None, None, result_format=1)),
            ("by name", lambda pg: pg.exec_params(statement(routine, named=True), values, None, None,
                                                  result_format=1)),
            ("prepared", _prepared(statement(routine), values, described))):
        problem = _check(routine, how, _run(conn, routine, send))
        if problem:
            problems.append(problem)
    with conn.cursor() as cursor:
        declared = cursor.execute("select array(select format_type(t, null) from unnest(%s::regtype[]) t)",
                                  [[str(oid) for oid in described[0][0]] if described else []]).fetchone()
    if described and tuple(declared[0]) != routine.types:
        problems.append(f"memsub.{routine.name}: Describe gave parameters {declared[0]}, declared {routine.types}")
    RESULT_TYPES.update(oid for _, fields in described for oid in fields)
    return problems


RESULT_TYPES: set[int] = set()


def test_every_client_function_resolves_from_untyped_parameters(world: Any) -> None:
    server, database, found, dimension = world
    assert len(found) > 100 and {r.caller for r in found} == {c for c, _ in CALLERS}
    problems = []
    for routine in found:
        with psycopg.connect(server.dsn(database, f"memsub_test_{routine.caller}"), autocommit=True) as conn:
            problems += call_untyped(conn, routine, dimension)
    assert not problems, "\n".join(problems)


# Every type a result column can hold, with what it is made of (array elements, a domain's base type, a row's
# attributes), has binary input and output: a driver that reads every result in binary can read it.
SENDABLE = """
    with recursive parts (oid) as (
        select unnest(%s::oid[])
         union
        select child from parts p join pg_type t on t.oid = p.oid
         cross join lateral (select t.typelem where t.typelem <> 0
                              union all select t.typbasetype where t.typbasetype <> 0
                              union all select a.atttypid from pg_attribute a
                                         where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped)
                    as c (child))
    select format_type(t.oid, null) from parts join pg_type t using (oid)
     where t.typsend = 0 or t.typreceive = 0 order by 1"""


def test_every_result_column_reads_in_binary(world: Any) -> None:
    server, database, found, dimension = world
    if not RESULT_TYPES:  # run alone: describe every routine first
        for routine in found:
            with psycopg.connect(server.dsn(database, f"memsub_test_{routine.caller}"), autocommit=True) as conn:
                call_untyped(conn, routine, dimension)
    with psycopg.connect(server.dsn(database)) as conn:
        names = {row[0] for row in conn.execute("select format_type(t, null) from unnest(%s::oid[]) t",
                                                [sorted(RESULT_TYPES)])}
        assert {"vector", "jsonb", "timestamp with time zone", "uuid", "text[]"} <= names, names
        assert conn.execute(SENDABLE, [sorted(RESULT_TYPES)]).fetchall() == []


def test_an_overload_an_untyped_driver_cannot_tell_apart_is_found(db: Any) -> None:
    """The check fails where a driver would: a second memsub.checkpoint_restore of one integer leaves an unknown
    argument matching both (42725), for a call by position and by name alike."""
    with db.connect() as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        conn.execute("""
            create function memsub.checkpoint_restore(p_checkpoint_id integer) returns integer
            language sql immutable security invoker set search_path = pg_catalog, memsub as 'select 1';
            grant execute on function memsub.checkpoint_restore(integer) to memsub_app""")
        conn.commit()
    routine = Routine("checkpoint_restore", "f", ("uuid",), ("p_checkpoint_id",), 0, "app")
    with db.connect("app", autocommit=True) as conn:
        problems = call_untyped(conn, routine, dimension)
    assert [problem.split(":")[0] for problem in problems] == [
        f"memsub.checkpoint_restore {how}" for how in ("positionally", "without its defaults", "by name", "prepared")]
    assert all(" 42725 " in problem for problem in problems), problems


def test_the_binary_check_finds_a_type_without_binary_output(db: Any) -> None:
    """aclitem has no binary input or output: found alone, in an array and in a row's column (pg_class.relacl)."""
    with db.connect() as conn:
        for type_name in ("aclitem", "aclitem[]", "pg_class"):
            oid = conn.execute("select %s::regtype::oid", [type_name]).fetchone()[0]
            assert conn.execute(SENDABLE, [[oid]]).fetchall() == [("aclitem",)], type_name


def test_one_routine_per_name(db: Any) -> None:
    """Why untyped calls resolve: no public routine of memsub has an overload, none shares its name with a
    routine of another schema, which a call without the schema (``search_path`` set to memsub) could find
    first (pg_catalog is searched before it) or alongside it, and none takes or returns a pseudo-type."""
    with db.connect() as conn:
        shared = conn.execute("""
            select m.oid::regprocedure::text, o.oid::regprocedure::text
              from pg_proc m join pg_proc o on o.proname = m.proname and o.oid <> m.oid
             where m.pronamespace = 'memsub'::regnamespace and m.proname !~ '^_' order by 1, 2""").fetchall()
        # a pseudo-type (anyelement, anyarray, "any", a bare record) cannot be typed from an unknown argument
        # (42P18), nor a bare record result described without a column definition list
        pseudo = conn.execute("""
            select p.oid::regprocedure::text, t.oid::regtype::text
              from pg_proc p
              join pg_type t on t.oid = any(p.proargtypes::oid[] || p.prorettype)
             where p.pronamespace = 'memsub'::regnamespace and p.proname !~ '^_' and t.typtype = 'p'
               and t.oid <> 'void'::regtype and not (t.oid = 'record'::regtype and p.proallargtypes is not null)
             order by 1""").fetchall()
    assert shared == []
    assert pseudo == []
