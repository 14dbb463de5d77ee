"""Consolidation job (seed 001 section 4.3): conflicts, pluggable strategies, consolidated_into, audit."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from helpers import Background, after_commit
from session_helpers import ALICE, BOB, as_user, expect_error, ground_truth, one, remember_short_term, rows


def admin(conn: psycopg.Connection[Any]) -> None:
    as_user(conn, ALICE, roles=["tenant_admin"])


def put(conn: psycopg.Connection[Any], namespace: str, key: str, *values: Any) -> None:
    """Write successive versions of a key, each stating the version before it."""
    current = rows(conn, "select version from memsub.memory_get(%s, %s)", [namespace, key])
    version = current[0]["version"] if current else None
    for value in values:
        version = one(
            conn,
            "select version from memsub.memory_write(%s, %s, %s::jsonb, %s)",
            [namespace, key, json.dumps(value), version],
        )["version"]


def test_last_write_wins_consolidates_every_conflict_once(db):
    with db.connect("app") as conn:
        as_user(conn, BOB)
        put(conn, f"user:{BOB}:preferences", "style", {"tone": "dry"}, {"tone": "warm", "length": "short"})
        conn.commit()
    with db.connect("tenant_admin") as conn:
        admin(conn)
        put(conn, "project:schema_redesign:status", "phase", "phase1", "phase2", "phase3")
        put(conn, "project:schema_redesign:status", "owner", "alice")  # one version: no conflict
        put(conn, "app:abathur", "gone", 1, 2)
        one(conn, "select memsub.memory_delete('app:abathur', 'gone', 2)")  # deleted: no conflict
        conn.commit()
        admin(conn)
        report = rows(conn, "select * from memsub.consolidate_memories()")
        conn.commit()
    assert [
        (r["namespace"], r["key"], r["version"], r["consolidated_versions"], r["outcome"]) for r in report
    ] == [
        ("project:schema_redesign:status", "phase", 4, [1, 2, 3], "consolidated"),
        (f"user:{BOB}:preferences", "style", 3, [1, 2], "consolidated"),
    ]
    phase = ground_truth(
        db,
        "select id, version, value, metadata from memsub.memory_entries where key = 'phase' order by version",
    )
    new_id = str(phase[-1]["id"])
    assert phase[-1]["value"] == "phase3"
    assert phase[-1]["metadata"]["strategy"] == "last_write_wins"
    assert phase[-1]["metadata"]["consolidated_from"] == [str(p["id"]) for p in phase[:3]]
    assert [p["metadata"].get("consolidated_into") for p in phase] == [new_id, new_id, new_id, None]
    style = ground_truth(
        db, "select value from memsub.memory_entries where key = 'style' order by version desc limit 1"
    )
    assert style == [{"value": {"tone": "warm", "length": "short"}}]

    audit = ground_truth(
        db,
        "select key, version, memory_entry_id, details from memsub.audit "
        "where operation = 'memory_consolidate' order by id",
    )
    assert [(a["key"], a["version"], a["details"]["consolidated_versions"]) for a in audit] == [
        ("phase", 4, [1, 2, 3]),
        ("style", 3, [1, 2]),
    ]
    assert str(audit[0]["memory_entry_id"]) == new_id

    # Nothing left to consolidate until a key gets another version.
    with db.connect("tenant_admin") as conn:
        admin(conn)
        assert rows(conn, "select * from memsub.consolidate_memories()") == []
        put(conn, "project:schema_redesign:status", "phase", "phase4")
        report = rows(conn, "select key, version, consolidated_versions from memsub.consolidate_memories()")
        assert report == [{"key": "phase", "version": 6, "consolidated_versions": [4, 5]}]


def test_merge_objects_strategy_and_namespace_prefix(db):
    with db.connect("tenant_admin") as conn:
        admin(conn)
        put(conn, "project:p1", "config", {"a": 1, "b": 1}, {"b": 2}, {"c": 3})
        put(conn, "project:p2", "config", {"x": 1}, {"y": 2})
        conn.commit()
        admin(conn)
        report = rows(
            conn,
            "select namespace, version, strategy "
            "from memsub.consolidate_memories('merge_objects', 'project:p1')",
        )
        conn.commit()
    assert report == [{"namespace": "project:p1", "version": 4, "strategy": "merge_objects"}]
    assert ground_truth(
        db, "select value from memsub.memory_entries where namespace = 'project:p1' and version = 4"
    ) == [{"value": {"a": 1, "b": 2, "c": 3}}]
    assert ground_truth(
        db, "select count(*) as n from memsub.memory_entries where namespace = 'project:p2'"
    ) == [{"n": 2}]


def test_a_strategy_is_a_function_added_to_the_schema(db):
    with db.connect() as superuser:
        superuser.execute("""
            create function memsub.consolidation_longest(p_versions jsonb) returns jsonb
            language sql immutable set search_path = pg_catalog as $$
                select v -> 'value' from jsonb_array_elements(p_versions) v
                 order by length((v -> 'value')::text) desc, (v ->> 'version')::int desc limit 1 $$""")
        superuser.commit()
    with db.connect("tenant_admin") as conn:
        admin(conn)
        put(conn, "app:abathur", "summary", "a long first summary", "short")
        admin(conn)
        one(conn, "select * from memsub.consolidate_memories('longest')")
        assert one(conn, "select value from memsub.memory_get('app:abathur', 'summary')") == {
            "value": "a long first summary"
        }


def test_consolidation_needs_an_admin_and_a_known_strategy(db):
    with db.connect("tenant_admin") as conn:
        admin(conn)
        put(conn, "app:abathur", "k", 1, 2)
        conn.commit()
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        expect_error(conn, "42501", None, "select * from memsub.consolidate_memories()")
    with db.connect("tenant_admin") as conn:
        as_user(conn, ALICE)
        expect_error(conn, "42501", "strategy", "select * from memsub.consolidate_memories()")
        admin(conn)
        error = expect_error(
            conn, "22023", "strategy", "select * from memsub.consolidate_memories('llm_magic')"
        )
        assert "llm_magic" in str(error)
        admin(conn)
        expect_error(
            conn, "22023", "strategy", "select * from memsub.consolidate_memories('x; drop table t')"
        )
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 2}]
    assert ground_truth(
        db, "select count(*) as n from memsub.audit where operation = 'memory_consolidate'"
    ) == [{"n": 0}]


def test_the_consolidated_version_keeps_what_the_live_entry_carried(db):
    """The new version replaces the live one: it keeps its vector (when the value is the live one's), its tier, its
    importance and decay state and its metadata, beside consolidated_from; before, an STM entry became LTM, its
    importance 0.5, and it was no longer found by meaning."""
    ns = f"user:{ALICE}:notes"
    vector = [0.0] * 1536
    vector[7] = 1.0
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        one(conn, "select memsub.memory_remember(%s, 'tea', '\"green\"', 'STM', 0.2, null, 'semantic', "
                  "'{\"source\": \"chat\"}')", [ns])
        one(conn, "select memsub.memory_remember(%s, 'tea', '\"oolong\"', 'STM', 0.3, 1, 'semantic', "
                  "'{\"source\": \"chat 2\"}')", [ns])
        conn.commit()
    with db.connect() as superuser:  # the live version's vector, as memory_write with an embedding stores it
        superuser.execute("update memsub.memory_entries set embedding = %s::vector, decay_weight = 2.5, "
                          "last_access_ts = '2026-01-02Z' where key = 'tea' and version = 2", [str(vector)])
        superuser.commit()
    with db.connect("tenant_admin") as conn:
        admin(conn)
        report = rows(conn, "select version, outcome from memsub.consolidate_memories()")
        conn.commit()
    assert report == [{"version": 3, "outcome": "consolidated"}]
    live = ground_truth(db, "select value, memory_tier, importance, decay_weight, last_access_ts, "
                            "embedding is not null as has_vector, metadata - 'consolidated_from' as metadata "
                            "from memsub.memory_entries where key = 'tea' and version = 3")[0]
    assert {k: v for k, v in live.items() if k != "last_access_ts"} == {
        "value": "oolong", "memory_tier": "STM", "importance": 0.3, "decay_weight": 2.5, "has_vector": True,
        "metadata": {"source": "chat 2", "strategy": "last_write_wins"}}
    assert live["last_access_ts"] is not None


def test_a_write_committed_while_a_key_is_consolidated_is_kept_and_the_key_skipped(db):
    """A strategy may take its time (a model's verdict): a version committed meanwhile must not be buried under a
    consolidation of the versions before it; the key is reported skipped, as documented."""
    ns = f"user:{ALICE}:n"
    with db.connect() as superuser:
        superuser.execute("create function memsub.consolidation_slow(p jsonb) returns jsonb language sql "
                          "as $$ select p -> -1 -> 'value' from (select pg_sleep(1.5)) s $$")
        superuser.execute("grant execute on function memsub.consolidation_slow(jsonb) to public")
        superuser.commit()
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        put(conn, ns, "k", "v1", "v2")
        conn.commit()
    result: dict[str, Any] = {}

    def consolidate() -> None:
        with db.connect("tenant_admin") as conn:
            admin(conn)
            result["report"] = rows(conn, "select key, version, outcome from memsub.consolidate_memories('slow')")
            conn.commit()

    worker = threading.Thread(target=consolidate)
    worker.start()
    time.sleep(0.5)
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        put(conn, ns, "k", "user-v3")
        conn.commit()
    worker.join()
    assert result["report"] == [{"key": "k", "version": None, "outcome": "skipped"}]
    versions = ground_truth(db, "select version, value from memsub.memory_entries where key = 'k' order by version")
    assert versions == [{"version": 1, "value": "v1"}, {"version": 2, "value": "v2"},
                        {"version": 3, "value": "user-v3"}]


def test_a_key_whose_consolidation_is_over_a_limit_is_reported_and_the_others_done(db):
    """merge_objects of two objects each under max_json_bytes can make one over it. That key cannot be written; it
    is reported too_large and left as it is, and the run goes on: before, the 54000 of that one key aborted the
    whole run, on every run, so no other key of the tenant was ever consolidated again."""
    ns = f"user:{ALICE}:n"
    with db.connect() as superuser:
        superuser.execute("insert into memsub.limits (name, value) values ('max_json_bytes', 4096)")
        superuser.commit()
    half = {f"field{i}": "x" * 50 for i in range(40)}  # about 2.5 kB each, 5 kB merged
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        put(conn, ns, "big", {f"a{k}": v for k, v in half.items()}, {f"b{k}": v for k, v in half.items()})
        put(conn, ns, "small", {"a": 1}, {"b": 2})
        conn.commit()
    for _ in range(2):  # the next run reports it again
        with db.connect("tenant_admin") as conn:
            admin(conn)
            report = rows(conn, "select key, version, consolidated_versions, outcome "
                                "from memsub.consolidate_memories('merge_objects')")
            conn.commit()
        assert report[0] == {"key": "big", "version": None, "consolidated_versions": [1, 2], "outcome": "too_large"}
        assert report[1:] in ([{"key": "small", "version": 3, "consolidated_versions": [1, 2],
                                "outcome": "consolidated"}], [])
    assert ground_truth(db, "select key, max(version) as version, "
                            "count(*) filter (where metadata ? 'consolidated_into') as marked "
                            "from memsub.memory_entries group by key order by key") == [
        {"key": "big", "version": 2, "marked": 0}, {"key": "small", "version": 3, "marked": 2}]


Call = tuple[psycopg.Connection[Any], Callable[[], Any]]


def _one_then_the_other(db: Any, first: Call, second: Call) -> tuple[Any, Background]:
    """Runs the first call, its transaction left open, then the second until it waits for a row the first holds;
    commits the first and returns its result and the finished second call."""
    (holder, held), (conn, work) = first, second
    result = held()
    return result, after_commit(db, holder, conn, work)


def _touched_and_consolidated(db: Any, touch_first: bool) -> list[dict[str, Any]]:
    """An access (memory_touch) of a key's live version and a consolidation of the key, one holding its row while
    the other starts; returns the key's versions as stored."""
    ns = f"user:{ALICE}:notes"
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        put(conn, ns, "tea", "green", "oolong")
        conn.commit()
    touch = "select version from memsub.memory_touch(%s, 'tea')"
    consolidate = "select version, outcome from memsub.consolidate_memories()"
    with db.connect("app") as toucher, db.connect("tenant_admin") as consolidator:
        as_user(toucher, ALICE)
        admin(consolidator)
        touching = (toucher, lambda: one(toucher, touch, [ns]))
        consolidating = (consolidator, lambda: rows(consolidator, consolidate))
        _, second = _one_then_the_other(db, *((touching, consolidating) if touch_first
                                             else (consolidating, touching)))
    assert second.error is None, second.error
    return ground_truth(db, "select version, decay_weight > 1 as accessed from memsub.memory_entries "
                            "where key = 'tea' order by version")


def test_an_access_committed_while_its_key_is_consolidated_is_kept(db):
    """The consolidated version keeps the live version's decay state; an access that committed while the
    consolidation waited for the live version is part of that state. Before, the consolidation copied the state
    it had read before the access, and the access was lost."""
    versions = _touched_and_consolidated(db, touch_first=True)
    assert versions[-1] == {"version": 3, "accessed": True}


def test_an_access_that_waited_for_a_consolidation_goes_to_the_new_version(db):
    """An access waiting for a consolidation of its key records itself on the version the consolidation wrote,
    the key's live version once it commits. Before, it was recorded on the version consolidated into it, which
    no reader takes any more."""
    versions = _touched_and_consolidated(db, touch_first=False)
    assert versions[-1] == {"version": 3, "accessed": True}


def _promoted_and_consolidated(db: Any, promote_first: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A promotion (memory_maintenance) of a key's live short-term version and a consolidation of the key, one
    holding its row while the other starts; returns the promotion's report and the key's versions as stored."""
    ns = f"user:{ALICE}:notes"
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        remember_short_term(conn, ns, "tea", "green", "oolong")
        conn.commit()
    promote = "select version, outcome from memsub.memory_maintenance(p_threshold => 0.5)"
    consolidate = "select version, outcome from memsub.consolidate_memories()"
    with db.connect("tenant_admin") as promoter, db.connect("tenant_admin") as consolidator:
        admin(promoter)
        admin(consolidator)
        promoting = (promoter, lambda: rows(promoter, promote))
        consolidating = (consolidator, lambda: rows(consolidator, consolidate))
        first, second = _one_then_the_other(db, *((promoting, consolidating) if promote_first
                                                  else (consolidating, promoting)))
    assert second.error is None, second.error
    if promote_first:
        report = first
    else:
        assert isinstance(second.result, list)
        report = second.result
    return report, ground_truth(db, "select version, short_term, promoted_at is not null as promoted "
                                    "from memsub.memory_entries where key = 'tea' order by version")


def test_a_promotion_committed_while_its_key_is_consolidated_is_kept(db):
    """The consolidated version keeps the live version's tier: a promotion that committed while the consolidation
    waited for the live version is carried over to it."""
    report, versions = _promoted_and_consolidated(db, promote_first=True)
    assert report == [{"version": 2, "outcome": "promoted"}]
    assert versions[-1] == {"version": 3, "short_term": False, "promoted": True}


def test_a_promotion_passes_a_key_being_consolidated_and_the_next_run_promotes_the_new_version(db):
    """A promotion meeting a consolidation of its key in progress does not wait for it (waiting would hold every
    entry the run locked before, and the applications touching them): it passes the key, and never promotes the
    version consolidated away, which no reader takes any more. The next run promotes the version the consolidation
    wrote, the key's live version."""
    ns = f"user:{ALICE}:notes"
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        remember_short_term(conn, ns, "tea", "green", "oolong")
        conn.commit()
    promote = "select version, outcome from memsub.memory_maintenance(p_threshold => 0.5)"
    with db.connect("tenant_admin") as promoter, db.connect("tenant_admin") as consolidator:
        admin(consolidator)
        assert rows(consolidator, "select version, outcome from memsub.consolidate_memories()")
        promoter.execute("set lock_timeout = '5s'")  # a wait for the consolidation ends as an error
        admin(promoter)
        assert rows(promoter, promote) == []  # the consolidation holds the key: passed, not waited for
        promoter.commit()
        consolidator.commit()
        admin(promoter)
        assert rows(promoter, promote) == [{"version": 3, "outcome": "promoted"}]
        promoter.commit()
    versions = ground_truth(db, "select version, short_term, promoted_at is not null as promoted "
                                "from memsub.memory_entries where key = 'tea' order by version")
    assert [v for v in versions if v["promoted"]] == [{"version": 3, "short_term": False, "promoted": True}]
