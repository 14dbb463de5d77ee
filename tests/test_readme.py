"""The README's SQL examples run as written, as a member of memsub_app."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

README = Path(__file__).resolve().parent.parent / "README.md"


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
            conn.execute("select memsub.set_context(gen_random_uuid())")
            assert conn.execute("select count(*) from memsub.packet_store").fetchone() == (0,)
    finally:
        with db.connect(autocommit=True) as conn:
            conn.execute("drop role my_service")
