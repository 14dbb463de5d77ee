"""The typed Python client of sessions and namespaced memory (memsub.sessions)."""

from __future__ import annotations

import threading

import pytest

from memsub import sessions
from memsub.client import Substrate
from memsub.errors import ConflictError, ContextError, InvalidInput, NotFound, StateError

from helpers import TENANT_A
from session_helpers import ALICE, ground_truth


def test_session_flow_through_the_client(db):
    with Substrate(db.dsn("app"), max_size=2) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="s1") as memory:
            created = sessions.create_session(memory, "s1", project_id="schema_redesign", app_name="abathur")
            assert created.status == "active" and created.user_id == ALICE
            sessions.append_event(
                memory,
                "s1",
                {"text": "hello"},
                {f"user:{ALICE}:preferences:style": "concise", "temp:turn:n": 1},
            )
            task = sessions.create_task(memory, "answer", {"q": 1}, session_id="s1")
            agent = sessions.spawn_agent(memory, "responder", task.id)
            sessions.set_actor(memory, agent.id)
            checkpoint = sessions.save_checkpoint(memory, task.id, {"step": 1}, label="first")
            entry = sessions.write_memory(memory, "session:s1:progress", "step", 1)
            assert (entry.version, entry.namespace_kind, entry.namespace_owner) == (1, "session", "s1")
            context = {c.name: c for c in sessions.memory_context(memory)}
            assert context["turn:n"].precedence == 1 and context["progress:step"].value == 1
            assert sessions.restore_checkpoint(memory, checkpoint.id).state == {"step": 1}
            done = sessions.set_task_status(memory, task.id, "completed", result={"a": 2})
            assert done.status == "completed"
            dimension = memory.fetch("select memsub.vector_dimension() as d")[0]["d"]
            document = sessions.put_document(memory, "docs/x.md", [0.25, 0.5] * (dimension // 2), {"k": "v"})
            assert sessions.get_document(memory, "docs/x.md") == document
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="s1") as memory:
            ended = sessions.terminate_session(memory, "s1")
            assert ended.migrated_keys == 1
            stored = sessions.get_memory(memory, f"user:{ALICE}:preferences", "style")
            assert stored is not None and stored.value == "concise"
            trail = sessions.audit_trail(memory, session_id="s1")
            assert [a.operation for a in trail][-1] == "session_terminate"
            assert any(a.agent_id == agent.id for a in trail)
            session_row = sessions.get_session(memory, "s1")
            assert session_row is not None and session_row.state == {}


def test_client_errors_are_typed(db):
    ns = f"user:{ALICE}:preferences"
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE) as memory:
            sessions.write_memory(memory, ns, "k", 1)
            sessions.write_memory(memory, ns, "k", 2, expected_version=1)
        with pytest.raises(ConflictError) as conflict, substrate.tenant(TENANT_A, user_id=ALICE) as memory:
            sessions.write_memory(memory, ns, "k", 3, expected_version=1)
        assert conflict.value.field == "expected_version" and conflict.value.sqlstate == "40001"
        with pytest.raises(ContextError), substrate.tenant(TENANT_A, user_id=ALICE) as memory:
            sessions.write_memory(memory, "project:p", "k", 1)
        with pytest.raises(InvalidInput) as invalid, substrate.tenant(TENANT_A, user_id=ALICE) as memory:
            sessions.write_memory(memory, "temp:x", "k", 1)
        assert invalid.value.field == "namespace"
        with pytest.raises(NotFound), substrate.tenant(TENANT_A, user_id=ALICE) as memory:
            sessions.append_event(memory, "nope", {})
        with substrate.tenant(TENANT_A, user_id=ALICE) as memory:
            sessions.create_session(memory, "s2")
            sessions.terminate_session(memory, "s2")
        with pytest.raises(StateError), substrate.tenant(TENANT_A, user_id=ALICE) as memory:
            sessions.end_turn(memory, "s2")


def test_update_memory_retries_conflicts_and_loses_nothing(db):
    ns = f"user:{ALICE}:counters"
    writers, updates = 3, 5
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            with Substrate(db.dsn("app"), max_size=1) as substrate:
                for _ in range(updates):
                    with substrate.tenant(TENANT_A, user_id=ALICE) as memory:
                        sessions.update_memory(memory, ns, "hits", lambda value: (value or 0) + 1)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=worker) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    final = ground_truth(
        db,
        "select max(version) as version, (array_agg(value order by version desc))[1] as value "
        "from memsub.memory_entries where key = 'hits'",
    )
    assert final == [{"version": writers * updates, "value": writers * updates}]
