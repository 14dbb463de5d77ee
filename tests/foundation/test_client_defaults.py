"""A default the Python client writes into a declaration's signature (``k: int = 10``) is the stored function's
own default for that argument (docs/decisions.md, "One call path for the sync and async clients"): an argument
left out of a call takes the SQL default, and one the client fills in must not call with another value."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

AREAS = ("packets", "events", "search", "graph", "world_model", "reflection", "memory", "sessions", "documents",
         "api_keys")


def _sql_defaults(db) -> dict[str, dict[str, Any]]:
    """Function name -> {argument name: its default, evaluated, or ... for an argument without one}."""
    defaults: dict[str, dict[str, Any]] = {}
    with db.connect() as conn:
        rows = conn.execute(
            "select p.proname, a.name, pg_catalog.pg_get_function_arg_default(p.oid, a.n::integer)"
            "  from pg_catalog.pg_proc p, unnest(p.proargnames) with ordinality a(name, n)"
            " where p.pronamespace = 'memsub'::regnamespace"
            "   and coalesce(p.proargmodes[a.n], 'i') in ('i', 'b', 'v')").fetchall()
        for function, argument, expression in rows:
            value = ... if expression is None else conn.execute(f"select {expression}").fetchone()[0]
            defaults.setdefault(function, {})[argument] = value
    return defaults


def _same(python: Any, sql: Any) -> bool:
    if isinstance(python, tuple | list):
        return isinstance(sql, list) and list(python) == sql
    if isinstance(python, bool) or isinstance(sql, bool):
        return python is sql
    return bool(python == sql)


def test_every_default_in_a_declaration_is_the_functions_own(db):
    sql = _sql_defaults(db)
    compared, differ = 0, []
    for area in AREAS:
        module = importlib.import_module(f"memsub.{area}")
        for name, declaration in inspect.getmembers(module, inspect.isfunction):
            if declaration.__module__ != module.__name__ or name not in sql:
                continue
            for parameter in inspect.signature(declaration).parameters.values():
                if parameter.default in (inspect.Parameter.empty, None) or f"p_{parameter.name}" not in sql[name]:
                    continue
                compared += 1
                expected = sql[name][f"p_{parameter.name}"]
                if expected is ... or not _same(parameter.default, expected):
                    differ.append(f"memsub.{area}.{name}({parameter.name}={parameter.default!r}): SQL "
                                  + ("has no default" if expected is ... else repr(expected)))
    assert compared > 40, "the declarations were not found"
    assert differ == []
