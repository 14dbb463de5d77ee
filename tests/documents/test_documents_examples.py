"""The SQL examples of docs/documents.md run as written: the first three as the application role, the
maintenance example as a tenant admin, each in one transaction."""

from __future__ import annotations

import re
from pathlib import Path

from session_helpers import ground_truth

DOC = Path(__file__).resolve().parents[2] / "docs" / "documents.md"


def test_documents_md_sql_examples_run(db):
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 4
    with db.connect("app") as conn:
        for block in blocks[:3]:
            conn.execute(block)
        conn.commit()
    with db.connect("tenant_admin") as conn:
        context, maintenance = (s for s in blocks[3].split(";\n") if s.strip())
        conn.execute(context)
        promoted = conn.execute(maintenance).fetchall()
        conn.commit()
    assert promoted == [("topic", promoted[0][1], "promoted")] and promoted[0][1] >= 1.0
    edges = ground_truth(db, "select target_entity, upper(valid_period) is null as current, evidence "
                             "from memsub.entity_relationships where source_entity = 'Alice' order by 2")
    assert [(e["target_entity"], e["current"]) for e in edges] == [("Acme", False), ("Globex", True)]
    assert edges[1]["evidence"][0]["score"] == 0.9
