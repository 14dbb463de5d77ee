"""The public SQL API is visible by name: every routine a client role may execute is either called by the Python
client or listed below as SQL-only; internal helpers start with ``_`` and the client never calls them; and every
argument the client passes by name exists in pg_proc."""

from __future__ import annotations

import inspect
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
    "drop_context_signing_key", "set_unbound_logins", "trust_login", "unbind_login",
    # formulas and vocabularies analysts use in their own queries (docs/retrieval.md, docs/development.md)
    "combined_score", "memory_strength", "normalize_text", "embedding_types", "memory_types", "memory_tiers",
    "packet_scopes", "derivation_types", "task_statuses", "task_final_statuses",
    "session_statuses", "agent_statuses", "summary_scope_types", "view_refresh_statuses", "view_refresh_methods",
    "reflection_types", "reflection_priorities", "task_outcomes", "document_mimes", "graph_node_types", "entity_types",
    "access_target_types", "search_rank_orders", "search_modes", "graph_directions", "lineage_directions",
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


def _granted(db, roles: tuple[str, ...] | None = CLIENT_ROLES) -> dict[str, set[str]]:
    """Routine name -> argument names, for every routine one of ``roles`` may execute (None: every routine)."""
    with db.connect() as conn:
        rows = conn.execute(
            "select p.proname, coalesce(p.proargnames, '{}') from pg_catalog.pg_proc p"
            " where p.pronamespace = 'memsub'::regnamespace"
            "   and (%(roles)s::text[] is null"
            "        or exists (select from pg_catalog.aclexplode(p.proacl) a"
            "                    join pg_catalog.pg_roles r on r.oid = a.grantee"
            "                   where r.rolname = any(%(roles)s) and a.privilege_type = 'EXECUTE'))",
            {"roles": None if roles is None else list(roles)}).fetchall()
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


# Routines without the ``_`` prefix that no client role may execute, and why: each is called or written by a person.
OPERATOR_ONLY = {
    # records an HNSW index's build parameters for `memsub vector-index rebuild`, run as the role that applies
    # migrations (docs/operations.md)
    "set_vector_index_build",
    # the built-in strategies of consolidate_memories, found by the name memsub.consolidation_<strategy>: an
    # operator adds a strategy by creating such a function (docs/decisions.md, sql/620_consolidation.sql)
    "consolidation_last_write_wins", "consolidation_merge_objects",
}


def test_every_routine_no_client_role_may_execute_starts_with_an_underscore(db):
    """The public API is what ``\\df memsub.[^_]*`` lists (docs/development.md): a routine without the prefix is
    one a client role may execute, or one an operator calls or adds (OPERATOR_ONLY)."""
    with db.connect() as conn:
        rows = conn.execute(
            "select p.proname, p.oid::regprocedure::text from pg_catalog.pg_proc p"
            " where p.pronamespace = 'memsub'::regnamespace and p.proname !~ '^_'"
            "   and not exists (select from unnest(%s::text[]) r (role)"
            "                    where pg_catalog.has_function_privilege(r.role, p.oid, 'EXECUTE'))",
            [list(CLIENT_ROLES)]).fetchall()
    unprefixed = {name for name, _ in rows}
    internal = sorted(signature for name, signature in rows if name not in OPERATOR_ONLY)
    assert internal == [], f"no client role may execute these, so they are internal and must start with _: {internal}"
    assert sorted(OPERATOR_ONLY - unprefixed) == [], "listed as operator-only but granted or prefixed: take it off"


def test_every_argument_the_client_names_exists_in_pg_proc(db):
    granted = _granted(db, None)  # the operator modules (vector_index) call routines no client role may run
    called = _called(_client_source())
    assert called["semantic_search"] >= {"p_query", "p_k", "p_embedding_type"}  # the parser sees named calls
    missing = sorted(f"memsub.{name}({argument} => ...)" for name, arguments in called.items()
                     for argument in arguments if argument not in granted.get(name, set()))
    assert missing == []


# --- namespace method names follow the SQL names ---------------------------------------------------------------
#
# The rule (docs/client.md): a method of ``session.<area>`` is named after the SQL routine it calls with the area's
# word (singular or plural) taken out, wherever it stands in the name: memsub.memory_write is session.memory.write,
# memsub.apply_world_model_update is session.world_model.apply_update. When taking the word out would leave
# nothing or give the name of another method of the area, the method keeps the SQL name (memsub.write_packets is
# session.packets.write_packets, next to session.packets.write).

def area_words(area: str) -> tuple[str, ...]:
    """An area's word, singular and plural (packets: packet, packets; memory: memory, memories)."""
    if area.endswith("s"):
        return (area[:-1], area)
    if area.endswith("y"):
        return (area, area[:-1] + "ies")
    return (area, area + "s")


# Methods that call no routine of their own name, and why.
PYTHON_ONLY = {
    "packets.replay": "composite: pages through get_thread with the keyset cursor",
    "packets.audit_trail": "reads the table memsub.audit",
    "memory.update": "composite: memory_get then memory_write at the version read, retried on a conflict",
    "sessions.get": "reads the table memsub.sessions",
    "graph.nodes": "reads the view memsub.graph_nodes",
    "graph.entity_graph": "reads the materialized view memsub.tenant_entity_graph",
    "documents.ingest_file": "composite: reads, hashes and chunks a file, then document_ingest",
    "documents.embed_missing_chunks": "composite: document_chunks_without_embedding, then document_embed_chunks",
}


def python_name(sql_name: str, words: tuple[str, ...]) -> str:
    """The SQL name without the area's word (the SQL name itself when nothing would be left)."""
    parts = sql_name.split("_")
    for word in sorted(words, key=len, reverse=True):
        word_parts = word.split("_")
        for start in range(len(parts) - len(word_parts) + 1):
            if parts[start:start + len(word_parts)] == word_parts:
                rest = parts[:start] + parts[start + len(word_parts):]
                return "_".join(rest) if rest else sql_name
    return sql_name


def _routines_of(builder) -> set[str]:
    """The routines a declaration calls: its own function("...") calls, else those of the declarations it uses."""
    source = inspect.getsource(builder)
    found = set(re.findall(r'\bfunction\(\s*"(\w+)"', source))
    if found:
        return found
    module = inspect.getmodule(builder)
    for name in re.findall(r"\b(\w+)\(", source):
        helper = getattr(module, name, None)
        if inspect.isfunction(helper) and helper is not builder and helper.__module__ == builder.__module__:
            found |= set(re.findall(r'\bfunction\(\s*"(\w+)"', inspect.getsource(helper)))
    return found


def test_python_name_rule() -> None:
    assert area_words("packets") == ("packet", "packets") and area_words("memory") == ("memory", "memories")
    assert python_name("memory_write", area_words("memory")) == "write"
    assert python_name("consolidate_memories", area_words("memory")) == "consolidate"
    assert python_name("apply_world_model_update", area_words("world_model")) == "apply_update"
    assert python_name("task_link_session", area_words("sessions")) == "task_link"
    assert python_name("retrieve_reflections", area_words("reflection")) == "retrieve"
    assert python_name("record_event", area_words("events")) == "record"
    assert python_name("temporal_edge_add", area_words("graph")) == "temporal_edge_add"
    assert python_name("search", area_words("search")) == "search"


def test_every_namespace_method_is_named_after_a_granted_routine_by_the_rule(db) -> None:
    from memsub.client import AREAS, TenantSession

    granted = _granted(db)
    unnamed, ungranted, seen = [], [], set()
    for area in AREAS:
        area_class = getattr(TenantSession, area)
        methods = area_class.methods()
        seen |= {f"{area}.{name}" for name, value in vars(area_class).items()
                 if not name.startswith("_") and inspect.isfunction(value)}  # written in Python on the area
        for name, declared in methods.items():
            key = f"{area}.{name}"
            seen.add(key)
            routines = _routines_of(declared.builder)
            ungranted += [f"{key} -> memsub.{r}" for r in routines if r not in granted]
            if key in PYTHON_ONLY:
                continue
            by_rule = {python_name(r, area_words(area)) for r in routines}
            kept = {r for r in routines if python_name(r, area_words(area)) in set(methods) - {r}}
            if name not in by_rule | kept:
                unnamed.append(f"{key} calls {sorted(routines)}: expected one of {sorted(by_rule)}")
    assert unnamed == [], "a namespace method not named by the rule (docs/client.md)"
    assert ungranted == [], "a namespace method calls a routine no client role may execute"
    composites = {key for key in seen if key.split(".")[1] not in getattr(TenantSession, key.split(".")[0]).methods()}
    assert sorted(composites - set(PYTHON_ONLY)) == [], "a method written in Python on an area: list it above"
    assert sorted(set(PYTHON_ONLY) - seen) == [], "listed as Python-only but no such method"
