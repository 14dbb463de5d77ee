"""The README's SQL examples run as written, as a member of memsub_app (the admin examples as the admin roles)."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def sql_examples() -> list[str]:
    blocks = re.findall(r"```sql\n(.*?)```", README.read_text(), flags=re.S)
    return [block for block in blocks if block.lstrip().startswith("begin;")]


def test_readme_sql_examples_run_as_the_application_role(db):
    examples = sql_examples()
    assert len(examples) >= 5
    with db.connect("app", autocommit=True) as conn:
        for example in examples:
            conn.execute(example)
    with db.connect() as conn:
        types = conn.execute("select packet_type, count(*) from memsub.packet_store group by 1 order by 1").fetchall()
    assert types == [("document", 1), ("event", 3), ("insight", 1), ("observation", 1)]


def test_readme_role_example_creates_a_working_login_role(db):
    block = re.search(r"```sql\n(create role my_service.*?)```", README.read_text(), flags=re.S)
    assert block is not None
    with db.connect(autocommit=True) as conn:
        conn.execute("drop role if exists my_service")
        conn.execute(block.group(1))
    try:
        with psycopg.connect(db.server.dsn(db.name, "my_service")) as conn:
            conn.execute("select memsub.set_context('aaaaaaaa-0000-0000-0000-000000000001')")
            assert conn.execute("select count(*) from memsub.packet_store").fetchone() == (0,)
            conn.rollback()
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("select memsub.set_context(gen_random_uuid())")  # a tenant it is not bound to
    finally:
        with db.connect(autocommit=True) as conn:
            conn.execute("drop role my_service")


def test_readme_view_refresh_example_runs_as_a_platform_admin(db):
    with db.connect("app", autocommit=True) as conn:
        for example in sql_examples():
            conn.execute(example)
    block = re.search(r"```sql\n(call memsub\.refresh_memory_views\(\);.*?)```", README.read_text(), flags=re.S)
    assert block is not None
    with db.connect("platform_admin", autocommit=True) as conn:
        for statement in block.group(1).split(";"):
            if statement.strip():
                conn.execute(statement)
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context('aaaaaaaa-0000-0000-0000-000000000001')")
        edges = conn.execute("select source_entity, target_entity from memsub.tenant_entity_graph "
                             "order by 1, 2").fetchall()
    assert ("l9", "neo4j") in edges and ("l9", "python") in edges  # the graph view groups normalized names


def test_readme_importance_learning_example_runs_as_a_tenant_admin_only(db):
    with db.connect("app", autocommit=True) as conn:
        for example in sql_examples():
            conn.execute(example)
    block = re.search(r"```sql\n-- as a member of memsub_tenant_admin\n(begin;.*?)```", README.read_text(), flags=re.S)
    assert block is not None and "memsub.learn_importance()" in block.group(1)
    statements = [s for s in block.group(1).split(";") if s.strip()]
    with db.connect("app", autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        for statement in statements:  # the application may not run it, not even with the example's words
            conn.execute(statement.replace(", p_roles => '{tenant_admin}'", ""))
    results = []
    with db.connect("tenant_admin", autocommit=True) as conn:
        for statement in statements:
            cursor = conn.execute(statement)
            results.append(cursor.fetchall() if cursor.description else None)
    assert results[2] == [(1, 1, 1)]  # the feedback's access, learned once, raised its packet's importance


def test_readme_async_client_example_runs_as_the_application_role(db384):
    section = README.read_text().split("## Async client", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None and 'DSN = "postgresql://my_service@localhost/mydb"' in block.group(1)
    code = block.group(1).replace("postgresql://my_service@localhost/mydb", db384.dsn("app"))
    exec(compile(code, "README.md (Async client)", "exec"), {"__name__": "readme_example"})
    with db384.connect() as conn:
        rows = conn.execute("select packet_type, envelope->'payload'->>'answer', "
                            "jsonb_array_length(envelope->'lineage'->'parent_ids') "
                            "from memsub.packet_store order by write_seq").fetchall()
    assert rows == [("event", None, None), ("insight", "1 note(s) answer it", 1)]
