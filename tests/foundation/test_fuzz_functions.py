"""Property-based fuzzing of every stored function the application role or a platform admin may call.

Arguments are generated from each function's declared types (text, jsonb, uuid, numbers, timestamps,
intervals, vectors, arrays, NULLs), including the values memsub refuses: zero, tiny and huge vectors, vectors of
the wrong dimension or with NaN, NaN and infinite numbers, infinite timestamps and intervals, JSON nested deeper
than the server's stack and JSON holding \u0000. Each call runs as that role inside a tenant context (admins
with both admin context roles). It either succeeds or fails with a SQLSTATE that docs/errors.md documents, never
an internal error nor a raw constraint or row-level security message, and a failed call leaves every memsub
table unchanged.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from psycopg import sql
from psycopg.types.string import TextLoader

from helpers import TENANT_A, documented_sqlstates, set_context, soak_factor, table_state

USER = uuid.UUID("00000000-0000-0000-0001-0000000000f0")
# PostgreSQL's own messages for a constraint or policy: a function must have refused the input before, naming
# the field.
RAW_MESSAGE = re.compile(r"violates (row-level security policy|check constraint|not-null constraint|foreign key "
                         r"constraint|unique constraint|exclusion constraint)|duplicate key value")


def callable_functions(dsn: str, role: str) -> list[tuple[str, list[str]]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("""
            select p.proname, coalesce(array(select format_type(t, null) from unnest(p.proargtypes) as t), '{}'),
                   p.provariadic <> 0
              from pg_proc p
             where p.pronamespace = 'memsub'::regnamespace and p.prokind = 'f'
               and has_function_privilege(%s, p.oid, 'execute')
               and p.proname not in ('set_context', 'set_actor')
             order by 1, 2""", [role]).fetchall()
    # A variadic function takes its last argument as an array after the word VARIADIC.
    return [(str(name), [*types[:-1], "variadic " + types[-1]] if variadic else list(types))
            for name, types, variadic in rows]


_text = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=30)
_json_scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False,
                                                                                      allow_infinity=False) | _text
_json = st.recursive(_json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
                     max_leaves=8)
_timestamps = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))
_infinities = st.sampled_from(["infinity", "-infinity"])
_bad_floats = st.sampled_from([float("nan"), float("inf"), float("-inf"), 0.0, 1e300, -1e300, 5e-324])


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


# JSON the server refuses or must survive: nested past its stack (54001), or holding \u0000 (22P05).
_hostile_json = (st.sampled_from([50, 2000, 30000]).map(_nested)
                 | _text.map(lambda t: json.dumps({"text": t + "\u0000"})))


def _vectors(dimension: int) -> st.SearchStrategy[str]:
    """Vector texts: usable ones, the wrong dimension, and the degenerate ones memsub refuses (zero, squares
    under- or overflowing single precision) or pgvector refuses (NaN, infinity)."""
    usable = st.sampled_from([dimension, 3]).flatmap(
        lambda n: st.lists(st.floats(-1, 1, allow_nan=False), min_size=n, max_size=n))
    degenerate = st.sampled_from([[0.0] * dimension, [1e-30] * dimension, [1e30] + [0.0] * (dimension - 1),
                                  [float("nan")] + [1.0] * (dimension - 1), [float("inf")] * dimension])
    return (usable | degenerate).map(lambda values: "[" + ",".join(repr(v) for v in values).replace(
        "nan", "NaN").replace("inf", "Infinity") + "]")


SCALAR_TYPES = {"text", "jsonb", "uuid", "integer", "bigint", "smallint", "double precision", "real", "numeric",
                "boolean", "timestamp with time zone", "timestamp without time zone", "interval", "vector"}


def value_for(type_name: str, dimension: int) -> st.SearchStrategy[Any]:
    base: st.SearchStrategy[Any]
    if type_name == "double precision[]":
        # embeddings as arrays: the installation's dimension or not, with NaN, infinities, zeros
        return st.none() | st.sampled_from([dimension, 2]).flatmap(lambda n: st.lists(
            st.floats(-1, 1) | _bad_floats, min_size=n, max_size=n)) | st.just([0.0] * dimension)
    if type_name.endswith("[]"):
        element = value_for(type_name[:-2], dimension)
        return st.none() | st.lists(element.filter(lambda v: v is not None), max_size=3) \
            if type_name[:-2] in SCALAR_TYPES else st.none()
    if type_name == "text":
        base = _text | st.sampled_from(["", "shared", "content", "user:x:y", "l-private", "lesson", "high"])
    elif type_name == "jsonb":
        base = _json.map(json.dumps) | _hostile_json
    elif type_name == "uuid":
        base = st.uuids()
    elif type_name in ("integer", "bigint", "smallint"):
        base = st.integers(-10, 2000)
    elif type_name in ("double precision", "real", "numeric"):
        base = st.floats(-2, 2, allow_nan=False) | _bad_floats
    elif type_name == "boolean":
        base = st.booleans()
    elif type_name in ("timestamp with time zone", "timestamp without time zone"):
        base = _timestamps | _infinities
    elif type_name == "interval":
        base = st.integers(-10, 10**6).map(lambda s: timedelta(seconds=s)) | _infinities
    elif type_name == "vector":
        base = _vectors(dimension)
    else:
        base = st.nothing()
    return st.none() | base


@pytest.fixture(scope="module")
def fuzz_world(server, template_db):
    name = f"memsub_fuzz_{uuid.uuid4().hex[:10]}"
    with server.janitor(name, template=template_db):
        dsn = server.dsn(name)
        with psycopg.connect(dsn) as conn:
            dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        yield dsn, server, name, dimension


_FUNCTIONS: dict[str, list[tuple[str, list[str]]]] = {}
EXAMPLES = int(os.environ.get("MEMSUB_FUZZ_EXAMPLES", str(400 * soak_factor())))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_every_callable_function_fails_only_with_documented_errors(fuzz_world, data):
    superuser_dsn, server, database, dimension = fuzz_world
    role, roles = data.draw(st.sampled_from([("app", ()), ("platform_admin", ("tenant_admin", "platform_admin"))]),
                            label="caller")
    functions = _FUNCTIONS.setdefault(role, callable_functions(superuser_dsn, f"memsub_{role}"))
    app_dsn = server.dsn(database, f"memsub_test_{role}")
    name, types = data.draw(st.sampled_from(functions), label="function")
    arguments = [data.draw(value_for(t.removeprefix("variadic "), dimension), label=t) for t in types]
    call = sql.SQL("select * from {}({})").format(
        sql.Identifier("memsub", name),
        sql.SQL(", ").join(sql.SQL("variadic " if t.startswith("variadic ") else "") + sql.SQL("%s::")
                           + sql.SQL(t.removeprefix("variadic ")) for t in types))  # type: ignore[operator]
    with psycopg.connect(superuser_dsn) as ground, psycopg.connect(app_dsn) as conn:
        before = table_state(ground)
        ground.rollback()
        # results stay text: a deeply nested jsonb result is the server's to hold, not Python's parser's to read
        for json_type in ("json", "jsonb"):
            conn.adapters.register_loader(json_type, TextLoader)
        set_context(conn, TENANT_A, user=USER, roles=roles, session="fuzz")
        try:
            conn.execute("set local statement_timeout = '5s'")
            conn.execute(call, arguments).fetchall()
            conn.commit()
            event("succeeded")
        except psycopg.Error as error:
            conn.rollback()
            event(f"failed with {error.sqlstate}")
            assert error.sqlstate in documented_sqlstates(), f"{name}({types}) -> {error.sqlstate}: {error}"
            assert not RAW_MESSAGE.search(str(error)), f"{name}({types}) -> raw message: {error}"
            assert table_state(ground) == before, f"{name} failed but changed a table"
