"""The public SQL API is visible by name: every routine a client role may execute is either called by the Python
client or listed below as SQL-only; internal helpers start with ``_`` and the client never calls them; and every
argument the client passes by name exists in pg_proc."""

from __future__ import annotations

import re
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[2] / "python" / "memsub"
CLIENT_ROLES = ("memsub_app", "memsub_analyst", "memsub_tenant_admin", "memsub_platform_admin")

# Public routines a client role may call that the Python client has no wrapper for, and why.
SQL_ONLY = {
    # the context the row-level security policies read (docs/security.md)
    "acting_role", "current_agent_id", "current_context_roles", "current_org_id", "current_session_id",
    "current_task_id", "current_user_id", "is_platform_admin", "is_tenant_admin",
    # identity binding, administered in SQL by a platform admin (docs/security.md)
    "drop_context_signing_key", "seal_context", "set_unbound_logins", "trust_login", "unbind_login",
    # formulas and vocabularies analysts use in their own queries (docs/retrieval.md, docs/development.md)
    "combined_score", "memory_strength", "normalize_text", "embedding_types", "memory_types", "memory_tiers",
}


def _client_source() -> str:
    return "\n".join(path.read_text() for path in sorted(CLIENT.rglob("*.py")))


# function("name", {"arg": value, ...}) (memsub._calls) calls memsub.name(p_arg => value, ...).
NAMED_CALL = re.compile(r'\b(?:_call|function)\(\s*"(\w+)",\s*\{(.*?)\}', re.DOTALL)


def _called(source: str) -> dict[str, set[str]]:
    """Routine name -> the argument names the client passes by name, for every routine it calls."""
    called: dict[str, set[str]] = {}
    for match in re.finditer(r"memsub\.(\w+)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)?", source):
        called.setdefault(match.group(1), set()).update(re.findall(r"\b(\w+)\s*=>", match.group(2) or ""))
    for match in NAMED_CALL.finditer(source):
        called.setdefault(match.group(1), set()).update(
            "p_" + key for key in re.findall(r'"(\w+)"\s*:', match.group(2)))
    return called


def _granted(db) -> dict[str, set[str]]:
    """Routine name -> argument names, for every routine a client role may execute."""
    with db.connect() as conn:
        rows = conn.execute(
            "select p.proname, coalesce(p.proargnames, '{}') from pg_catalog.pg_proc p"
            " where p.pronamespace = 'memsub'::regnamespace"
            "   and exists (select from pg_catalog.aclexplode(p.proacl) a"
            "                join pg_catalog.pg_roles r on r.oid = a.grantee"
            "               where r.rolname = any(%s) and a.privilege_type = 'EXECUTE')",
            [list(CLIENT_ROLES)]).fetchall()
    granted: dict[str, set[str]] = {}
    for name, arguments in rows:
        granted.setdefault(name, set()).update(arguments)
    return granted


def test_every_granted_routine_is_wrapped_or_listed_as_sql_only(db):
    called = set(_called(_client_source()))
    public = {name for name in _granted(db) if not name.startswith("_")}
    unaccounted = sorted(public - called - SQL_ONLY)
    assert unaccounted == [], f"granted to a client role, neither wrapped nor listed as SQL-only: {unaccounted}"
    stale = sorted(SQL_ONLY - public)
    assert stale == [], f"listed as SQL-only but not granted to a client role: {stale}"
    assert sorted(SQL_ONLY & called) == [], "a SQL-only routine is wrapped after all: take it off the list"


def test_the_client_calls_no_internal_helper(db):
    internal = {name for name in _granted(db) if name.startswith("_")}
    assert internal, "the internal helpers start with _"
    called = {name for name in _called(_client_source()) if name.startswith("_")}
    assert called == set()


def test_every_argument_the_client_names_exists_in_pg_proc(db):
    granted = _granted(db)
    called = _called(_client_source())
    assert called["semantic_search"] >= {"p_query", "p_k", "p_embedding_type"}  # the parser sees named calls
    missing = sorted(f"memsub.{name}({argument} => ...)" for name, arguments in called.items()
                     for argument in arguments if argument not in granted.get(name, set()))
    assert missing == []
