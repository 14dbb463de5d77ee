"""Model-based test of sessions: random sequences of creates, events with state deltas, merges, ends of turns,
event reads by pages, terminations, tasks moving through their statuses and checkpoints, by ordinary logins (a
session's user, another user, another user whose context names the session, the same user in a second tenant),
compared with a model of what sql/710_sessions.sql, sql/720_tasks.sql and sql/730_checkpoints.sql promise:

- a session is seen and written by its user and by a context naming it (P0002 naming session_id for anyone else);
  a written session must be active (55000 naming session_id);
- a state delta sets keys and removes those whose value is null; temp: keys live until the end of the turn;
  a session writes temp:, session:<its id>: and user:<its user>: keys only (app: and another session's or user's
  key: 42501; a user: key written by a context of another user: 42501; a malformed key: 22023), naming the field;
- events keep their positions 0, 1, ...; a read returns at most limit of them after a position;
- termination is refused while tasks are open (unless they are cancelled with it), moves the user: keys into
  memory, clears the state; tasks move pending -> running -> final or pending -> final, never back nor to the
  same status; a finished task takes no sub-task; checkpoints are numbered 1, 2, ... per task and restore the
  session's state they copied into a session still active;
- memory_context answers each name by temp: > session: > user: (the state before memory entries within a level),
  with only the memory entries the caller may read.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from memsub.client import Substrate, TenantSession
from memsub.errors import MemsubError

from helpers import TENANT_A, TENANT_B, soak_factor
from model_helpers import attempt, refused, set_max_rows

T = TypeVar("T")
MAX_ROWS = 4  # memsub.limits' max_rows in this database: event reads reach it
# bob_in: bob's context naming the session acted on. Alice, who owns most sessions, acts most.
ACTORS = ["alice", "alice", "alice", "bob", "bob_in", "alice_b"]
FINAL = ("completed", "failed", "cancelled")
NEXT = {"pending": ("running", *FINAL), "running": FINAL}


@dataclass
class SessionModel:
    user: str
    active: bool = True
    state: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TaskModel:
    tenant: uuid.UUID
    session: str | None
    status: str = "pending"
    checkpoints: list[tuple[uuid.UUID, dict[str, Any] | None]] = field(default_factory=list)


_runs = itertools.count(1)


@pytest.fixture
def app(db: Any) -> Iterator[Substrate]:
    set_max_rows(db, MAX_ROWS)
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        yield substrate


def test_sessions_match_their_model(app: Substrate) -> None:

    class SessionsMachine(RuleBasedStateMachine):
        @initialize()
        def fresh(self) -> None:
            run = next(_runs)
            self.users = {"alice": str(uuid.UUID(int=run * 16 + 1)), "bob": str(uuid.UUID(int=run * 16 + 2))}
            self.ids = [f"r{run}-s{i}" for i in range(3)]
            self.sessions: dict[tuple[uuid.UUID, str], SessionModel] = {}
            self.tasks: dict[int, TaskModel] = {}
            # (tenant, user) -> the user: memory entries terminations wrote: full key -> value
            self.memory: dict[tuple[uuid.UUID, str], dict[str, Any]] = {}
            # Alice's session 0 and 1, bob's session 2, and alice's session 0 of the other tenant to begin with.
            for actor, i in (("alice", 0), ("alice", 1), ("bob", 2), ("alice_b", 0)):
                self.create(actor, i)

        def who(self, actor: str) -> tuple[uuid.UUID, str]:
            return (TENANT_B if actor == "alice_b" else TENANT_A), self.users["bob" if actor.startswith("bob")
                                                                                else "alice"]

        def call(self, actor: str, sid: str | None, what: Callable[[TenantSession], T]
                 ) -> tuple[T | None, MemsubError | None]:
            tenant, user = self.who(actor)

            def run() -> T:
                with app.tenant(tenant, user_id=user, session_id=sid if actor == "bob_in" else None) as session:
                    return what(session)
            return attempt(run)

        def visible(self, actor: str, sid: str) -> SessionModel | None:
            tenant, user = self.who(actor)
            found = self.sessions.get((tenant, sid))
            if found is None or not (found.user == user or actor == "bob_in"):
                return None
            return found

        def session_to_go_on(self, found: SessionModel | None, error: MemsubError | None) -> SessionModel | None:
            """The session a call went on with, or None when it had to be refused and was: P0002 for a session
            the caller cannot see, 55000 for a terminated one (both naming session_id)."""
            if found is None:
                refused(error, "P0002", "session_id")
                return None
            if not found.active:
                refused(error, "55000", "session_id")
                return None
            return found

        def task_seen(self, actor: str, task: TaskModel, sid: str | None) -> bool:
            """Whether the context of ``actor`` (naming ``sid``, for bob_in) reads the task: a task of a session is
            read where the session is; one without a session by the whole tenant."""
            tenant, user = self.who(actor)
            if task.tenant != tenant:
                return False
            if task.session is None:
                return True
            owner = self.sessions.get((tenant, task.session))
            return owner is not None and (owner.user == user or (actor == "bob_in" and task.session == sid))

        def delta(self, sid: str, owner: str, data: st.DataObject
                  ) -> tuple[dict[str, Any], tuple[str, str, str] | None]:
            """A state delta of keys of the session (values or removals) and at most one bad key, with its
            refusal."""
            other = self.users["bob"] if owner == self.users["alice"] else self.users["alice"]
            good = [f"temp:t{n}" for n in range(2)] + ["temp:x:y", f"session:{sid}:k", f"session:{sid}:p:q",
                                                        f"user:{owner}:pref", f"user:{owner}:notes:topic"]
            # (A key's last part may hold spaces, but not begin with one.)
            bad = {"app:demo:k": ("42501", "state_delta"), f"session:{sid}x:k": ("42501", "state_delta"),
                   f"user:{other}:pref": ("42501", "state_delta"), "temp": ("22023", "state_delta"),
                   "plain": ("22023", "state_delta"), f"user:{owner}:a: b": ("22023", "state_delta")}
            delta = data.draw(st.dictionaries(st.sampled_from(good), st.sampled_from([0, 1, 2, None]), max_size=3))
            if data.draw(st.integers(0, 4)) == 0:
                key = data.draw(st.sampled_from(sorted(bad)))
                delta[key] = 1
                return delta, (key, *bad[key])
            return delta, None

        def refusal_of_delta(self, actor: str, found: SessionModel, delta: dict[str, Any],
                             bad: tuple[str, str, str] | None) -> tuple[str, str] | None:
            """The refusal of the first failing key (the keys are checked in order)."""
            # user: keys are the session user's memory: a context of another user writes none of them.
            failing = [(k, "42501", "state_delta") for k in delta
                       if k.startswith("user:") and self.who(actor)[1] != found.user]
            failing += [bad] if bad is not None else []
            return min(failing)[1:] if failing else None

        @staticmethod
        def apply(state: dict[str, Any], delta: dict[str, Any]) -> None:
            for key, value in delta.items():
                if value is None:
                    state.pop(key, None)
                else:
                    state[key] = value

        @invariant()
        def database_matches_model(self) -> None:
            """What each user reads of the sessions and tasks is the model's, every event included."""
            if not hasattr(self, "tasks"):
                return
            for actor in ("alice", "bob", "alice_b"):
                tenant, user = self.who(actor)

                def read(s: TenantSession) -> tuple[Any, ...]:
                    sessions = s.connection.execute(
                        "select id, status, state, event_count from memsub.sessions where id = any(%s) order by id",
                        [self.ids]).fetchall()
                    tasks = s.connection.execute("select id, status from memsub.tasks where id = any(%s) order by id",
                                                 [sorted(self.tasks)]).fetchall()
                    events = {r["id"]: [(e.position, e.event) for e in self.pages(s, r["id"], None, MAX_ROWS)]
                              for r in sessions}
                    return sessions, tasks, events
                found, error = self.call(actor, None, read)
                assert error is None and found is not None
                sessions, tasks, events = found
                mine = sorted((sid, m) for (t, sid), m in self.sessions.items() if t == tenant and m.user == user)
                assert [(r["id"], r["status"], r["state"], r["event_count"]) for r in sessions] == [
                    (sid, "active" if m.active else "terminated", m.state, len(m.events)) for sid, m in mine]
                assert events == {sid: list(enumerate(m.events)) for sid, m in mine}
                # A task of a session is read where the session is (its user's context, here); one without a
                # session by the whole tenant.
                assert [(r["id"], r["status"]) for r in tasks] == [
                    (n, t.status) for n, t in sorted(self.tasks.items()) if t.tenant == tenant and (
                        t.session is None or self.sessions[(tenant, t.session)].user == user)]

        @rule(actor=st.sampled_from(["alice", "bob", "alice_b"]), i=st.integers(0, 2))
        def create(self, actor: str, i: int) -> None:
            tenant, user = self.who(actor)
            sid = self.ids[i]
            created, error = self.call(actor, None, lambda s: s.sessions.create(sid, app_name="demo"))
            if (tenant, sid) in self.sessions:
                refused(error, "23505", "session_id")
                return
            assert error is None, error
            assert created is not None and (created.id, created.status, created.state) == (sid, "active", {})
            self.sessions[(tenant, sid)] = SessionModel(user)

        def write_state(self, actor: str, i: int, data: st.DataObject, event: bool) -> None:
            sid = self.ids[i]
            found = self.visible(actor, sid)
            tenant, _ = self.who(actor)
            known = self.sessions.get((tenant, sid))
            delta, bad = self.delta(sid, known.user if known else self.users["alice"], data)
            if event:
                written, error = self.call(actor, sid, lambda s: s.sessions.append_event(
                    sid, {"n": len(found.events) if found else -1}, delta))
            else:
                written, error = self.call(actor, sid, lambda s: s.sessions.merge_state(sid, delta))
            found = self.session_to_go_on(found, error)
            if found is None:
                return
            refusal = self.refusal_of_delta(actor, found, delta, bad)
            if refusal is not None:
                refused(error, *refusal)
                return
            assert error is None, error
            self.apply(found.state, delta)
            if event:
                found.events.append({"n": len(found.events)})
            assert written is not None
            assert (written.state, written.event_count) == (found.state, len(found.events))

        @rule(actor=st.sampled_from(ACTORS), i=st.integers(0, 2), data=st.data())
        def append_event(self, actor: str, i: int, data: st.DataObject) -> None:
            self.write_state(actor, i, data, event=True)

        @rule(actor=st.sampled_from(ACTORS), i=st.integers(0, 2), data=st.data())
        def merge_state(self, actor: str, i: int, data: st.DataObject) -> None:
            self.write_state(actor, i, data, event=False)

        @rule(actor=st.sampled_from(ACTORS), i=st.integers(0, 2))
        def end_turn(self, actor: str, i: int) -> None:
            sid = self.ids[i]
            found = self.visible(actor, sid)
            ended, error = self.call(actor, sid, lambda s: s.sessions.end_turn(sid))
            found = self.session_to_go_on(found, error)
            if found is None:
                return
            assert error is None, error
            found.state = {k: v for k, v in found.state.items() if not k.startswith("temp:")}
            assert ended is not None and ended.state == found.state

        @rule(actor=st.sampled_from(ACTORS), i=st.integers(0, 2),
              after=st.integers(-1, 5) | st.none() | st.just(-2),
              limit=st.integers(1, MAX_ROWS) | st.sampled_from([None, 0, MAX_ROWS + 1]))
        def read_events(self, actor: str, i: int, after: int | None, limit: int | None) -> None:
            sid = self.ids[i]
            found = self.visible(actor, sid)
            read, error = self.call(actor, sid, lambda s: (s.sessions.get(sid),
                                                           s.sessions.get_events(sid, after, limit)))
            if after is not None and after < -1:
                refused(error, "22023", "after_position")
                return
            # Without a limit the SQL default (1000) is over this database's max_rows.
            if limit is not None and limit < 1:
                refused(error, "22023", "limit")
                return
            if limit is None or limit > MAX_ROWS:
                refused(error, "54000", "limit")
                return
            if found is None:
                refused(error, "P0002", "session_id")
                return
            assert error is None, error
            assert read is not None
            row, events = read
            assert row is not None
            assert (row.state, row.status, row.event_count) == (
                found.state, "active" if found.active else "terminated", len(found.events))
            start = (after if after is not None else -1) + 1
            assert [(e.position, e.event) for e in events] == list(enumerate(found.events))[start:start + limit]
            # The rest, page by page, each page after the position of the last event read.
            pages, error = self.call(actor, sid, lambda s: list(self.pages(s, sid, events, limit)))
            assert error is None and pages is not None
            assert [(e.position, e.event) for e in events + pages] == list(enumerate(found.events))[start:]

        @staticmethod
        def pages(session: TenantSession, sid: str, first: list[Any] | None, limit: int) -> Iterator[Any]:
            """The events after the page ``first`` (None: every event), ``limit`` at a time."""
            if first is None:
                first = session.sessions.get_events(sid, None, limit)
                yield from first
            page = first
            while len(page) == limit:
                page = session.sessions.get_events(sid, page[-1].position, limit)
                assert len(page) <= limit
                yield from page

        @rule(actor=st.sampled_from(ACTORS), i=st.integers(0, 2), cancel=st.booleans())
        def terminate(self, actor: str, i: int, cancel: bool) -> None:
            sid = self.ids[i]
            tenant, _ = self.who(actor)
            found = self.visible(actor, sid)
            ended, error = self.call(actor, sid, lambda s: s.sessions.terminate(sid, cancel_open_tasks=cancel))
            found = self.session_to_go_on(found, error)
            if found is None:
                return
            user_keys = {k: v for k, v in found.state.items() if k.startswith("user:")}
            if self.who(actor)[1] != found.user and user_keys:
                # Another user's context writes none of the session user's memory (as it writes no user: key).
                refused(error, "42501", "session_id")
                return
            open_tasks = [t for t in self.tasks.values()
                          if t.tenant == tenant and t.session == sid and t.status not in FINAL]
            if open_tasks and not cancel:
                refused(error, "55000", "session_id")
                return
            assert error is None, error
            assert ended is not None and (ended.status, ended.migrated_keys) == ("terminated", len(user_keys))
            for task in open_tasks:
                task.status = "cancelled"
            self.memory.setdefault((tenant, found.user), {}).update(user_keys)
            statuses, error = self.call(actor, sid, lambda s: [(r["id"], r["status"]) for r in s.connection.execute(
                "select id, status from memsub.tasks where session_id = %s order by id", [sid]).fetchall()])
            assert error is None
            assert statuses == sorted((n, t.status) for n, t in self.tasks.items()
                                      if t.tenant == tenant and t.session == sid)
            found.active, found.state = False, {}
            reader = "alice_b" if tenant == TENANT_B else "bob" if found.user == self.users["bob"] else "alice"
            memory, error = self.call(reader, None, lambda s: [
                s.memory.get(key.rsplit(":", 1)[0], key.rsplit(":", 1)[1]) for key in sorted(user_keys)])
            assert error is None and memory is not None
            assert [(m.value if m else None) for m in memory] == [user_keys[k] for k in sorted(user_keys)]

        @rule(actor=st.sampled_from(ACTORS), i=st.none() | st.integers(0, 2), data=st.data())
        def task_create(self, actor: str, i: int | None, data: st.DataObject) -> None:
            tenant, _ = self.who(actor)
            sid = None if i is None else self.ids[i]
            mine = sorted(n for n, t in self.tasks.items() if t.tenant == tenant)
            parent = data.draw(st.none() | st.sampled_from(mine)) if mine else None
            task, error = self.call(actor, sid, lambda s: s.sessions.task_create(
                "step", {"p": 1}, session_id=sid, parent_task_id=parent))
            if sid is not None:
                found = self.visible(actor, sid)
                if found is None:
                    refused(error, "23503", "session_id")
                    return
                if not found.active:
                    refused(error, "55000", "session_id")
                    return
            if parent is not None and not self.task_seen(actor, self.tasks[parent], sid):
                refused(error, "23503", "parent_task_id")
                return
            if parent is not None and self.tasks[parent].status in FINAL:
                refused(error, "55000", "parent_task_id")
                return
            assert error is None, error
            assert task is not None and (task.status, task.session_id, task.parent_task_id) == (
                "pending", sid, parent)
            self.tasks[task.id] = TaskModel(tenant, sid)

        @rule(actor=st.sampled_from(ACTORS), data=st.data(),
              status=st.sampled_from(["pending", "running", *FINAL]))
        def task_set_status(self, actor: str, data: st.DataObject, status: str) -> None:
            if not self.tasks:
                return
            self.task_set_status_of(actor, data.draw(st.sampled_from(sorted(self.tasks))), status)

        def task_set_status_of(self, actor: str, number: int, status: str) -> None:
            task = self.tasks[number]
            error_text = "boom" if status == "failed" else None
            moved, error = self.call(actor, task.session, lambda s: s.sessions.task_set_status(
                number, status, result={"r": 1}, error=error_text))  # type: ignore[arg-type]
            if not self.task_seen(actor, task, task.session):
                refused(error, "P0002", "task_id")
                return
            if status not in NEXT.get(task.status, ()):
                refused(error, "55000", "status")
                return
            assert error is None, error
            assert moved is not None and moved.status == status
            assert (moved.completed_at is not None) == (status in FINAL)
            task.status = status

        @rule(actor=st.sampled_from(ACTORS), data=st.data())
        def checkpoint(self, actor: str, data: st.DataObject) -> None:
            if not self.tasks:
                return
            self.save(actor, data.draw(st.sampled_from(sorted(self.tasks))))

        def save(self, actor: str, number: int) -> None:
            task = self.tasks[number]
            saved, error = self.call(actor, task.session, lambda s: s.sessions.checkpoint_save(
                number, {"at": len(task.checkpoints)}))
            if not self.task_seen(actor, task, task.session):
                refused(error, "23503", "task_id")
                return
            assert error is None, error
            assert saved is not None
            session = None if task.session is None else self.visible(actor, task.session)
            copy = None if session is None else dict(session.state)
            assert (saved.sequence, saved.session_id, saved.session_state) == (
                len(task.checkpoints) + 1, task.session, copy)
            task.checkpoints.append((saved.id, copy))

        @rule(actor=st.sampled_from(ACTORS), data=st.data())
        def restore(self, actor: str, data: st.DataObject) -> None:
            saved = sorted((n, k) for n, t in self.tasks.items() for k in range(len(t.checkpoints)))
            if not saved:
                return
            self.restore_one(actor, *data.draw(st.sampled_from(saved)))

        def restore_one(self, actor: str, number: int, k: int) -> None:
            task = self.tasks[number]
            checkpoint_id, copy = task.checkpoints[k]
            tenant, _ = self.who(actor)
            restored, error = self.call(actor, task.session,
                                        lambda s: s.sessions.checkpoint_restore(checkpoint_id))
            session = None if task.session is None else self.visible(actor, task.session)
            if task.tenant != tenant or (copy is not None and session is None):
                refused(error, "P0002", "checkpoint_id")
                return
            assert error is None, error
            assert restored is not None and (restored.state, restored.session_state) == ({"at": k}, copy)
            owner = None if task.session is None else self.sessions.get((task.tenant, task.session))
            if copy is not None and owner is not None and owner.active:
                owner.state = dict(copy)

        @rule(actor=st.sampled_from(ACTORS), i=st.integers(0, 2))
        def context(self, actor: str, i: int) -> None:
            """memory_context: each name answered by temp: > session: > user: memory (the state before the
            entries within a level), of what the caller may see."""
            sid = self.ids[i]
            tenant, user = self.who(actor)
            found = self.visible(actor, sid)
            resolved, error = self.call(actor, sid, lambda s: s.memory.context(sid))
            if found is None:
                refused(error, "P0002", "session_id")
                return
            assert error is None and resolved is not None
            level = {"temp": 1, "session": 2, "user": 3}
            candidates = []
            for key, value in found.state.items():
                kind = key.split(":")[0]
                name = key.split(":", 1)[1] if kind == "temp" else key.split(":", 2)[2]
                candidates.append((name, level[kind], 0, value, "state"))
            # The user's memory entries, where the caller may read them (its own user: namespace).
            if user == found.user:
                for key, value in self.memory.get((tenant, found.user), {}).items():
                    candidates.append((key.split(":", 2)[2], 3, 1, value, "memory"))
            winners: dict[str, tuple[Any, ...]] = {}
            for candidate in sorted(candidates, key=lambda c: (c[0], c[1], c[2])):
                winners.setdefault(candidate[0], candidate)
            assert sorted((c.name, c.value, c.source, c.precedence) for c in resolved) == sorted(
                (name, value, source, precedence) for name, precedence, _, value, source in winners.values())

        @rule(i=st.integers(0, 1), data=st.data(), start=st.booleans(), keep=st.sampled_from([0, 1, 2]))
        def work_then_terminate(self, i: int, data: st.DataObject, start: bool, keep: int) -> None:
            """Alice's session with an open task and a user: key ends, cancelling the task and keeping the key."""
            found = self.visible("alice", self.ids[i])
            if found is not None and found.active:
                delta = {f"user:{self.users['alice']}:pref": keep}
                merged, error = self.call("alice", None, lambda s: s.sessions.merge_state(self.ids[i], delta))
                assert error is None and merged is not None
                self.apply(found.state, delta)
            self.task_create("alice", i, data)
            open_tasks = [n for n, t in self.tasks.items() if t.session == self.ids[i] and t.status == "pending"]
            if start and open_tasks:
                self.task_set_status_of("alice", open_tasks[-1], "running")
            self.terminate("alice", i, True)
            self.context("alice", 1 - i)  # her other session, now under the memory the termination wrote

        @rule(i=st.integers(0, 1), data=st.data())
        def state_then_context(self, i: int, data: st.DataObject) -> None:
            """A state change of alice's session, then its context as alice and as bob naming the session."""
            self.merge_state("alice", i, data)
            self.context("alice", i)
            self.context("bob_in", i)

        @rule(i=st.integers(0, 1), data=st.data())
        def checkpoint_change_restore(self, i: int, data: st.DataObject) -> None:
            """A checkpoint of a task of alice's session, a change of its state, the checkpoint restored."""
            self.task_create("alice", i, data)
            tasks = [n for n, t in self.tasks.items() if t.tenant == TENANT_A and t.session == self.ids[i]]
            if not tasks:
                return
            self.save("alice", tasks[-1])
            self.merge_state("alice", i, data)
            self.restore_one(data.draw(st.sampled_from(["alice", "bob", "bob_in"])), tasks[-1],
                             len(self.tasks[tasks[-1]].checkpoints) - 1)

    run_state_machine_as_test(SessionsMachine, settings=settings(
        max_examples=25 * soak_factor(), stateful_step_count=20, deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
