"""What docs/layers.md, docs/retrieval.md and docs/security.md state, held against the database: their SQL
examples run as a member of memsub_app, each in one transaction with a tenant context (a query vector shown as
``'[...]'`` is the one placeholder, filled here with a vector of the installation's dimension); the defaults of
the limits table and of the search parameter tables are those memsub.limit_value and pg_proc give."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import TENANT_A

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _sql_blocks(name: str) -> list[str]:
    return re.findall(r"```sql\n(.*?)```", (DOCS / name).read_text(encoding="utf-8"), flags=re.S)


def _statements(block: str) -> list[str]:
    return [s for s in block.split(";\n") if s.strip() and not all(
        line.lstrip().startswith("--") for line in s.strip().splitlines())]


def test_layers_md_sql_examples_run_as_written(db):
    blocks = _sql_blocks("layers.md")
    assert len(blocks) == 2
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(TENANT_A)])
        for block in blocks:
            for statement in _statements(block):
                conn.execute(statement)
        conn.commit()
    with db.connect() as conn:
        written = conn.execute("select count(*) from memsub.memory_embeddings").fetchone()
    assert written == (1,)


def test_retrieval_md_sql_examples_run_and_the_graph_query_reads_one_partition(db):
    blocks = _sql_blocks("retrieval.md")
    assert len(blocks) == 3
    with db.connect("app") as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        vector = "[" + ",".join(["0.1"] * dimension) + "]"
        conn.execute("select memsub.set_context(%s)", [str(TENANT_A)])
        conn.execute("select memsub.store_semantic_memory('planner', %s::vector)", [vector])
        for block in blocks:
            assert re.search(r"'\[[^]']*\.\.\.[^]']*\]'", block.replace("'[...]'", "")) is None, block
            text = block.replace("'[...]'", f"'{vector}'").replace("halfvec(1536)", f"halfvec({dimension})")
            for statement in _statements(text):
                conn.execute(statement)
                if "<#>" in statement:
                    plan = "\n".join(row[0] for row in conn.execute(f"explain (costs off) {statement}"))
                    assert "Subplans Removed: 15" in plan and "idx_embeddings_vector_content_p" in plan, plan
        conn.commit()


def test_security_md_limits_table_is_what_limit_value_answers(db):
    section = (DOCS / "security.md").read_text(encoding="utf-8").split("## Limits", 1)[1].split("\n#", 1)[0]
    table = dict(re.findall(r"^\| `(\w+)` \| (\d+) \|", section, flags=re.M))
    with db.connect("app") as conn:
        found = {name: str(conn.execute("select memsub.limit_value(%s)", [name]).fetchone()[0]) for name in table}
        known = {row[0] for row in conn.execute(
            "select unnest(regexp_matches(pg_get_functiondef('memsub.limit_value'::regproc),"
            " 'when ''(\\w+)''', 'g'))")}
    assert found == table
    assert set(table) == known, "a limit the table leaves out, or one limit_value does not know"


def _parameter_table(doc: str, heading: str) -> dict[str, str]:
    section = (DOCS / doc).read_text(encoding="utf-8").split(heading, 1)[1]
    table = section.split("| parameter | default | meaning |", 1)[1].split("\n\n", 1)[0]
    defaults: dict[str, str] = {}
    for names, default in re.findall(r"^\| ((?:`p_\w+`(?:, )?)+) \| ([^|]+) \|", table, flags=re.M):
        values = [v.strip().strip("`") for v in default.split(",")] if "," in default and "(" not in default \
            else [default.strip()]
        for index, name in enumerate(re.findall(r"`(p_\w+)`", names)):
            defaults[name] = values[min(index, len(values) - 1)]
    return defaults


@pytest.mark.parametrize(("function", "heading"), [("semantic_search", "## Semantic search"),
                                                   ("hybrid_search", "## Hybrid search")])
def test_retrieval_md_parameter_defaults_are_the_functions(db, function, heading):
    documented = _parameter_table("retrieval.md", heading)
    with db.connect() as conn:
        rows = conn.execute(
            "select a.name, pg_catalog.pg_get_function_arg_default(p.oid, a.n::integer)"
            "  from pg_catalog.pg_proc p, unnest(p.proargnames) with ordinality a(name, n)"
            " where p.oid = %s::regproc and coalesce(p.proargmodes[a.n], 'i') in ('i', 'b', 'v')",
            [f"memsub.{function}"]).fetchall()
        actual = {name: "required" if expression is None
                  else str(conn.execute(f"select ({expression})::text").fetchone()[0] or "null")
                  for name, expression in rows}
    assert set(documented) == set(actual), "a parameter the table leaves out, or one the function does not have"
    for name, default in documented.items():
        text = default.replace("`", "").strip()
        first, value = text.split(" ")[0], actual[name]
        if value == "required":
            assert first == "required", (name, default, value)
        elif value == "null":  # no default, or one derived from the other arguments (the table says how)
            assert first in ("null", "required") or text.startswith("max("), (name, default, value)
        elif "day" in value:
            assert text == value, (name, default, value)
        else:
            assert first == value or (first.replace(".", "", 1).isdigit() and float(first) == float(value)), \
                (name, default, value)
