"""The SQL examples of docs/layers.md and docs/retrieval.md run as a member of memsub_app, each in one
transaction with a tenant context; a query vector shown as ``'[...]'`` is the one placeholder, filled here with a
vector of the installation's dimension."""

from __future__ import annotations

import re
from pathlib import Path

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
