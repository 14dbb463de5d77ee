"""Input the server refuses before or while a function runs gets a documented SQLSTATE, never a raw policy or
constraint message; the CLI reports such input in one line on stderr, never with a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.adapt import Dumper
from psycopg.pq import Format

from helpers import TENANT_A, documented_sqlstates, expect_error, set_context, superuser_count

ROOT = Path(__file__).resolve().parents[2]
USER = uuid.UUID("00000000-0000-0000-0001-0000000000b1")
MAIN = "from memsub.cli import main; main(prog_name='memsub')"  # what the memsub console script runs


class RawTextDumper(Dumper):
    """Sends bytes as a text parameter unchanged, so the server sees exactly those bytes."""

    oid = 25  # text
    format = Format.TEXT

    def dump(self, obj: Any) -> bytes:
        return bytes(obj)


@pytest.mark.parametrize(("namespace", "user", "session"), [("session:s1", USER, None), (f"user:{USER}", None, "s1")],
                         ids=["session without a session", "user without a user"])
def test_an_own_namespace_without_its_owner_in_the_context_is_refused_naming_the_namespace(db, namespace, user,
                                                                                          session):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=user, session=session)
        refused = expect_error(conn, "42501", "namespace", "select memsub.memory_write(%s, 'k', '1'::jsonb)",
                               [namespace])
    assert "row-level security" not in str(refused) and namespace in str(refused)
    assert superuser_count(db, "memsub.memory_entries") == 0


@pytest.mark.parametrize("function", ["write_packet", "write_packets"])
def test_invalid_utf8_in_a_json_argument_is_a_documented_error(db, function):
    envelope = b'{"packet_type": "event", "payload": {"text": "\xff\xfe"}}'
    argument = b"[" + envelope + b"]" if function == "write_packets" else envelope
    with db.connect("app") as conn:
        conn.adapters.register_dumper(bytes, RawTextDumper)
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(f"select * from memsub.{function}(%s::text::jsonb)", [argument])  # noqa: S608 - fixed names
    assert caught.value.sqlstate == "22021"
    assert caught.value.sqlstate in documented_sqlstates()
    assert superuser_count(db) == 0


def test_json_nested_deeper_than_the_server_stack_is_a_documented_error(db):
    depth = 100_000
    envelope = '{"packet_type": "event", "payload": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select * from memsub.write_packet(%s::jsonb)", [envelope])
    assert caught.value.sqlstate == "54001"
    assert caught.value.sqlstate in documented_sqlstates()
    assert superuser_count(db) == 0


def test_the_errors_page_lists_the_argument_parsing_states():
    assert {"22000", "22003", "22008", "22015", "2201X", "22021", "22P05", "54001"} <= documented_sqlstates()


# -- the CLI ---------------------------------------------------------------------------------------------------

def _cli(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run([sys.executable, "-c", MAIN, *args], input=stdin, capture_output=True,
                          env=env, timeout=120, check=False)


def _one_clear_line(result: subprocess.CompletedProcess[bytes], *words: str) -> str:
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode != 0, stderr
    assert "Traceback" not in stderr, stderr
    # the error line; commands that connect may first say which server they use ("memsub: server ...")
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("memsub: server ")]
    assert len(lines) == 1, stderr
    for word in words:
        assert re.search(word, lines[0], flags=re.I), lines[0]
    return lines[0]


@pytest.mark.parametrize("shape", ["object", "array", "lines"])
def test_cli_packet_write_with_deeply_nested_json_fails_in_one_line(db, shape):
    depth = 50_000
    deep = '{"packet_type": "event", "payload": ' + "[" * depth + "]" * depth + "}"
    stdin = {"object": deep, "array": "[" + deep + "]", "lines": '{"packet_type": "event", "payload": 1}\n' + deep}
    result = _cli(["packet", "write", "-", "--dsn", db.dsn("app"), "--tenant", str(TENANT_A)],
                  stdin[shape].encode())
    _one_clear_line(result, "nest")
    assert superuser_count(db) == 0


@pytest.mark.parametrize("where", ["stdin", "file"])
def test_cli_packet_write_with_invalid_utf8_fails_in_one_line(db, tmp_path, where):
    data = b'{"packet_type": "event", "payload": "caf\xe9"}\n'
    source = tmp_path / "bad.jsonl"
    source.write_bytes(data)
    argument = "-" if where == "stdin" else str(source)
    result = _cli(["packet", "write", argument, "--dsn", db.dsn("app"), "--tenant", str(TENANT_A)], data)
    _one_clear_line(result, "UTF-8")
    assert superuser_count(db) == 0


def test_cli_graph_traverse_with_an_undecodable_argument_fails_in_one_line(db):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    result = subprocess.run([sys.executable.encode(), b"-c", MAIN.encode(), b"graph", b"traverse", b"caf\xe9",
                             b"--dsn", db.dsn("app").encode(), b"--tenant", str(TENANT_A).encode()],
                            capture_output=True, env=env, timeout=120, check=False)
    # Python reads the byte as an unpaired surrogate; the client names the argument that holds it
    _one_clear_line(result, "UTF-8", "field start_entity", "surrogate", "22021")


def test_cli_packet_write_accepts_moderately_nested_json(db):
    # 500 levels: within Python's parser and the server's stack, so it is stored like any other payload.
    nested = {"packet_type": "event", "payload": json.loads("[" * 500 + "]" * 500)}
    result = _cli(["packet", "write", "-", "--dsn", db.dsn("app"), "--tenant", str(TENANT_A)],
                  json.dumps(nested).encode())
    assert result.returncode == 0, result.stderr.decode()
    assert superuser_count(db) == 1


def test_an_explicit_packet_id_taken_by_other_content_is_refused_naming_the_field(db):
    packet_id = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.write_packet(%s::jsonb)",
                     [json.dumps({"packet_id": packet_id, "packet_type": "event", "payload": 1})])
        conn.commit()
        set_context(conn, TENANT_A)
        refused = expect_error(conn, "23505", "packet_id", "select memsub.write_packet(%s::jsonb)",
                               [json.dumps({"packet_id": packet_id, "packet_type": "event", "payload": 2})])
    assert "duplicate key" not in str(refused) and packet_id in str(refused)
    assert superuser_count(db) == 1


BLANK_TEXT_SEARCHES = [
    "select count(*) from memsub.hybrid_search(%s, null::vector)",
    "select count(*) from memsub.memory_search(%s)",
    "select count(*) from memsub.entity_search(%s)",
]


@pytest.mark.parametrize("text", ["", "  ", "\t\n"], ids=["empty", "spaces", "tab and newline"])
@pytest.mark.parametrize("call", BLANK_TEXT_SEARCHES, ids=["hybrid_search", "memory_search", "entity_search"])
def test_a_search_by_blank_text_alone_is_refused_naming_the_text(db, call, text):
    """With no query vector the text is all the search has: a blank one found nothing, silently, as if nothing
    matched."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", "query_text", call, [text])


SEMANTIC_SEARCH = ("select count(*) from memsub.semantic_search("
                   "('[1' || repeat(',0', memsub.vector_dimension() - 1) || ']')::vector, 10, ")
"""A semantic search for a unit vector of the installation's dimension; the filters under test follow."""

UNMATCHABLE_FILTERS = [
    (SEMANTIC_SEARCH + "p_tags => %s)", [["kiln", " "]], "tags"),
    (SEMANTIC_SEARCH + "p_tags => %s)", [["kiln", None]], "tags"),
    (SEMANTIC_SEARCH + "p_packet_type => %s)", ["\t"], "packet_type"),
    (SEMANTIC_SEARCH + "p_since => %s, p_until => %s)", ["2026-02-01T00:00:00Z", "2026-01-01T00:00:00Z"], "until"),
    (SEMANTIC_SEARCH + "p_since => %s, p_until => %s)", ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"], "until"),
    ("select count(*) from memsub.traverse_graph('acme', p_relationship_types => %s)", [["works_at", "  "]],
     "relationship_types"),
    ("select count(*) from memsub.traverse_graph('acme', p_relationship_types => %s::text[])", [[None]],
     "relationship_types"),
    ("select count(*) from memsub.retrieve_reflections(p_tags => %s)", [["\n"]], "tags"),
    ("select count(*) from memsub.edges_as_of(p_relationship_type => %s)", [" "], "relationship_type"),
]


@pytest.mark.parametrize(("call", "params", "column"), UNMATCHABLE_FILTERS,
                         ids=[f"{call.split('memsub.')[1].split('(')[0]}-{column}-{n}"
                              for n, (call, _, column) in enumerate(UNMATCHABLE_FILTERS)])
def test_a_filter_nothing_can_match_is_refused_naming_it(db, call, params, column):
    """A blank or null filter value (stored values never are), or an empty time range, found nothing, silently:
    the same answer as a filter that matched nothing stored."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", column, call, params)


def test_a_task_reflection_held_by_another_organization_is_refused_naming_task_id(db):
    """The comment promises 42501 for a task of another organization: it came as a raw row-level security message
    naming a policy and no field. Now it names task_id, and the other organization's reflection stays."""
    org_one, org_two = uuid.UUID(int=11), uuid.UUID(int=12)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, org=org_one)
        conn.execute("select memsub.record_task_reflection('t1', 'success')")
        conn.commit()
        set_context(conn, TENANT_A, org=org_two)
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
            conn.execute("select memsub.record_task_reflection('t1', 'failure')")
        assert refused.value.diag.column_name == "task_id"
        assert "row-level security" not in str(refused.value)
    with db.connect() as conn:
        assert conn.execute("select outcome from memsub.task_reflections").fetchall() == [("success",)]
