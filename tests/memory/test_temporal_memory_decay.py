"""Memory types (STM, LTM, Procedural), importance, decay and the STM -> LTM promotion rule."""

from __future__ import annotations

import math

import pytest

from memsub.errors import ContextError, InvalidInput

from doc_helpers import tenant_session
from helpers import TENANT_A, set_context
from session_helpers import ALICE, BOB, expect_error, ground_truth, rows

NOTES = f"user:{ALICE}:notes"


def test_memory_types_map_onto_memory_entries(db):
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        stm = session.memory.remember(NOTES, "draft", "first idea", tier="STM", importance=0.4)
        ltm = session.memory.remember(NOTES, "fact", "the sky is blue", tier="LTM")
        how = session.memory.remember(NOTES, "deploy", ["build", "migrate", "restart"], tier="Procedural")
        # A plain seed 001 write is long-term memory.
        plain = session.fetch("select memory_tier, memory_type from memsub.memory_write(%s, 'plain', '1'::jsonb)",
                              [NOTES])[0]
        # A new version written through memory_write is long-term again.
        rewritten = session.fetch("select memory_tier, version from memsub.memory_write(%s, 'draft', '2'::jsonb, 1)",
                                  [NOTES])[0]
    assert (stm.memory_tier, stm.memory_type, stm.importance) == ("STM", "semantic", 0.4)
    assert (ltm.memory_tier, how.memory_tier, how.memory_type) == ("LTM", "Procedural", "procedural")
    assert plain == {"memory_tier": "LTM", "memory_type": "semantic"}
    assert rewritten == {"memory_tier": "LTM", "version": 2}
    with pytest.raises(InvalidInput) as info, tenant_session(db.dsn("app"), user=ALICE) as session:
        session.memory.remember(NOTES, "x", 1, tier="Working")  # type: ignore[arg-type]
    assert info.value.field == "tier"
    with pytest.raises(InvalidInput) as info, tenant_session(db.dsn("app"), user=ALICE) as session:
        session.memory.remember(NOTES, "x", 1, importance=1.5)
    assert info.value.field == "importance"


def test_an_access_adds_one_to_the_decayed_strength(db):
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        session.memory.remember(NOTES, "topic", "pgvector", importance=0.9)
        touched = session.memory.touch(NOTES, "topic")
    assert touched.last_access_ts is not None and touched.decay_weight == pytest.approx(2.0, abs=1e-3)
    # Pretend the last access was two half-lives ago: strength 2 * 1/4 = 0.5, so the next access gives 1.5.
    with db.connect() as conn:
        conn.execute("update memsub.memory_entries set last_access_ts = now() - interval '14 days' where key = 'topic'")
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        again = session.memory.touch(NOTES, "topic")
    assert again.decay_weight == pytest.approx(1.5, abs=1e-3)
    # Every memory function writes one audit row per operation: each access too, naming the entry and its strength.
    audit = ground_truth(db, "select memory_entry_id, namespace, key, version, user_id, details from memsub.audit "
                             "where operation = 'memory_touch' order by id")
    assert [(a["memory_entry_id"], a["namespace"], a["key"], a["version"], a["user_id"]) for a in audit] == [
        (touched.id, NOTES, "topic", 1, ALICE), (touched.id, NOTES, "topic", 1, ALICE)]
    assert [a["details"]["decay_weight"] for a in audit] == pytest.approx([2.0, 1.5], abs=1e-3)
    # Other users may not record accesses to (or even see) Alice's memory.
    with pytest.raises(ContextError), tenant_session(db.dsn("app"), user=BOB) as session:
        session.memory.touch(NOTES, "topic")


def test_maintenance_promotes_stm_by_importance_times_strength(db):
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        session.memory.remember(NOTES, "important", "the migration plan", importance=0.9)
        session.memory.remember(NOTES, "trivial", "the weather", importance=0.2)
        session.memory.remember(NOTES, "stale", "an old lead", importance=0.9)
        session.memory.remember(NOTES, "rule", "always run make test", tier="LTM", importance=0.9)
        for key in ("important", "trivial", "stale"):
            session.memory.touch(NOTES, key)  # strength 2
    with db.connect() as conn:  # the stale one was last used three half-lives ago: strength 2/8
        conn.execute("update memsub.memory_entries set last_access_ts = now() - interval '21 days' where key = 'stale'")

    with pytest.raises(ContextError), tenant_session(db.dsn("app"), user=ALICE) as session:
        session.memory.maintenance()
    with tenant_session(db.dsn("tenant_admin"), roles=["tenant_admin"]) as admin:
        report = {r.key: r for r in admin.memory.maintenance()}
    assert set(report) == {"important", "trivial", "stale"}, "only STM entries are looked at"
    assert report["important"].outcome == "promoted" and report["important"].score == pytest.approx(1.8, abs=1e-3)
    assert report["trivial"].outcome == "kept" and report["trivial"].score == pytest.approx(0.4, abs=1e-3)
    assert report["stale"].outcome == "kept" and report["stale"].strength == pytest.approx(0.25, abs=1e-3)

    tiers = ground_truth(db, "select key, memory_tier, promoted_at is not null as promoted from memsub.memory_entries "
                             "order by key")
    assert [(t["key"], t["memory_tier"], t["promoted"]) for t in tiers] == [
        ("important", "LTM", True), ("rule", "LTM", False), ("stale", "STM", False), ("trivial", "STM", False)]
    audit = ground_truth(db, "select key, details from memsub.audit where operation = 'memory_promote'")
    assert [a["key"] for a in audit] == ["important"]
    assert audit[0]["details"]["from"] == "STM" and audit[0]["details"]["to"] == "LTM"

    # A promoted entry is not looked at again; a trivial memory accessed often enough is promoted too.
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        for _ in range(4):  # strength about 6, score about 1.2
            session.memory.touch(NOTES, "trivial")
    with tenant_session(db.dsn("tenant_admin"), roles=["tenant_admin"]) as admin:
        second = {r.key: r.outcome for r in admin.memory.maintenance()}
    assert second == {"trivial": "promoted", "stale": "kept"}


def test_strength_formula_and_argument_checks(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        value = rows(conn, "select memsub.memory_strength(3, now() - interval '7 days', now(), now(), "
                           "interval '7 days') as s")[0]["s"]
        assert math.isclose(value, 1.5, rel_tol=1e-6)
        set_context(conn, TENANT_A, roles=[])
        expect_error(conn, "22023", "half_life", "select memsub.memory_touch('project:x', 'k', interval '0 seconds')")
