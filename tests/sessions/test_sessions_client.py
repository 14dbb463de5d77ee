"""The typed Python client of sessions and namespaced memory (memsub.sessions)."""

from __future__ import annotations

import pytest

from memsub.client import Substrate
from memsub.errors import ConflictError, ContextError, InvalidInput, LocalValidationError, NotFound, StateError

from doc_helpers import tenant_session
from helpers import TENANT_A, in_threads
from session_helpers import ALICE, ground_truth


def test_session_flow_through_the_client(db):
    with Substrate(db.dsn("app"), max_size=2) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="s1") as session:
            created = session.sessions.create("s1", project_id="schema_redesign", app_name="abathur")
            assert created.status == "active" and created.user_id == ALICE
            appended = session.sessions.append_event(
                 "s1",
                 {"text": "hello"},
                 {f"user:{ALICE}:preferences:style": "concise", "temp:turn:n": 1},
            )
            session.sessions.append_event("s1", {"text": "again"})
            assert appended.event_count == 1
            events = session.sessions.get_events("s1")
            assert [(e.position, e.event) for e in events] == [(0, {"text": "hello"}), (1, {"text": "again"})]
            assert [e.position for e in session.sessions.get_events("s1", after_position=0, limit=5)] == [1]
            task = session.sessions.task_create("answer", {"q": 1}, session_id="s1")
            agent = session.sessions.agent_spawn("responder", task.id)
            session.packets.set_actor(agent.id)
            checkpoint = session.sessions.checkpoint_save(task.id, {"step": 1}, label="first")
            entry = session.memory.write("session:s1:progress", "step", 1)
            assert (entry.version, entry.namespace_kind, entry.namespace_owner) == (1, "session", "s1")
            context = {c.name: c for c in session.memory.context()}
            assert context["turn:n"].precedence == 1 and context["progress:step"].value == 1
            assert session.sessions.checkpoint_restore(checkpoint.id).state == {"step": 1}
            done = session.sessions.task_set_status(task.id, "completed", result={"a": 2})
            assert done.status == "completed"
            dimension = session.vector_dimension()
            document = session.documents.index_put("docs/x.md", [0.25, 0.5] * (dimension // 2), {"k": "v"})
            assert session.documents.index_get("docs/x.md") == document
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="s1") as session:
            ended = session.sessions.terminate("s1")
            assert ended.migrated_keys == 1
            stored = session.memory.get(f"user:{ALICE}:preferences", "style")
            assert stored is not None and stored.value == "concise"
            trail = session.packets.audit_trail(session_id="s1")
            assert [a.operation for a in trail][-1] == "session_terminate"
            assert any(a.agent_id == agent.id for a in trail)
            session_row = session.sessions.get("s1")
            assert session_row is not None and session_row.state == {}


def test_client_errors_are_typed(db):
    ns = f"user:{ALICE}:preferences"
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.memory.write(ns, "k", 1)
            session.memory.write(ns, "k", 2, expected_version=1)
        with pytest.raises(ConflictError) as conflict, substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.memory.write(ns, "k", 3, expected_version=1)
        assert conflict.value.field == "expected_version" and conflict.value.sqlstate == "40001"
        with pytest.raises(ContextError), substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.memory.write("project:p", "k", 1)
        with pytest.raises(InvalidInput) as invalid, substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.memory.write("temp:x", "k", 1)
        assert invalid.value.field == "namespace"
        with pytest.raises(NotFound), substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.sessions.append_event("nope", {})
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.sessions.create("s2")
            session.sessions.terminate("s2")
        with pytest.raises(StateError), substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.sessions.end_turn("s2")


def test_a_memory_value_of_none_is_refused_naming_it_and_writes_nothing(db):
    """A version's value is any JSON but null: memsub.memory_write requires one (memory_delete deletes), the HTTP
    API refuses null, and a null value would read as no entry at all (session.memory.update gets None for both)."""
    ns = f"user:{ALICE}:preferences"
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        for write in (lambda session: session.memory.write(ns, "k", None),
                      lambda session: session.memory.remember(ns, "k", None),
                      lambda session: session.memory.update(ns, "k", lambda value: None)):
            with pytest.raises(LocalValidationError) as refused, \
                    substrate.tenant(TENANT_A, user_id=ALICE) as session:
                write(session)
            assert refused.value.field == "value" and refused.value.sqlstate == "23502", refused.value
            assert "null" in str(refused.value)
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 0}]


@pytest.mark.parametrize("per_call", [False, True])
def test_update_memory_retries_conflicts_and_loses_nothing(db, per_call):
    """In a block each attempt is a savepoint; in per-call mode the read and the write are transactions of their own.
    Each lost race is another writer's committed update, so one call loses at most (writers - 1) * updates races:
    with one attempt more than that no call can run out of attempts, however the threads are scheduled."""
    ns = f"user:{ALICE}:counters"
    writers, updates = (2 if per_call else 3), 5
    attempts = (writers - 1) * updates + 1

    def worker(_n: int) -> None:
        with Substrate(db.dsn("app"), max_size=1) as substrate:
            if per_call:
                with substrate.tenant(TENANT_A, user_id=ALICE, per_call=True) as session:
                    for _ in range(updates):
                        session.memory.update(ns, "hits", lambda value: (value or 0) + 1, attempts=attempts)
                return
            for _ in range(updates):
                with substrate.tenant(TENANT_A, user_id=ALICE) as session:
                    session.memory.update(ns, "hits", lambda value: (value or 0) + 1, attempts=attempts)

    in_threads(worker, writers)
    final = ground_truth(
        db,
        "select max(version) as version, (array_agg(value order by version desc))[1] as value "
        "from memsub.memory_entries where key = 'hits'",
    )
    assert final == [{"version": writers * updates, "value": writers * updates}]


def test_update_memory_keeps_the_kind_and_metadata_it_read(db):
    """update changes the value: the new version keeps the live entry's memory_type and metadata. Before, an episodic
    entry became semantic and its metadata was dropped, unless the caller passed them again."""
    ns = f"user:{ALICE}:notes"
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        session.memory.write(ns, "trip", {"days": 3}, memory_type="episodic", metadata={"source": "chat"})
        updated = session.memory.update(ns, "trip", lambda value: {"days": value["days"] + 1})
        fresh = session.memory.update(ns, "new", lambda value: 1)
        typed = session.memory.update(ns, "trip", lambda value: value, memory_type="semantic")
    assert (updated.version, updated.value, updated.memory_type, updated.metadata) == (
        2, {"days": 4}, "episodic", {"source": "chat"})
    assert (fresh.memory_type, fresh.metadata) == ("semantic", {})
    assert (typed.memory_type, typed.metadata) == ("semantic", {"source": "chat"})


def test_a_checkpoint_state_of_none_is_refused_naming_it_and_saves_nothing(db):
    """A checkpoint's state is the task state to resume from: JSON null (the client's None) is none, refused as a
    missing state (23502 naming state) as SQL NULL is, not saved as a checkpoint that restores to nothing."""
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            task = session.sessions.task_create("job")
        with pytest.raises(InvalidInput) as refused, substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.sessions.checkpoint_save(task.id, None)
        assert refused.value.field == "state" and refused.value.sqlstate == "23502", refused.value
    assert ground_truth(db, "select count(*) as n from memsub.checkpoints") == [{"n": 0}]
