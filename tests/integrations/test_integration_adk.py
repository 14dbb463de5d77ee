"""The Google ADK services (memsub.integrations.adk) against the embedded server, beyond ADK's own tests
(test_integration_adk_sessions.py): tenants and organizations apart with the same app, user and session
names, temp: state never stored, stale sessions refused, the memory service's keyword and vector search, bad
input naming its field, and the docs/integrations.md example. Every service acts as an ordinary app login.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import psycopg
import pytest
from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from memsub.embedding import HashingEmbedder
from memsub.errors import ConflictError, InvalidInput, LimitExceeded, LocalValidationError
from memsub.integrations.adk import MemsubMemoryService, MemsubSessionService

from helpers import assert_refused, run_doc_example

APP, USER, SESSION = "helpdesk", "alice@example.com", "s-1"


def run(db: Any, scenario: Callable[..., Awaitable[None]], *services: tuple[type, dict[str, Any]]) -> None:
    """Run `scenario` with services built from (class, options), each closed afterwards."""
    async def main() -> None:
        built = [cls.from_dsn(db.dsn("app"), **options) for cls, options in services]
        try:
            await scenario(*built)
        finally:
            for service in built:
                await service.close()

    asyncio.run(main())


def said(author: str, text: str, delta: dict[str, Any] | None = None, timestamp: float | None = None) -> Event:
    extra: dict[str, Any] = {} if timestamp is None else {"timestamp": timestamp}
    return Event(author=author, invocation_id="inv-1",
                 content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=delta or {}), **extra)


def test_two_tenants_use_the_same_names_without_seeing_each_other(db: Any) -> None:
    first, second = uuid.uuid4(), uuid.uuid4()

    async def scenario(a: MemsubSessionService, b: MemsubSessionService) -> None:
        sa = await a.create_session(app_name=APP, user_id=USER, session_id=SESSION, state={"topic": "billing"})
        sb = await b.create_session(app_name=APP, user_id=USER, session_id=SESSION, state={"topic": "shipping"})
        await a.append_event(sa, said("user", "refund please", {"app:greeting": "hi A", "user:tier": "gold"}))
        await b.append_event(sb, said("user", "where is my parcel", {"app:greeting": "hi B"}))
        got_a = await a.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        got_b = await b.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        assert got_a is not None and got_b is not None
        assert got_a.state == {"topic": "billing", "app:greeting": "hi A", "user:tier": "gold"}
        assert got_b.state == {"topic": "shipping", "app:greeting": "hi B"}
        assert [e.content.parts[0].text for e in got_a.events if e.content and e.content.parts] == ["refund please"]
        assert [e.content.parts[0].text for e in got_b.events if e.content and e.content.parts] == [
            "where is my parcel"]
        await a.delete_session(app_name=APP, user_id=USER, session_id=SESSION)
        assert await a.get_session(app_name=APP, user_id=USER, session_id=SESSION) is None
        assert [s.id for s in (await b.list_sessions(app_name=APP, user_id=USER)).sessions] == [SESSION]

    run(db, scenario, (MemsubSessionService, {"tenant_id": first}), (MemsubSessionService, {"tenant_id": second}))
    with db.connect() as conn:  # ground truth: one session per tenant was written, tenant A's is gone
        rows = conn.execute("select tenant_id, count(*) from memsub.adk_sessions group by 1").fetchall()
        assert rows == [(second, 1)]
        assert conn.execute("select count(*) from memsub.adk_events where tenant_id = %s", [first]).fetchone() == (0,)


def test_two_organizations_of_a_tenant_are_apart(db: Any) -> None:
    tenant, org_a, org_b = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()

    async def scenario(a: MemsubSessionService, b: MemsubSessionService) -> None:
        await a.create_session(app_name=APP, user_id=USER, session_id=SESSION, state={"app:motd": "A"})
        assert await b.get_session(app_name=APP, user_id=USER, session_id=SESSION) is None
        created = await b.create_session(app_name=APP, user_id=USER, session_id=SESSION)  # no collision
        assert created.state == {}

    run(db, scenario, (MemsubSessionService, {"tenant_id": tenant, "org_id": org_a}),
        (MemsubSessionService, {"tenant_id": tenant, "org_id": org_b}))


def test_temp_state_is_never_stored_and_state_lands_by_prefix(db: Any) -> None:
    tenant = uuid.uuid4()

    async def scenario(service: MemsubSessionService) -> None:
        session = await service.create_session(app_name=APP, user_id=USER, state={"temp:x": 1, "step": 0})
        await service.append_event(session, said("user", "hello", {"temp:scratch": "gone", "step": 1,
                                                                    "app:k": "a", "user:k": "u"}))
        assert "temp:scratch" not in session.state and "temp:x" not in session.state

    run(db, scenario, (MemsubSessionService, {"tenant_id": tenant}))
    with db.connect() as conn:
        states = conn.execute("""
            select (select state from memsub.adk_app_states where tenant_id = %(t)s),
                   (select state from memsub.adk_user_states where tenant_id = %(t)s),
                   (select state from memsub.adk_sessions where tenant_id = %(t)s),
                   (select event #> '{actions,state_delta}' from memsub.adk_events where tenant_id = %(t)s)""",
                              {"t": tenant}).fetchone()
        # Nor in the stored event: its state delta keeps every key but the temp: ones.
        assert states == ({"k": "a"}, {"k": "u"}, {"step": 1}, {"step": 1, "app:k": "a", "user:k": "u"})


def test_a_stale_session_is_refused_and_writes_nothing(db: Any) -> None:
    async def scenario(service: MemsubSessionService) -> None:
        session = await service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
        stale = session.model_copy(deep=True)
        await service.append_event(session, said("user", "first"))
        stale.last_update_time -= 1  # read before the first event
        with pytest.raises(ConflictError) as raised:
            await service.append_event(stale, said("user", "second"))
        assert raised.value.field == "last_update_time"
        again = await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        assert again is not None and len(again.events) == 1

    run(db, scenario, (MemsubSessionService, {"tenant_id": uuid.uuid4()}))


def test_concurrent_events_of_one_user_lose_no_user_or_app_state(db: Any) -> None:
    """State deltas merge in the database under the row lock, so events appended at once to different sessions
    of one user keep every user: and app: key (a read-modify-write in the client would lose some)."""
    tenant = uuid.uuid4()

    async def scenario(service: MemsubSessionService) -> None:
        sessions = [await service.create_session(app_name=APP, user_id=USER) for _ in range(8)]
        await asyncio.gather(*[service.append_event(session, said("user", f"note {i}", {
            f"user:k{i}": i, f"app:k{i}": i})) for i, session in enumerate(sessions)])
        again = await service.get_session(app_name=APP, user_id=USER, session_id=sessions[0].id)
        assert again is not None
        assert {k: v for k, v in again.state.items() if k.startswith("user:")} == {f"user:k{i}": i for i in range(8)}
        assert {k: v for k, v in again.state.items() if k.startswith("app:")} == {f"app:k{i}": i for i in range(8)}

    run(db, scenario, (MemsubSessionService, {"tenant_id": tenant}))


def test_recent_events_and_timestamps_filter_the_events_read(db: Any) -> None:
    async def scenario(service: MemsubSessionService) -> None:
        session = await service.create_session(app_name=APP, user_id=USER)
        for i in range(1, 6):
            await service.append_event(session, said("user", f"event {i}", timestamp=float(i)))
        got = await service.get_session(app_name=APP, user_id=USER, session_id=session.id,
                                        config=GetSessionConfig(num_recent_events=2, after_timestamp=2.0))
        assert got is not None and [e.timestamp for e in got.events] == [4.0, 5.0]
        assert got.events == session.events[-2:]
        # 0 (as None) is all of them, as in ADK's own services; a count is held to max_rows as the other adapters'
        # limits are: over it 54000, past PostgreSQL's integer refused before it is sent (22003), naming the field.
        for every in (0, None, 10000):
            got = await service.get_session(app_name=APP, user_id=USER, session_id=session.id,
                                            config=GetSessionConfig(num_recent_events=every))
            assert got is not None and got.events == session.events
        for many, error, sqlstate in ((10001, LimitExceeded, "54000"), (2**31, LocalValidationError, "22003"),
                                      (sys.maxsize, LocalValidationError, "22003")):
            with pytest.raises(error) as refused:
                await service.get_session(app_name=APP, user_id=USER, session_id=session.id,
                                          config=GetSessionConfig(num_recent_events=many))
            assert (refused.value.field, refused.value.sqlstate) == ("num_recent_events", sqlstate)
        with pytest.raises(InvalidInput) as raised:
            await service.get_session(app_name=APP, user_id=USER, session_id=session.id,
                                      config=GetSessionConfig(num_recent_events=-1))
        assert raised.value.field == "num_recent_events"

    run(db, scenario, (MemsubSessionService, {"tenant_id": uuid.uuid4()}))


def test_memory_keyword_search_is_per_user_and_a_session_added_twice_is_replaced(db: Any) -> None:
    tenant = uuid.uuid4()

    async def scenario(sessions: MemsubSessionService, memory: MemsubMemoryService) -> None:
        session = await sessions.create_session(app_name=APP, user_id=USER)
        await sessions.append_event(session, said("user", "My printer jams on page two", timestamp=10.0))
        await sessions.append_event(session, Event(author="tool", invocation_id="inv-1"))  # no text: not stored
        await memory.add_session_to_memory(session)
        await sessions.append_event(session, said("helper", "Clean the PRINTER roller", timestamp=20.0))
        await memory.add_session_to_memory(session)
        other = await sessions.create_session(app_name=APP, user_id="bob")
        await sessions.append_event(other, said("user", "printer on fire"))
        await memory.add_session_to_memory(other)

        found = await memory.search_memory(app_name=APP, user_id=USER, query="printer roller")
        texts = [m.content.parts[0].text for m in found.memories if m.content.parts]
        assert texts == ["Clean the PRINTER roller", "My printer jams on page two"]  # both words first
        assert found.memories[0].author == "helper" and found.memories[0].timestamp is not None
        assert (await memory.search_memory(app_name=APP, user_id=USER, query="fire")).memories == []
        await sessions.delete_session(app_name=APP, user_id=USER, session_id=session.id)
        kept = await memory.search_memory(app_name=APP, user_id=USER, query="jams")
        assert len(kept.memories) == 1  # memory outlives its session

    run(db, scenario, (MemsubSessionService, {"tenant_id": tenant}), (MemsubMemoryService, {"tenant_id": tenant}))
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.adk_memories where tenant_id = %s",
                            [tenant]).fetchone() == (3,)


def test_memory_vector_search_ranks_by_similarity(db: Any) -> None:
    tenant = uuid.uuid4()
    embedder = HashingEmbedder(64)

    async def scenario(sessions: MemsubSessionService, memory: MemsubMemoryService,
                       other_tenant: MemsubMemoryService) -> None:
        session = await sessions.create_session(app_name=APP, user_id=USER)
        for text in ["prefers green tea in the morning", "rides a bicycle to work", "lives near the harbour"]:
            await sessions.append_event(session, said("user", text))
        await memory.add_session_to_memory(session)
        found = await memory.search_memory(app_name=APP, user_id=USER, query="green tea drink")
        assert found.memories[0].content.parts[0].text == "prefers green tea in the morning"
        assert len(found.memories) == 3  # every embedded memory is a candidate, best first
        assert (await other_tenant.search_memory(app_name=APP, user_id=USER, query="green tea")).memories == []

    run(db, scenario, (MemsubSessionService, {"tenant_id": tenant}),
        (MemsubMemoryService, {"tenant_id": tenant, "embedder": embedder}),
        (MemsubMemoryService, {"tenant_id": uuid.uuid4(), "embedder": embedder}))


def _odd_embedder(texts: list[str]) -> list[list[float]]:
    """[0, 0, 0] (no cosine distance) for a text that says "zero", [3e38, 3e38, 0] (squares beyond single
    precision) for "huge", else a unit vector."""
    return [[0.0, 0.0, 0.0] if "zero" in t else [3e38, 3e38, 0.0] if "huge" in t else [1.0, 0.0, 0.0]
            for t in texts]


def test_a_memory_vector_without_a_cosine_distance_is_refused_by_name(db: Any) -> None:
    """A zero vector, or one whose squares overflow single precision, has NaN cosine distances: a search scored
    such a memory NaN and ranked it first (PostgreSQL orders NaN above every number), and such a query scored
    every memory NaN. Adding it is refused naming the memory's embedding, searching by it naming the query, and
    nothing is written."""
    tenant = uuid.uuid4()

    async def scenario(sessions: MemsubSessionService, memory: MemsubMemoryService) -> None:
        session = await sessions.create_session(app_name=APP, user_id=USER)
        await sessions.append_event(session, said("user", "tea please"))
        await memory.add_session_to_memory(session)
        for text, position in (("zero tea", 1), ("huge tea", 1)):
            odd = await sessions.create_session(app_name=APP, user_id=USER)
            for said_text in ("tea again", text):
                await sessions.append_event(odd, said("user", said_text))
            with pytest.raises(InvalidInput) as refused:
                await memory.add_session_to_memory(odd)
            assert (refused.value.field, refused.value.sqlstate) == (f"memories[{position}].embedding", "22023")
            with pytest.raises(InvalidInput) as refused:
                await memory.search_memory(app_name=APP, user_id=USER, query=text)
            assert (refused.value.field, refused.value.sqlstate) == ("query_embedding", "22023")
        found = await memory.search_memory(app_name=APP, user_id=USER, query="tea")
        assert [m.content.parts[0].text for m in found.memories if m.content.parts] == ["tea please"]

    run(db, scenario, (MemsubSessionService, {"tenant_id": tenant}),
        (MemsubMemoryService, {"tenant_id": tenant, "embedder": _odd_embedder}))
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.adk_memories where tenant_id = %s",
                            [tenant]).fetchone() == (1,)


def test_a_stored_memory_vector_without_a_cosine_distance_ranks_after_the_scored_ones(db: Any) -> None:
    """A zero vector stored before adding refused it has no score (NULL, not NaN) and comes after the memories
    with one."""
    tenant = uuid.uuid4()
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        conn.execute("select memsub.adk_memory_add('a', 'u', 's', %s)", [
            '[{"event_id": "near", "content": {}, "text": "tea", "embedding": [1, 0.1, 0]},'
            ' {"event_id": "zero", "content": {}, "text": "tea", "embedding": [1, 0, 0]}]'])
        conn.commit()
    with db.connect() as conn:  # as written before the check: straight into the table
        conn.execute("update memsub.adk_memories set embedding = '[0, 0, 0]' "
                     "where tenant_id = %s and event_id = 'zero'", [tenant])
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        rows = conn.execute("select event_id, score from memsub.adk_memory_search('a', 'u', 'tea', "
                            "'[1, 0, 0]', 5)").fetchall()
    assert rows == [("near", pytest.approx(1 / 1.01 ** 0.5)), ("zero", None)]


class Counter(BaseAgent):
    """An agent without a model: answers each message with the number of turns the user has had in the app."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        turns = int(ctx.session.state.get("user:turns", 0)) + 1
        heard = ctx.user_content.parts[0].text if ctx.user_content and ctx.user_content.parts else ""
        yield Event(author=self.name, invocation_id=ctx.invocation_id, branch=ctx.branch,
                    content=types.Content(role="model", parts=[types.Part(text=f"turn {turns}: {heard}")]),
                    actions=EventActions(state_delta={"user:turns": turns, "last": heard, "temp:scratch": 1}))


def test_an_adk_runner_keeps_its_sessions_and_memory_in_memsub(db: Any) -> None:
    tenant = uuid.uuid4()

    async def scenario(sessions: MemsubSessionService, memory: MemsubMemoryService) -> None:
        runner = Runner(app_name=APP, agent=Counter(name="counter"), session_service=sessions, memory_service=memory)
        first = await sessions.create_session(app_name=APP, user_id=USER)
        second = await sessions.create_session(app_name=APP, user_id=USER)
        replies = []
        for session, text in [(first, "hello"), (first, "invoice overdue"), (second, "again")]:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for event in runner.run_async(user_id=USER, session_id=session.id, new_message=message):
                replies.append(event.content.parts[0].text if event.content and event.content.parts else None)
        assert replies == ["turn 1: hello", "turn 2: invoice overdue", "turn 3: again"]  # user: state is shared
        stored = await sessions.get_session(app_name=APP, user_id=USER, session_id=first.id)
        assert stored is not None
        assert stored.state == {"user:turns": 3, "last": "invoice overdue"}
        assert [e.author for e in stored.events] == ["user", "counter", "user", "counter"]
        await memory.add_session_to_memory(stored)
        found = await memory.search_memory(app_name=APP, user_id=USER, query="overdue invoice")
        assert [m.content.parts[0].text for m in found.memories if m.content.parts] == [
            "turn 2: invoice overdue", "invoice overdue"]  # both hold both words: newest first

    run(db, scenario, (MemsubSessionService, {"tenant_id": tenant}), (MemsubMemoryService, {"tenant_id": tenant}))


BAD_CALLS = [
    ("select * from memsub.adk_session_create('', 'u')", "app_name"),
    ("select * from memsub.adk_session_create('a', null)", "user_id"),
    ("select * from memsub.adk_session_create('a', 'u', e'x\\ny')", "session_id"),
    ("select * from memsub.adk_session_create('a', 'u', 's', '[1]')", "state"),
    ("select * from memsub.adk_session_get('a', 'u', '')", "session_id"),
    ("select * from memsub.adk_session_get('a', 'u', 's', -1)", "num_recent_events"),
    ("select * from memsub.adk_session_list('a', '')", "user_id"),
    ("select memsub.adk_session_delete('a', 'u', null)", "session_id"),
    ("select memsub.adk_session_append_event('a', 'u', 's', '[]')", "event"),
    ("select memsub.adk_session_append_event('a', 'u', 's', '{\"timestamp\": 1}')", "event.id"),
    ("select memsub.adk_session_append_event('a', 'u', 's', '{\"id\": \"e\", \"timestamp\": \"x\"}')",
     "event.timestamp"),
    ("select memsub.adk_session_append_event('a', 'u', 's', "
     "'{\"id\": \"e\", \"timestamp\": 1, \"actions\": {\"state_delta\": [1]}}')", "event.actions.state_delta"),
    # a number beyond double precision, named rather than an unnamed 22003 (or another field's message)
    ("select memsub.adk_session_append_event('a', 'u', 's', '{\"id\": \"e\", \"timestamp\": 1e400}')",
     "event.timestamp"),
    ("select memsub.adk_memory_add('a', 'u', 's', "
     "'[{\"event_id\": \"e\", \"content\": {}, \"text\": \"t\", \"timestamp\": -1e400}]')", "memories[0].timestamp"),
    ("select memsub.adk_session_append_event('a', 'u', 's', '{\"id\": \"e\", \"timestamp\": 1, \"actions\": [1]}')",
     "event.actions"),
    ("select memsub.adk_memory_add('a', 'u', 's', '{}')", "memories"),
    ("select memsub.adk_memory_add('a', 'u', 's', '[{\"event_id\": \"e\", \"content\": {}, \"text\": \"t\"}, "
     "{\"event_id\": \"f\", \"text\": \"t\"}]')", "memories[1]"),
    ("select memsub.adk_memory_add('a', 'u', 's', "
     "'[{\"event_id\": \"e\", \"content\": {}, \"text\": \"t\", \"embedding\": [\"x\"]}]')", "memories"),
    # more numbers than pgvector's vector holds: was 54000 naming nothing
    ("select memsub.adk_memory_add('a', 'u', 's', '[{\"event_id\": \"e\", \"content\": {}, \"text\": \"t\", "
     "\"embedding\": [" + ", ".join(["1"] * 16001) + "]}]')", "memories"),
    ("select * from memsub.adk_memory_search('a', 'u', null)", "query"),
    ("select * from memsub.adk_memory_search('a', 'u', 'q', null, -1)", "limit"),
    ("select * from memsub.adk_memory_search('a', 'u', 'q', '\"x\"')", "query_embedding"),
]


def test_bad_input_names_the_field_and_writes_nothing(db: Any) -> None:
    tenant = uuid.uuid4()
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        conn.execute("select * from memsub.adk_session_create('a', 'u', 's')")  # so that appends reach the checks
        assert_refused(conn, BAD_CALLS)
        with pytest.raises(psycopg.errors.NoDataFound) as missing, conn.transaction():
            conn.execute("select memsub.adk_session_append_event('a', 'u', 'nope', "
                         "'{\"id\": \"e\", \"timestamp\": 1}')")
        assert missing.value.diag.column_name == "session_id"
        with pytest.raises(psycopg.errors.UniqueViolation) as twice, conn.transaction():
            conn.execute("select * from memsub.adk_session_create('a', 'u', 's')")
        assert twice.value.diag.column_name == "session_id"
        conn.commit()
    with db.connect() as conn:
        counts = conn.execute("""
            select (select count(*) from memsub.adk_sessions where tenant_id = %(t)s),
                   (select count(*) from memsub.adk_events where tenant_id = %(t)s),
                   (select count(*) from memsub.adk_memories where tenant_id = %(t)s)""", {"t": tenant}).fetchone()
        assert counts == (1, 0, 0)

    async def scenario(service: MemsubSessionService, memory: MemsubMemoryService) -> None:
        for call, field in [
            (service.create_session(app_name="", user_id=USER), "app_name"),  # refused by the database
            (service.create_session(app_name=APP, user_id=42), "user_id"),  # refused before it
            (service.create_session(app_name=APP, user_id=USER, session_id=7), "session_id"),
            (service.create_session(app_name=APP, user_id=USER, state=["a"]), "state"),
            (service.get_session(app_name=APP, user_id=USER, session_id=None), "session_id"),
            (service.list_sessions(app_name=None, user_id=USER), "app_name"),
            (service.delete_session(app_name=APP, user_id=USER, session_id=b"s"), "session_id"),
            (memory.search_memory(app_name=APP, user_id=USER, query=None), "query"),
            # text PostgreSQL cannot hold, named before anything is sent
            (service.create_session(app_name=APP, user_id=USER, state={"note": "a\x00b"}), "state.note"),
            (service.create_session(app_name=APP, user_id="u\ud800"), "user_id"),
        ]:
            with pytest.raises(InvalidInput) as raised:
                await call
            assert raised.value.field == field

    run(db, scenario, (MemsubSessionService, {"tenant_id": tenant}), (MemsubMemoryService, {"tenant_id": tenant}))
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.adk_sessions where tenant_id = %s",
                            [tenant]).fetchone() == (1,)


def test_integrations_doc_example_runs_as_written(db: Any, capsys: Any) -> None:
    run_doc_example("Google ADK", db.dsn("app"))
    out = capsys.readouterr().out
    assert "gold" in out and "printer" in out


def test_a_blank_session_id_gets_a_new_one_and_spaces_around_an_id_go_as_adk_does(db: Any) -> None:
    """ADK's in-memory service makes an id for a blank session_id and strips the spaces around a given one."""
    async def scenario(service: MemsubSessionService) -> None:
        blank = await service.create_session(app_name=APP, user_id=USER, session_id="  ")
        padded = await service.create_session(app_name=APP, user_id=USER, session_id="  s-7 ")
        assert uuid.UUID(blank.id) and padded.id == "s-7"
        assert await service.get_session(app_name=APP, user_id=USER, session_id="s-7") is not None

    run(db, scenario, (MemsubSessionService, {"tenant_id": uuid.uuid4()}))


def test_an_event_from_a_transaction_begun_earlier_still_makes_other_session_objects_stale(db: Any) -> None:
    """Each append moves the session's last update time forward, whenever the appending transaction began: a
    session object that a writer got back from its own append, before another writer's event, is then stale.
    Before, the time was the transaction's start (now()), and an event appended by a transaction that began before
    the other append left the time where that append had put it: the stale object was accepted."""
    from helpers import TENANT_A, set_context

    append = "select memsub.adk_session_append_event('app', 'u', 's', %s::jsonb, %s)"
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select * from memsub.adk_session_create('app', 'u', 's')")
        conn.commit()
    with db.connect("app") as early, db.connect("app") as late:
        set_context(late, TENANT_A)  # its transaction, and its now(), begin here
        set_context(early, TENANT_A)
        row = early.execute(append, ['{"id": "e1", "timestamp": 1}', None]).fetchone()
        assert row is not None
        seen = row[0]  # what the early writer's session object now holds
        early.commit()
        late.execute(append, ['{"id": "e2", "timestamp": 2}', None])
        late.commit()
        set_context(early, TENANT_A)
        with pytest.raises(psycopg.errors.SerializationFailure) as stale:
            early.execute(append, ['{"id": "e3", "timestamp": 3}', seen])
        early.rollback()
    assert stale.value.diag.column_name == "last_update_time"
