"""The privilege matrix: every memsub table, view and function x every role x select/insert/update/delete/call.

Each cell is observed by running the statement as a login role that is a member of the memsub role (inside a
transaction that is rolled back): a cell is allowed unless PostgreSQL answers "permission denied". The expected
matrix is the table between the markers in docs/security.md; tests/foundation/test_security_matrix.py compares the two.
``python tests/security_matrix.py DSN`` prints the observed table, for review before updating the document.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import psycopg
from psycopg import sql

ROLES = {"app": "memsub_app", "tenant_admin": "memsub_tenant_admin", "platform_admin": "memsub_platform_admin",
         "analyst": "memsub_analyst", "nobody": "(no memsub role)"}
DOC = Path(__file__).resolve().parent.parent / "docs" / "security.md"
START, END = "<!-- privilege-matrix:start -->", "<!-- privilege-matrix:end -->"

Matrix = dict[str, dict[str, str]]


def objects(conn: psycopg.Connection[tuple[object, ...]]) -> list[tuple[str, str, sql.Composable, str]]:
    """(label, kind, probe target, a writable column) of every table, view, materialized view, function and
    procedure. The column is tenant_id when the table has one."""
    found: list[tuple[str, str, sql.Composable, str]] = []
    relations = conn.execute("""
        select c.relname, case c.relkind when 'v' then 'view' when 'm' then 'materialized view' else 'table' end,
               (select a.attname from pg_attribute a
                 where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                   and a.attgenerated = '' and a.attidentity <> 'a'
                 order by a.attname <> 'tenant_id', a.attnum limit 1)
          from pg_class c where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
         order by 1""").fetchall()
    for name, kind, column in relations:
        found.append((str(name), str(kind), sql.Identifier("memsub", str(name)), str(column)))
    routines = conn.execute("""
        select p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
               case p.prokind when 'p' then 'procedure' else 'function' end, p.proname,
               coalesce(array(select format_type(t, null) from unnest(p.proargtypes) as t), '{}')
          from pg_proc p where p.pronamespace = 'memsub'::regnamespace order by 1""").fetchall()
    for label, kind, name, types in routines:
        arguments = sql.SQL(", ").join(sql.SQL("null::" + str(t)) for t in types)  # type: ignore[attr-defined]
        verb = sql.SQL("call") if kind == "procedure" else sql.SQL("select")
        found.append((str(label), str(kind),
                      sql.SQL("{} {}({})").format(verb, sql.Identifier("memsub", str(name)), arguments), ""))
    return found


def _denied(conn: psycopg.Connection[tuple[object, ...]], statement: sql.Composable) -> bool:
    try:
        with conn.transaction(force_rollback=True):
            conn.execute("set local statement_timeout = '2s'")
            conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege as error:
        return "permission denied" in str(error)
    except psycopg.Error:
        return False
    return False


def observe(dsn_for_role: dict[str, str], catalog_dsn: str) -> Matrix:
    with psycopg.connect(catalog_dsn) as conn:
        targets = objects(conn)
    matrix: Matrix = {}
    for role, dsn in dsn_for_role.items():
        with psycopg.connect(dsn) as conn:
            conn.execute("set lock_timeout = '1s'")
            conn.commit()
            for label, kind, target, column in targets:
                if kind in {"function", "procedure"}:
                    cell = "-" if _denied(conn, target) else "x"
                else:
                    probes: dict[str, sql.Composable] = {"S": sql.SQL("select 1 from {} limit 0").format(target)}
                    if kind == "table":
                        # One plain column: generated and identity columns refuse explicit values before any
                        # privilege check, which would hide the answer.
                        name = sql.Identifier(column)
                        probes["I"] = sql.SQL("insert into {} ({}) select {} from {} where false").format(
                            target, name, name, target)
                        probes["U"] = sql.SQL("update {} set {} = {} where false").format(target, name, name)
                        probes["D"] = sql.SQL("delete from {} where false").format(target)
                    cell = "".join(letter for letter, probe in probes.items() if not _denied(conn, probe)) or "-"
                matrix.setdefault(f"{kind} {label}", {})[role] = cell
    return matrix


def render(matrix: Matrix) -> str:
    header = "| object | " + " | ".join(ROLES) + " |"
    rule = "|---|" + "---|" * len(ROLES)
    rows = [f"| `{name}` | " + " | ".join(cells.get(role, "?") for role in ROLES) + " |"
            for name, cells in sorted(matrix.items())]
    return "\n".join([header, rule, *rows])


def documented() -> Matrix:
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(START) + len(START):text.index(END)]
    matrix: Matrix = {}
    for line in block.splitlines():
        match = re.match(r"^\| `(.+?)` \|(.*)\|$", line.strip())
        if match:
            cells = [c.strip() for c in match[2].split("|")]
            matrix[match[1]] = dict(zip(ROLES, cells, strict=True))
    return matrix


if __name__ == "__main__":
    from psycopg.conninfo import make_conninfo

    base = sys.argv[1]
    print(render(observe({role: make_conninfo(base, user=f"memsub_test_{role}") for role in ROLES}, base)))
