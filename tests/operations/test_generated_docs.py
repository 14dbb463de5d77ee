"""The committed current schema (schema/memsub.sql) and SQL API reference (docs/sql-reference.md) are those of a
fresh installation: after changing sql/ or migrations/, run make schema and review the diff."""

from __future__ import annotations

import subprocess
from typing import Any

from psycopg.conninfo import make_conninfo

from memsub.schema_docs import REFERENCE_PATH, SCHEMA_PATH, dump_schema, normalize_dump, sql_reference
from memsub.sqllint import lint


def _first_difference(expected: str, found: str) -> str:
    for number, (left, right) in enumerate(zip(expected.splitlines(), found.splitlines(), strict=False), 1):
        if left != right:
            return f"line {number}: committed {left!r}, fresh installation {right!r}"
    return "one of them is longer"


def test_the_committed_schema_is_a_fresh_installations(db):
    found = dump_schema(db.dsn())
    committed = SCHEMA_PATH.read_text()
    assert committed == found, f"schema/memsub.sql is stale (make schema): {_first_difference(committed, found)}"


def test_the_sql_reference_is_current(db):
    found = sql_reference(db.dsn())
    committed = REFERENCE_PATH.read_text()
    assert committed == found, f"docs/sql-reference.md is stale (make schema): {_first_difference(committed, found)}"


def test_the_reference_lists_the_public_api_only(db):
    text = REFERENCE_PATH.read_text()
    assert "### `memsub.write_packet(" in text and "### `memsub.semantic_search(" in text
    assert "### `memsub._" not in text


def test_normalizing_drops_what_differs_between_two_dumps():
    dump = "--\n-- PostgreSQL database dump\n\\restrict abc\nSET lock_timeout = 0;\n\n\n\nCREATE SCHEMA memsub;\n"
    assert normalize_dump(dump) == "CREATE SCHEMA memsub;\n"


def test_the_lint_requires_a_comment_on_each_view_column(tmp_path):
    source = tmp_path / "v.sql"
    source.write_text("create or replace view memsub.v with (security_barrier = true) as\n"
                      "select m.tenant_id, m.\"timestamp\", count(*) as n, m.* from memsub.t m;\n"
                      "comment on view memsub.v is 'x';\n"
                      "comment on column memsub.v.tenant_id is 'x';\n")
    problems = [problem.message for problem in lint([source])]
    assert problems == ["column memsub.v.n has no comment on", "column memsub.v.timestamp has no comment on"]


def test_the_lint_requires_a_comment_on_a_column_a_rerunnable_migration_adds(tmp_path):
    """"add column if not exists c" adds c (it named the column "if" before, and no comment could satisfy that)."""
    source = tmp_path / "c.sql"
    source.write_text("alter table memsub.t add column if not exists c uuid;\n"
                      "alter table memsub.t add column if not exists d uuid;\n"
                      "comment on column memsub.t.d is 'x';\n")
    assert [problem.message for problem in lint([source])] == ["column memsub.t.c has no comment on"]


def test_the_reference_shows_which_arguments_may_be_left_out(db):
    """A caller in psql or another language learns from the reference which arguments have a default: those may
    be left out, by position from the end and by name in any combination (docs/client.md)."""
    found = sql_reference(db.dsn())
    assert "#### `memsub.set_context(p_tenant_id uuid, p_org_id uuid DEFAULT NULL::uuid," in found
    assert "p_roles text[] DEFAULT '{}'::text[]" in found
    assert "(p_query vector, p_k integer DEFAULT 10, p_embedding_type text DEFAULT 'content'::text," in found
    assert "#### `memsub.refresh_memory_views(INOUT run_id uuid DEFAULT NULL::uuid)`" in found
    assert "may be left out" in found.split("\n## ", 1)[0]


def test_pg_dump_gets_no_password_on_its_command_line(db, monkeypatch):
    """A command's arguments are visible to every user of the machine (ps): dump_schema hands pg_dump the password
    in its environment. The test server trusts local logins, so the password given here is never checked."""
    seen: list[list[str]] = []
    run = subprocess.run

    def recording(arguments: list[str], **options: Any) -> Any:
        seen.append(list(arguments))
        return run(arguments, **options)

    monkeypatch.setattr(subprocess, "run", recording)
    secret = "s3cr3t-Never-In-Argv"
    dump = dump_schema(make_conninfo(db.dsn(), password=secret))
    assert "CREATE SCHEMA memsub;" in dump and len(seen) == 1
    assert not any(secret in argument for argument in seen[0]), seen[0]
