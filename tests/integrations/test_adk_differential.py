"""Differential test of the Google ADK services (memsub.integrations.adk) against ADK 1.4.2's own reference
services: seeded random sequences of create, get (with GetSessionConfig), list, delete and append_event, and of
adding sessions to memory and searching it, run on memsub (an ordinary app login, a new tenant per sequence) and on
ADK's ``InMemorySessionService``, ``DatabaseSessionService`` (SQLite, in a temporary file) and
``InMemoryMemoryService``, comparing what a caller sees after every step.

Which reference judges what (docs/integrations.md, "Where memsub differs from ADK's own services"):
- session ids, events (content, order, the GetSessionConfig window), lists and their order, get/delete of an
  unknown session, behaviour after delete: ``InMemorySessionService``;
- the merged state (app:, user:, session keys; temp: never kept), also of ``create_session(state=...)``, whose
  prefixes ADK 1.4.2's in-memory service does not split, and a second create of an existing id (refused):
  ``DatabaseSessionService`` (its events are not compared: SQLite keeps the events of a deleted session);
- memory search: ``InMemoryMemoryService``, compared as a set (memsub ranks and caps its answer; the cap is set
  above what a sequence can add).

The differences tolerated, exactly: memsub refuses a second create of an existing session (as the database
service), refuses an event for a session that does not exist (NotFound; the in-memory service logs a warning,
the database service fails on None), stores an event's state delta without its temp: keys, and its
last_update_time is the server's clock (as the database service), not the event's timestamp.
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy.exc
from google.adk.events import Event, EventActions
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions import DatabaseSessionService, InMemorySessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from memsub.errors import IntegrityError, NotFound
from memsub.integrations.adk import MemsubMemoryService, MemsubSessionService

APPS = ["helpdesk", "billing"]
USERS = ["alice", "bob"]
# " s3 " is stored as "s3", and a blank id is no id (one is made), as ADK's in-memory service does.
NAMES = ["s1", "s2", " s3 ", "s4", "", " \t"]
KEYS = ["topic", "count", "clé", "app:greeting", "app:open", "app:", "app:user:x", "user:tier", "user:lang", "user:",
        "temp:draft", "temp:", "App:x"]
WORDS = ["printer", "jams", "paper", "Blue", "toner", "refund", "parcel", "late"]
SEEDS = range(8)
STEPS = 70


def _value(rng: random.Random) -> Any:
    return rng.choice([rng.randint(0, 9), rng.choice(WORDS).lower(), None, [rng.randint(0, 3)], {"n": rng.random()}])


def _delta(rng: random.Random) -> dict[str, Any]:
    return {key: _value(rng) for key in rng.sample(KEYS, rng.randint(0, 3))}


def _text(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
    return " ".join(words) + rng.choice(["", ".", "!", ", please"])


def _event(rng: random.Random, clock: list[float]) -> Event:
    clock[0] += rng.choice([0.25, 1.0, 3.5])
    # Now and then an event stamped earlier than the one before (a clock stepped back, a late writer).
    stamp = clock[0] - rng.choice([4.0, 20.0]) if rng.random() < 0.08 else clock[0]
    kind = rng.random()
    if kind < 0.7:
        content = types.Content(role="user", parts=[types.Part(text=_text(rng))])
    elif kind < 0.78:  # text and a function call: the memory keeps the whole content
        content = types.Content(role="model", parts=[types.Part(text=_text(rng)), types.Part(
            function_call=types.FunctionCall(name="lookup", args={"q": rng.choice(WORDS)})), types.Part(text="")])
    elif kind < 0.85:
        content = types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
            name="lookup", args={"q": rng.choice(WORDS)}))])
    else:
        content = None
    extra: dict[str, Any] = {}  # now and then the other fields an agent's event carries
    if rng.random() < 0.3:
        extra = rng.choice([{"branch": "root.helper", "turn_complete": True},
                            {"long_running_tool_ids": {"call-1", "call-2"}},
                            {"custom_metadata": {"k": [1, "é", None]}, "interrupted": False},
                            {"error_code": "SAFETY", "error_message": "blocked"},
                            {"usage_metadata": types.GenerateContentResponseUsageMetadata(prompt_token_count=7)}])
    actions = EventActions(state_delta=_delta(rng), artifact_delta={"f.txt": 1} if rng.random() < 0.1 else {},
                           escalate=True if rng.random() < 0.1 else None,
                           transfer_to_agent="helper" if rng.random() < 0.1 else None)
    return Event(author=rng.choice(["user", "agent"]), invocation_id=f"inv-{rng.randint(0, 3)}",
                 content=content, actions=actions, timestamp=stamp, partial=True if rng.random() < 0.1 else None,
                 **extra)


def _dump(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json", exclude_none=True)


def _without_temp(dumped: dict[str, Any]) -> dict[str, Any]:
    """A reference event as memsub stores it: its state delta without temp: keys (tolerated difference)."""
    dumped = copy.deepcopy(dumped)
    delta = dumped.get("actions", {}).get("state_delta")
    if delta:
        dumped["actions"]["state_delta"] = {k: v for k, v in delta.items() if not k.startswith("temp:")}
    return dumped


class Sequence:
    """One random sequence on memsub ("m"), the in-memory ("mem") and the database ("sql") reference services."""

    def __init__(self, rng: random.Random, memsub: MemsubSessionService, memory: MemsubMemoryService,
                 sqlite: Path) -> None:
        self.rng = rng
        self.svc: dict[str, Any] = {"m": memsub, "mem": InMemorySessionService(),
                                    "sql": DatabaseSessionService(f"sqlite:///{sqlite}")}
        self.memory: dict[str, Any] = {"m": memory, "mem": InMemoryMemoryService()}
        # (app, user, handle) -> the session id each service gave it; a handle is a name or a generated one.
        self.ids: dict[tuple[str, str, str], dict[str, str]] = {}
        self.clock = [time.time() - 10_000.0]
        self.log: list[str] = []
        self.expected: dict[int, list[Event]] = {}  # id of a windowed in-memory session -> the events it should have
        # (app, user, session id in memsub) -> the sessions create_session returned, until an event is appended
        self.created: dict[tuple[str, str, str], dict[str, Session]] = {}

    def where(self) -> str:
        return "after: " + " | ".join(self.log[-6:])

    async def get_all(self, app: str, user: str, ids: dict[str, str],
                      config: GetSessionConfig | None = None) -> dict[str, Session | None]:
        got = {name: await svc.get_session(app_name=app, user_id=user, session_id=ids[name], config=config)
               for name, svc in self.svc.items()}
        full = await self.svc["mem"].get_session(app_name=app, user_id=user, session_id=ids["mem"])
        self.window(full, got["mem"], config)
        return got

    def window(self, full: Session | None, windowed: Session | None, config: GetSessionConfig | None) -> None:
        """The events a GetSessionConfig asks for, from the in-memory service's whole list: those at or after
        after_timestamp (as the database service filters), then the num_recent_events last; kept as
        windowed.expected. Where the timestamps never go back this is what the in-memory service answers; it takes
        the events after the last one before after_timestamp, which differs once a timestamp goes back."""
        if full is None or windowed is None:
            return
        events = list(full.events)
        if config and config.after_timestamp:
            events = [e for e in events if e.timestamp >= config.after_timestamp]
        if config and config.num_recent_events:
            events = events[-config.num_recent_events:]
        stamps = [e.timestamp for e in full.events]
        if stamps == sorted(stamps):
            assert [e.id for e in events] == [e.id for e in windowed.events], self.where()
        self.expected[id(windowed)] = events

    def compare(self, got: dict[str, Session | None], what: str) -> None:
        m, mem, sql = got["m"], got["mem"], got["sql"]
        assert (m is None) == (mem is None) == (sql is None), f"{what}: exists {m, mem, sql} {self.where()}"
        if m is None:
            return
        assert mem is not None and sql is not None
        assert (m.app_name, m.user_id) == (mem.app_name, mem.user_id), self.where()
        assert m.state == sql.state, f"{what}: state {m.state} != {sql.state} {self.where()}"
        expected = self.expected.get(id(mem), mem.events)
        assert [_dump(e) for e in m.events] == [_without_temp(_dump(e)) for e in expected], (
            f"{what}: events {self.where()}")

    async def create(self) -> None:
        app, user = self.rng.choice(APPS), self.rng.choice(USERS)
        name = self.rng.choice([*NAMES, None])
        state = _delta(self.rng) if self.rng.random() < 0.7 else None
        self.log.append(f"create {app}/{user}/{name!r} {state}")
        if name is None or not name.strip():
            made = {}
            for key, svc in self.svc.items():
                given = None if key == "sql" else name  # the database service would keep a blank id
                made[key] = await svc.create_session(app_name=app, user_id=user, state=copy.deepcopy(state),
                                                     session_id=given)
            assert made["m"].id and made["m"].id == made["m"].id.strip(), self.where()
            assert made["m"].state == made["sql"].state, self.where()
            handle = f"gen-{len(self.ids)}"
            self.ids[(app, user, handle)] = {key: s.id for key, s in made.items()}
            self.created[(app, user, made["m"].id)] = made
            return
        sid = name.strip()
        exists = await self.svc["mem"].get_session(app_name=app, user_id=user, session_id=sid) is not None
        if exists:
            # memsub refuses as the database service does; the in-memory service would replace the session.
            with pytest.raises(IntegrityError):
                await self.svc["m"].create_session(app_name=app, user_id=user, session_id=name, state=state)
            with pytest.raises(sqlalchemy.exc.IntegrityError):
                await self.svc["sql"].create_session(app_name=app, user_id=user, session_id=sid, state=state)
            return
        made = {
            "m": await self.svc["m"].create_session(app_name=app, user_id=user, session_id=name,
                                                    state=copy.deepcopy(state)),
            "mem": await self.svc["mem"].create_session(app_name=app, user_id=user, session_id=name,
                                                        state=copy.deepcopy(state)),
            # The database service keeps spaces; the in-memory one (which memsub follows) strips them.
            "sql": await self.svc["sql"].create_session(app_name=app, user_id=user, session_id=sid,
                                                        state=copy.deepcopy(state)),
        }
        assert made["m"].id == made["mem"].id == sid, self.where()
        assert made["m"].state == made["sql"].state, f"create state {made['m'].state} {self.where()}"
        assert made["m"].events == [], self.where()
        self.ids[(app, user, sid)] = {key: sid for key in self.svc}
        self.created[(app, user, sid)] = made

    def pick(self) -> tuple[str, str, dict[str, str]]:
        """A known session (perhaps deleted since), or one never created."""
        if self.ids and self.rng.random() < 0.85:
            app, user, handle = self.rng.choice(sorted(self.ids))
            return app, user, self.ids[(app, user, handle)]
        name = self.rng.choice(["s1", "s2", "s3", "s4", "never", " s1", "S1"])  # ids are looked up as given
        return self.rng.choice(APPS), self.rng.choice(USERS), {key: name for key in self.svc}

    async def get(self) -> None:
        app, user, ids = self.pick()
        full = await self.svc["mem"].get_session(app_name=app, user_id=user, session_id=ids["mem"])
        # after_timestamp: often exactly an event's timestamp (at or after it includes it), or just around one.
        stamps = [e.timestamp for e in full.events] if full is not None and full.events else [self.clock[0]]
        after = self.rng.choice(stamps) + self.rng.choice([0.0, 0.0, -0.1, 0.1])
        config = self.rng.choice([None, GetSessionConfig(), GetSessionConfig(num_recent_events=0),
                                  GetSessionConfig(num_recent_events=self.rng.randint(1, 4)),
                                  GetSessionConfig(after_timestamp=after),
                                  GetSessionConfig(num_recent_events=self.rng.randint(1, 3), after_timestamp=after)])
        self.log.append(f"get {app}/{user}/{ids['m']} {config}")
        self.compare(await self.get_all(app, user, ids, config), "get")

    async def list(self) -> None:
        app, user = self.rng.choice(APPS), self.rng.choice(USERS)
        self.log.append(f"list {app}/{user}")
        got = {key: (await svc.list_sessions(app_name=app, user_id=user)).sessions for key, svc in self.svc.items()}
        generated = {ids["mem"]: ids["m"] for (a, u, _), ids in self.ids.items() if (a, u) == (app, user)}
        assert [s.id for s in got["m"]] == [generated.get(s.id, s.id) for s in got["mem"]], self.where()
        sql_to_m = {ids["sql"]: ids["m"] for (a, u, _), ids in self.ids.items() if (a, u) == (app, user)}
        assert sorted(s.id for s in got["m"]) == sorted(sql_to_m.get(s.id, s.id) for s in got["sql"]), self.where()
        for session in got["m"]:
            assert (session.app_name, session.user_id, session.state, session.events) == (app, user, {}, []), (
                self.where())
            read = await self.svc["m"].get_session(app_name=app, user_id=user, session_id=session.id)
            assert read is not None and read.last_update_time == session.last_update_time, self.where()

    async def delete(self) -> None:
        app, user, ids = self.pick()
        self.log.append(f"delete {app}/{user}/{ids['m']}")
        self.created.pop((app, user, ids["m"]), None)
        for key, svc in self.svc.items():
            await svc.delete_session(app_name=app, user_id=user, session_id=ids[key])
        self.compare(await self.get_all(app, user, ids), "get after delete")

    async def append(self) -> None:
        app, user, ids = self.pick()
        got = await self.get_all(app, user, ids)
        self.compare(got, "get before append")
        made = self.created.pop((app, user, ids["m"]), None)
        if made is not None and got["m"] is not None and self.rng.random() < 0.5:
            got = dict(made)  # as a Runner does: the session create_session returned, its first events
            self.log.append("(on the created session objects)")
        times = self.rng.randint(1, 3)  # the same session objects for each, as a Runner does in an invocation
        for _ in range(times):
            event = _event(self.rng, self.clock)
            self.log.append(f"append {app}/{user}/{ids['m']} {event.actions.state_delta} partial={event.partial}")
            if got["m"] is None:
                # Tolerated: memsub refuses an event for a session that does not exist (nothing is written).
                ghost = Session(id=ids["m"], app_name=app, user_id=user, last_update_time=time.time())
                if event.partial:  # a partial event is never stored, by any service
                    assert await self.svc["m"].append_event(ghost, event) is event
                else:
                    with pytest.raises(NotFound):
                        await self.svc["m"].append_event(ghost, event)
                assert ghost.events == [] and ghost.state == {}, self.where()
                return
            returned = {}
            for key, svc in self.svc.items():
                session = got[key]
                assert session is not None
                returned[key] = await svc.append_event(session, event.model_copy(deep=True))
            assert _dump(returned["m"]) == _dump(returned["mem"]), self.where()
            m, mem, sql = got["m"], got["mem"], got["sql"]
            assert m is not None and mem is not None and sql is not None
            # The caller's session object is updated in place, as the references' (its events read before were
            # stored without their temp: keys).
            assert [_without_temp(_dump(e)) for e in m.events] == [_without_temp(_dump(e)) for e in mem.events], (
                self.where())
            assert m.state == sql.state, self.where()
        after = await self.get_all(app, user, ids)
        self.compare(after, "get after append")
        # The caller's session object is as new as the stored session: its next event is not refused as stale.
        assert after["m"] is not None and got["m"] is not None
        assert got["m"].last_update_time == after["m"].last_update_time, self.where()

    async def remember(self) -> None:
        app, user, ids = self.pick()
        # Sometimes only a window of the session (what a caller read with a GetSessionConfig) is added.
        config = self.rng.choice([None, None, GetSessionConfig(num_recent_events=2)])
        got = await self.get_all(app, user, ids, config)
        self.compare(got, "get before add_session_to_memory")
        if got["m"] is None:
            return
        self.log.append(f"add_session_to_memory {app}/{user}/{ids['m']}")
        await self.memory["m"].add_session_to_memory(got["m"])
        mem = got["mem"]
        assert mem is not None
        await self.memory["mem"].add_session_to_memory(mem.model_copy(update={"events": self.expected.get(
            id(mem), mem.events)}))

    async def search(self) -> None:
        app, user = self.rng.choice(APPS), self.rng.choice(USERS)
        query = " ".join(self.rng.sample([*WORDS, "absent"], self.rng.randint(0, 2)))
        self.log.append(f"search {app}/{user} {query!r}")
        found = {key: (await svc.search_memory(app_name=app, user_id=user, query=query)).memories
                 for key, svc in self.memory.items()}

        def seen(memories: list[Any]) -> list[tuple[Any, ...]]:
            return sorted((m.author, m.timestamp, m.content.model_dump_json(exclude_none=True)) for m in memories)

        assert seen(found["m"]) == seen(found["mem"]), f"search {query!r} {self.where()}"

    async def run(self, steps: int) -> None:
        ops = [(self.create, 5), (self.get, 4), (self.list, 2), (self.delete, 1), (self.append, 6),
               (self.remember, 2), (self.search, 3)]
        for _ in range(steps):
            op = self.rng.choices([op for op, _ in ops], weights=[w for _, w in ops])[0]
            await op()
        for app, user, handle in sorted(self.ids):  # the end: every session compared once more
            self.log.append(f"final {app}/{user}/{handle}")
            self.compare(await self.get_all(app, user, self.ids[(app, user, handle)]), "final get")


@pytest.mark.parametrize("seed", SEEDS)
def test_memsub_adk_services_agree_with_adks_reference_services(db: Any, tmp_path: Path, seed: int) -> None:
    async def main() -> None:
        tenant = uuid.uuid4()
        memsub = MemsubSessionService.from_dsn(db.dsn("app"), tenant_id=tenant)
        memory = MemsubMemoryService.from_dsn(db.dsn("app"), tenant_id=tenant, limit=1000)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await Sequence(random.Random(seed), memsub, memory, tmp_path / "adk.db").run(STEPS)
        finally:
            await memsub.close()
            await memory.close()

    asyncio.run(main())
