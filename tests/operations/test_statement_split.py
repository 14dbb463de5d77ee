"""repair re-applies a re-runnable file one statement at a time when the file fails as a whole: the split it
uses at run time (no SQL parser is installed with memsub) must agree with the SQL lint's tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsub.schema_files import split_statements
from memsub.sqllint import split_statements as tokenized_statements

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted([*ROOT.glob("sql/*.sql"), *ROOT.glob("migrations/*.sql")])


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_shipped_file_splits_where_the_tokenizer_splits_it(path):
    ours = split_statements(path.read_text(encoding="utf-8"))
    theirs = [statement.line for statement in tokenized_statements(path)]
    assert [line for line, _ in ours] == theirs
    assert all(statement and not statement.endswith(";") for _, statement in ours)


def test_semicolons_inside_quotes_comments_and_bodies_do_not_split():
    text = """-- a comment; with a semicolon
select 'it''s; one', "odd;name", E'back\\'slash;' from t; /* block /* nested; */ still; */
create function f() returns text language plpgsql as $body$ begin return 'x;y'; end $body$;
select $$a;b$$, 1 as "$x$";
select 2"""
    assert split_statements(text) == [
        (2, """select 'it''s; one', "odd;name", E'back\\'slash;' from t"""),
        (3, "create function f() returns text language plpgsql as $body$ begin return 'x;y'; end $body$"),
        (4, 'select $$a;b$$, 1 as "$x$"'),
        (5, "select 2"),
    ]
