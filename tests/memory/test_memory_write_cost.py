"""A memory write stores its version once: one new row, its embedding in it, and nothing rewritten.

A row written and then updated in the same call costs a second row version, a second entry in every index of
memory_entries (an update of the embedding is never a HOT update: the embedding is indexed) and a dead row for
vacuum. The tests count the transaction's own row operations on memory_entries (``pg_stat_get_xact_tuples_*``),
as the application role in its own user: namespace.
"""

from __future__ import annotations

from typing import Any

import psycopg

from layer_helpers import DIMENSION
from session_helpers import ALICE, as_user, rows


def row_operations(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """The rows of memory_entries this transaction has inserted, updated (HOT or not) and deleted so far."""
    found = rows(conn, "select pg_stat_get_xact_tuples_inserted(t) as inserted,"
                       "       pg_stat_get_xact_tuples_updated(t) as updated,"
                       "       pg_stat_get_xact_tuples_deleted(t) as deleted"
                       "  from (select 'memsub.memory_entries'::regclass as t) r")
    return {name: int(value) for name, value in found[0].items()}


def write_counted(conn: psycopg.Connection[Any], key: str, embedding: str | None,
                  read_version: int | None = None) -> dict[str, int]:
    before = row_operations(conn)
    conn.execute("select memsub.memory_write(%s, %s, '{\"text\": \"resin prices\"}', %s, p_embedding => %s::vector)",
                 [f"user:{ALICE}:notes", key, read_version, embedding])
    after = row_operations(conn)
    return {name: after[name] - before[name] for name in after}


def test_a_write_with_its_embedding_inserts_one_row_and_updates_none(db):
    embedding = "[" + ",".join(["0.25"] * DIMENSION) + "]"
    with db.connect("app") as conn:
        as_user(conn, ALICE, None)
        assert write_counted(conn, "with", embedding) == {"inserted": 1, "updated": 0, "deleted": 0}
        assert write_counted(conn, "without", None) == {"inserted": 1, "updated": 0, "deleted": 0}
        stored = rows(conn, "select key, version, embedding is not null as embedded from memsub.memory_entries"
                            " order by key")
        assert stored == [{"key": "with", "version": 1, "embedded": True},
                          {"key": "without", "version": 1, "embedded": False}]
        # A new version with its embedding: again one insert, the earlier version untouched.
        assert write_counted(conn, "with", embedding.replace("0.25", "0.5", 1), 1) == {
            "inserted": 1, "updated": 0, "deleted": 0}
        conn.execute("select memsub.memory_write(%s, 'with', '1', 2)", [f"user:{ALICE}:notes"])
        versions = rows(conn, "select version, embedding is not null as embedded from memsub.memory_entries"
                              " where key = 'with' order by version")
        assert versions == [{"version": 1, "embedded": True}, {"version": 2, "embedded": True},
                            {"version": 3, "embedded": False}]
