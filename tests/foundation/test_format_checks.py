"""Format checks of names and keys: the same rules, without long counted repetitions.

PostgreSQL's regular-expression engine builds a state per counted repetition, so a pattern such as
``[^:]{0,255}`` costs 5-36 µs a match where ``[^:]*`` plus a length test costs under 1 µs; the check constraints
run on every write of their table (memory_entries, sessions) and the functions' own checks on every call. The
catalog test keeps such patterns out; the boundary tests pin the rules themselves: the longest accepted value is
accepted, one character more is refused naming the field, by the function and by the table's check constraint.
"""

from __future__ import annotations

import json
import re
from typing import Any

import psycopg
import pytest

from helpers import expect_error
from session_helpers import ALICE, as_user, ground_truth, new_session, one

LONGEST_FAST_BOUND = 16  # a counted repetition up to this many is as cheap as its unrolled form
COUNTED = re.compile(r"\{(\d+)(?:,(\d*))?\}")  # {m}, {m,} and {m,n}: as many states as the larger number


def test_no_check_or_function_repeats_a_pattern_more_than_a_few_times_by_count(db):
    found = ground_truth(db, """
        select 'constraint ' || c.conrelid::regclass || '.' || c.conname as what, pg_get_constraintdef(c.oid) as text
          from pg_constraint c where c.connamespace = 'memsub'::regnamespace and c.contype = 'c'
        union all
        select 'function ' || p.oid::regprocedure, p.prosrc
          from pg_proc p join pg_language l on l.oid = p.prolang
         where p.pronamespace = 'memsub'::regnamespace and l.lanname in ('sql', 'plpgsql')""")
    assert len(found) > 100
    slow = sorted(f"{row['what']}: {match.group(0)}" for row in found for match in COUNTED.finditer(row["text"])
                  if max(int(number) for number in match.groups() if number) > LONGEST_FAST_BOUND)
    assert slow == []


def test_a_memory_key_is_one_to_256_characters_without_a_colon_or_a_leading_space(db):
    namespace = f"user:{ALICE}:notes"
    with db.connect("app") as conn:
        as_user(conn, ALICE, None)
        for key in ("k", "é" * 256, "a b", "x" + " " * 255):
            one(conn, "select version from memsub.memory_write(%s, %s, '1')", [namespace, key])
        conn.commit()
        for key in ("", "é" * 257, " k", "\tk", "a:b", "k" + ":" * 2):
            as_user(conn, ALICE, None)
            expect_error(conn, "22023", "key", "select memsub.memory_write(%s, %s, '1')", [namespace, key])
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 4}]
    with db.connect() as conn:  # the table's own check, for a row written around the functions
        for key, accepted in (("é" * 256, True), ("é" * 257, False), (" k", False), ("a:b", False)):
            insert = ("insert into memsub.memory_entries (tenant_id, namespace, key, value, version)"
                      " values (gen_random_uuid(), %s, %s, '1', 1)")
            if accepted:
                conn.execute(insert, [namespace, key])
            else:
                with pytest.raises(psycopg.errors.CheckViolation, match="memory_entries_key_format"):
                    conn.execute(insert, [namespace, key])
            conn.rollback()


@pytest.mark.parametrize("field", ["session_id", "project_id", "app_name"])
def test_session_names_are_one_to_128_letters_digits_or_dot_dash_underscore(db, field):
    with db.connect("app") as conn:
        for number, value in enumerate(("a", "A.b-c_9" * 18 + "xy", "z" * 128)):
            names = {"session_id": f"s{number}", "project_id": None, "app_name": None, field: value}
            as_user(conn, ALICE, None)
            one(conn, "select id from memsub.session_create(%s, %s, %s)",
                [names["session_id"], names["project_id"], names["app_name"]])
            conn.commit()
        for value in ("z" * 129, "a b", "a:b", "é"):
            names = {"session_id": "bad", "project_id": None, "app_name": None, field: value}
            as_user(conn, ALICE, None)
            expect_error(conn, "22023", field, "select memsub.session_create(%s, %s, %s)",
                         [names["session_id"], names["project_id"], names["app_name"]])
    column = "id" if field == "session_id" else field
    with db.connect() as conn:
        for value, accepted in (("z" * 128, True), ("z" * 129, False), ("a b", False)):
            names = {"id": "s", "project_id": None, "app_name": None, column: value}
            insert = ("insert into memsub.sessions (tenant_id, id, project_id, app_name)"
                      " values (gen_random_uuid(), %s, %s, %s)")
            params = [names["id"], names["project_id"], names["app_name"]]
            if accepted:
                conn.execute(insert, params)
            else:
                with pytest.raises(psycopg.errors.CheckViolation, match=f"sessions_{column}_format"):
                    conn.execute(insert, params)
            conn.rollback()


def test_a_state_key_names_its_namespace_and_a_key_of_one_to_256_characters(db):
    with db.connect("app") as conn:
        new_session(conn, "s-state", project=None, app=None)
        accepted = {"temp:" + "k" * 256: 1, f"user:{ALICE}:prefs:" + "é" * 256: 2, "session:s-state:a b": 3}
        as_user(conn, ALICE, "s-state")
        one(conn, "select id from memsub.session_merge_state('s-state', %s)", [json.dumps(accepted)])
        conn.commit()
        for key in ("temp:" + "k" * 257, f"user:{ALICE}:" + "é" * 257, "temp: k", "temp:", "session:s-state",
                    "temp:a:", "other:k", "user::k"):
            as_user(conn, ALICE, "s-state")
            expect_error(conn, "22023", "state_delta", "select memsub.session_merge_state('s-state', %s)",
                         [json.dumps({key: 1})])
    state: Any = ground_truth(db, "select state from memsub.sessions where id = 's-state'")[0]["state"]
    assert state == accepted


def test_an_api_key_is_msk_16_hex_digits_and_64_hex_digits(db):
    """The shape is refused before any lookup (28000 naming api_key); a key of the right shape that names no
    stored key is refused after one."""
    well_formed = "msk_" + "0" * 16 + "_" + "0" * 64
    with db.connect("app") as conn:
        for key, message in (
                (well_formed, "unknown, revoked or expired"),
                ("msk_" + "0" * 17 + "_" + "0" * 63, "not an API key"),  # as long, the parts the wrong size
                ("msk_" + "0" * 15 + "_" + "0" * 65, "not an API key"),
                ("msk_" + "0" * 16 + "_" + "0" * 63, "not an API key"),
                ("msk_" + "0" * 16 + "_" + "0" * 65, "not an API key"),
                ("msk_" + "0" * 16 + "_" + "0" * 63 + "G", "not an API key")):
            error = expect_error(conn, "28000", "api_key", "select memsub.authenticate_api_key(%s)", [key])
            assert message in str(error), key


def test_a_document_hash_is_64_lower_case_hex_digits(db):
    text = "a short note"
    ingest = "select status from memsub.document_ingest(%s, %s, 'md', %s, '[{\"start_char\": 0, \"end_char\": 12}]')"
    with db.connect("app") as conn:
        as_user(conn, ALICE, None)
        assert one(conn, ingest, ["notes/a.md", "a" * 64, text]) == {"status": "created"}
        conn.commit()
        for bad in ("a" * 63, "a" * 65, "A" * 64, "g" * 64, ""):
            as_user(conn, ALICE, None)
            expect_error(conn, "22023", "hash", ingest, ["notes/b.md", bad, text])
    with db.connect() as conn:
        for value, accepted in (("b" * 64, True), ("b" * 65, False), ("B" * 64, False)):
            update = "update memsub.document_index set hash = %s"
            if accepted:
                conn.execute(update, [value])
            else:
                with pytest.raises(psycopg.errors.CheckViolation, match="document_index_hash_format"):
                    conn.execute(update, [value])
            conn.rollback()
