"""The OpenAI Agents SDK session (memsub.integrations.openai_agents.MemsubSession) against the embedded server.

Most tests here are ports of the SDK's own tests of its ``SQLiteSession``, run against ``MemsubSession`` instead:
``tests/memory/test_session.py`` and ``tests/memory/test_session_limit.py`` of openai-agents 0.24.0 (the sdist
on PyPI). Each keeps the upstream test's name, prefixed ``test_upstream_``, and its assertions; what changes is
the session under test and how a failure is provoked. Every session acts as an ordinary app login
(memsub_test_app), so row-level security is what keeps tenants apart. Agent runs use the SDK's ``ScriptedModel``
(no network).

Upstream tests that do not apply, and why:

- ``test_await_mutation_cancellation_hides_later_failure_without_loop_error``: tests the SDK's private helper;
  ported against memsub's own equivalent (``_settled``) instead.
- ``test_session_memory_disabled_parametrized`` and ``test_session_settings_resolve``: no session is involved
  (a run without a session; ``SessionSettings.resolve`` alone).
- ``test_sqlite_session_close_closes_worker_thread_connections``,
  ``test_sqlite_session_reaps_connections_from_exited_worker_threads``,
  ``test_sqlite_session_closes_retired_connections_before_the_next_allocation``,
  ``test_sqlite_session_keeps_connections_of_live_worker_threads``,
  ``test_sqlite_session_rollback_failure_evicts_connection``,
  ``test_sqlite_session_close_retries_quarantined_connection`` and
  ``test_sqlite_session_file_lock_is_shared_across_instances``: SQLiteSession's own bookkeeping of per-thread
  sqlite3 connections and of a process-local lock per database file. MemsubSession borrows connections from a
  psycopg pool for one transaction each (the pool discards broken ones) and the database serializes writers of
  a session; the part of the lock test that applies (two sessions written at once on one store) is ported.
- ``test_sqlite_session_pop_item_skips_corrupt_most_recent``,
  ``test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows``,
  ``test_sqlite_session_get_items_limit_skips_corrupt_newest_rows`` and
  ``test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows``: SQLite keeps items as free text,
  so a row can hold invalid JSON; ``memsub.agent_session_items.item`` is a ``json`` column checked to be an
  object, so such a row cannot be stored (``test_a_stored_item_is_always_a_json_object`` shows it).
- ``test_session_add_items_exception_propagates_in_streamed``: replaces ``add_items`` with a failing stub, so no
  session storage runs; it tests the Runner's streaming error path.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import uuid
from collections.abc import Coroutine
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import psycopg
import pytest
from agents import Agent, RunConfig, Runner, SessionSettings, TResponseInputItem, set_tracing_disabled
from agents.memory import OpenAIResponsesCompactionSession, Session, SQLiteSession
from agents.testing import ScriptedModel
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from memsub._calls import NotJson
from memsub.errors import ContextError, InvalidInput
from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.openai_agents import MemsubSession, _settled

from helpers import run_doc_example

set_tracing_disabled(True)
T = TypeVar("T")
RUNNERS = ["run", "run_sync", "run_streamed"]


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def get_text_message(content: str) -> ResponseOutputMessage:
    """An assistant message as a model returns it (the upstream tests' helper of the same name)."""
    return ResponseOutputMessage(
        id="1", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(text=content, type="output_text", annotations=[], logprobs=[])])


def _run_sync_wrapper(agent: Agent[Any], input_data: Any, **kwargs: Any) -> Any:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return Runner.run_sync(agent, input_data, **kwargs)
    finally:
        loop.close()


def scripted_agent() -> tuple[ScriptedModel, Agent[Any]]:
    """An agent named test whose model answers what each turn scripts (:func:`run_turn`)."""
    model = ScriptedModel()
    return model, Agent(name="test", model=model)


async def run_turn(runner_method: str, agent: Agent[Any], model: ScriptedModel, reply: str, input_data: Any,
                   **kwargs: Any) -> Any:
    """One turn: ``model`` (the agent's) answers ``reply`` to ``input_data``, run as ``runner_method`` runs."""
    model.enqueue([get_text_message(reply)])
    return await run_agent_async(runner_method, agent, input_data, **kwargs)


async def run_agent_async(runner_method: str, agent: Agent[Any], input_data: Any, **kwargs: Any) -> Any:
    """Runs the agent with Runner.run, Runner.run_sync (in a thread with its own event loop) or Runner.run_streamed."""
    if runner_method == "run":
        return await Runner.run(agent, input_data, **kwargs)
    if runner_method == "run_sync":
        return await asyncio.to_thread(_run_sync_wrapper, agent, input_data, **kwargs)
    result = Runner.run_streamed(agent, input_data, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


@pytest.fixture
def pool(db: Any) -> Any:
    """A pool of app-login connections, shared by the sessions of a test."""
    p = sync_pool(db.dsn("app"))
    yield p
    p.close()


@pytest.fixture
def tenant() -> uuid.UUID:
    return uuid.uuid4()


def new_session(pool: Any, tenant: uuid.UUID, session_id: str, **kwargs: Any) -> MemsubSession:
    return MemsubSession(session_id, pool, TenantContext(tenant), **kwargs)


# --- tests/memory/test_session.py -------------------------------------------------------------------------------


def test_upstream_await_mutation_cancellation_hides_later_failure_without_loop_error() -> None:
    async def scenario() -> None:
        started, allow_failure = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()
        loop_errors: list[dict[str, Any]] = []

        async def mutation() -> None:
            started.set()
            await allow_failure.wait()
            raise RuntimeError("mutation failed")

        loop.set_exception_handler(lambda _loop, context: loop_errors.append(context))
        task = asyncio.create_task(_settled(mutation()))
        await started.wait()
        task.cancel("caller-cancelled")
        allow_failure.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        assert loop_errors == []

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_memory_basic_functionality_parametrized(pool: Any, tenant: uuid.UUID,
                                                                   runner_method: str) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "test_session_123")
        model, agent = scripted_agent()
        result1 = await run_turn(runner_method, agent, model, "San Francisco",
                                 "What city is the Golden Gate Bridge in?", session=session)
        assert result1.final_output == "San Francisco"
        result2 = await run_turn(runner_method, agent, model, "California", "What state is it in?", session=session)
        assert result2.final_output == "California"
        last_input = model.calls[-1].input
        assert len(last_input) > 1
        session.close()

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_memory_with_explicit_instance_parametrized(pool: Any, tenant: uuid.UUID,
                                                                     runner_method: str) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "test_session_456")
        model, agent = scripted_agent()
        result1 = await run_turn(runner_method, agent, model, "Hello", "Hi there", session=session)
        assert result1.final_output == "Hello"
        result2 = await run_turn(runner_method, agent, model, "I remember you said hi",
                                 "Do you remember what I said?", session=session)
        assert result2.final_output == "I remember you said hi"
        session.close()

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_memory_different_sessions_parametrized(pool: Any, tenant: uuid.UUID,
                                                                 runner_method: str) -> None:
    async def scenario() -> None:
        model, agent = scripted_agent()
        session_1 = new_session(pool, tenant, "session_1")
        result1 = await run_turn(runner_method, agent, model, "I like cats", "I like cats", session=session_1)
        assert result1.final_output == "I like cats"
        session_2 = new_session(pool, tenant, "session_2")
        result2 = await run_turn(runner_method, agent, model, "I like dogs", "I like dogs", session=session_2)
        assert result2.final_output == "I like dogs"
        result3 = await run_turn(runner_method, agent, model, "Yes, you mentioned cats", "What did I say I like?",
                                 session=session_1)
        assert result3.final_output == "Yes, you mentioned cats"
        # Beyond upstream: the third run saw session 1's history only.
        contents = [str(item.get("content")) for item in model.calls[-1].input]
        assert "I like cats" in contents and "I like dogs" not in contents
        session_1.close()
        session_2.close()

    run(scenario())


def test_upstream_sqlite_session_memory_direct(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "direct_test")
        items: list[TResponseInputItem] = [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
        ]
        await session.add_items(items)
        retrieved = await session.get_items()
        assert len(retrieved) == 2
        assert retrieved[0].get("role") == "user"
        assert retrieved[0].get("content") == "Hello"
        assert retrieved[1].get("role") == "assistant"
        assert retrieved[1].get("content") == "Hi there!"
        await session.clear_session()
        assert len(await session.get_items()) == 0
        session.close()

    run(scenario())


def test_upstream_sqlite_session_closed_rejects_empty_add_items(db: Any, tenant: uuid.UUID) -> None:
    session = MemsubSession("closed_empty_add_test", db.dsn("app"), tenant_id=tenant)
    session.close()
    with pytest.raises(RuntimeError, match="MemsubSession is closed"):
        run(session.add_items([]))


def test_upstream_sqlite_session_memory_pop_item(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "pop_test")
        assert await session.pop_item() is None
        items: list[TResponseInputItem] = [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
            {"role": "user", "content": "How are you?"},
        ]
        await session.add_items(items)
        assert len(await session.get_items()) == 3
        popped = await session.pop_item()
        assert popped is not None
        assert popped.get("role") == "user"
        assert popped.get("content") == "How are you?"
        retrieved_after_pop = await session.get_items()
        assert len(retrieved_after_pop) == 2
        assert retrieved_after_pop[-1].get("content") == "Hi there!"
        popped2 = await session.pop_item()
        assert popped2 is not None
        assert popped2.get("role") == "assistant"
        assert popped2.get("content") == "Hi there!"
        popped3 = await session.pop_item()
        assert popped3 is not None
        assert popped3.get("role") == "user"
        assert popped3.get("content") == "Hello"
        assert await session.pop_item() is None
        assert len(await session.get_items()) == 0
        session.close()

    run(scenario())


def test_upstream_session_memory_pop_different_sessions(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session_1 = new_session(pool, tenant, "session_1")
        session_2 = new_session(pool, tenant, "session_2")
        await session_1.add_items([{"role": "user", "content": "Session 1 message"}])
        await session_2.add_items([{"role": "user", "content": "Session 2 message 1"},
                                   {"role": "user", "content": "Session 2 message 2"}])
        popped = await session_2.pop_item()
        assert popped is not None
        assert popped.get("content") == "Session 2 message 2"
        session_1_items = await session_1.get_items()
        assert len(session_1_items) == 1
        assert session_1_items[0].get("content") == "Session 1 message"
        session_2_items = await session_2.get_items()
        assert len(session_2_items) == 1
        assert session_2_items[0].get("content") == "Session 2 message 1"

    run(scenario())


def test_upstream_sqlite_session_get_items_with_limit(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "count_test")
        await session.add_items([
            {"role": "user", "content": "Message 1"},
            {"role": "assistant", "content": "Response 1"},
            {"role": "user", "content": "Message 2"},
            {"role": "assistant", "content": "Response 2"},
            {"role": "user", "content": "Message 3"},
            {"role": "assistant", "content": "Response 3"},
        ])
        all_items = await session.get_items()
        assert len(all_items) == 6
        assert all_items[0].get("content") == "Message 1"
        assert all_items[-1].get("content") == "Response 3"
        latest_2 = await session.get_items(limit=2)
        assert [i.get("content") for i in latest_2] == ["Message 3", "Response 3"]
        latest_4 = await session.get_items(limit=4)
        assert [i.get("content") for i in latest_4] == ["Message 2", "Response 2", "Message 3", "Response 3"]
        latest_10 = await session.get_items(limit=10)
        assert len(latest_10) == 6
        assert latest_10[0].get("content") == "Message 1"
        assert latest_10[-1].get("content") == "Response 3"
        assert len(await session.get_items(limit=0)) == 0
        # Beyond upstream: a negative limit (all for SQLite, none for the SDK's Redis and SQLAlchemy sessions) and
        # one no integer holds are refused naming limit (tests/integrations/test_adapter_row_limits.py); one over
        # max_rows is answered, as no limit is.
        assert len(await session.get_items(limit=10001)) == 6
        for limit in (-1, 2**31, sys.maxsize, -2**40):
            with pytest.raises(InvalidInput) as refused:
                await session.get_items(limit=limit)
            assert refused.value.field == "limit"

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_memory_appends_list_input_by_default(pool: Any, tenant: uuid.UUID,
                                                               runner_method: str) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "test_validation_parametrized")
        model, agent = scripted_agent()
        initial_history: list[TResponseInputItem] = [
            {"role": "user", "content": "Earlier message"},
            {"role": "assistant", "content": "Saved reply"},
        ]
        await session.add_items(initial_history)
        list_input: list[TResponseInputItem] = [{"role": "user", "content": "Test message"}]
        await run_turn(runner_method, agent, model, "This should run", list_input, session=session)
        assert model.calls[-1].input == initial_history + list_input

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_callback_prepared_input(pool: Any, tenant: uuid.UUID, runner_method: str) -> None:
    async def scenario() -> None:
        model, agent = scripted_agent()
        session = new_session(pool, tenant, "session_1")
        initial_history: list[TResponseInputItem] = [
            {"role": "user", "content": "Hello there."},
            {"role": "assistant", "content": "Hi, I'm here to assist you."},
        ]
        await session.add_items(initial_history)

        def filter_assistant_messages(history: list[Any], new_input: list[Any]) -> list[Any]:
            return [item for item in history if item["role"] == "user"] + new_input

        new_turn_input = [{"role": "user", "content": "What your name?"}]
        await run_turn(runner_method, agent, model, "I'm gpt-4o", new_turn_input, session=session,
                       run_config=RunConfig(session_input_callback=filter_assistant_messages))
        assert model.calls[-1].input == [initial_history[0], new_turn_input[0]]

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_callback_repeating_history_does_not_grow_session(pool: Any, tenant: uuid.UUID,
                                                                           runner_method: str) -> None:
    async def scenario() -> None:
        model, agent = scripted_agent()
        session = new_session(pool, tenant, "session_repeat")

        def repeat_first(history: list[Any], new_input: list[Any]) -> list[Any]:
            return new_input if not history else [*history, history[0], *new_input]

        for turn in range(3):
            await run_turn(runner_method, agent, model, f"assistant {turn}", f"user {turn}", session=session,
                           run_config=RunConfig(session_input_callback=repeat_first))
        stored = await session.get_items()
        assert [i.get("content") for i in stored if i.get("role") == "user"] == ["user 0", "user 1", "user 2"]
        assert len(stored) == 6

    run(scenario())


def test_upstream_sqlite_session_unicode_content(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "unicode_test")
        await session.add_items([
            {"role": "user", "content": "こんにちは"},
            {"role": "assistant", "content": "😊👍"},
            {"role": "user", "content": "Привет"},
        ])
        retrieved = await session.get_items()
        assert [i.get("content") for i in retrieved] == ["こんにちは", "😊👍", "Привет"]

    run(scenario())


def test_upstream_sqlite_session_special_characters_and_sql_injection(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "special_chars_test")
        items: list[TResponseInputItem] = [
            {"role": "user", "content": "O'Reilly"},
            {"role": "assistant", "content": "DROP TABLE sessions;"},
            {"role": "user", "content": '"SELECT * FROM users WHERE name = "admin";"'},
            {"role": "assistant", "content": "Robert'); DROP TABLE students;--"},
            {"role": "user", "content": "Normal message"},
        ]
        await session.add_items(items)
        assert await session.get_items() == items

    run(scenario())


def test_upstream_sqlite_session_concurrent_access(pool: Any, tenant: uuid.UUID) -> None:
    session = new_session(pool, tenant, "concurrent_test")
    items: list[TResponseInputItem] = [{"role": "user", "content": f"Message {i}"} for i in range(10)]

    def add_item(item: TResponseInputItem) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.run_until_complete(session.add_items([item]))
        loop.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as executor:
        list(executor.map(add_item, items))
    retrieved = run(session.get_items())
    assert {i.get("content") for i in retrieved} == {f"Message {i}" for i in range(10)}
    assert len(retrieved) == 10


def test_upstream_sqlite_session_file_lock_is_shared_across_instances(pool: Any, tenant: uuid.UUID) -> None:
    """The part that applies: two sessions of one store written at once each keep their own item."""
    async def scenario() -> None:
        session_1 = new_session(pool, tenant, "session_1")
        session_2 = new_session(pool, tenant, "session_2")
        await asyncio.gather(session_1.add_items([{"role": "user", "content": "session_1"}]),
                             session_2.add_items([{"role": "user", "content": "session_2"}]))
        assert [i.get("content") for i in await session_1.get_items()] == ["session_1"]
        assert [i.get("content") for i in await session_2.get_items()] == ["session_2"]

    run(scenario())


def test_upstream_sqlite_session_failed_add_items_releases_write_lock(db: Any, pool: Any, tenant: uuid.UUID) -> None:
    session = new_session(pool, tenant, "rollback_test")
    unserializable = cast(TResponseInputItem, {"role": "user", "content": object()})
    with pytest.raises(TypeError):
        run(session.add_items([unserializable]))
    _assert_pool_idle(pool)
    run(session.add_items([{"role": "user", "content": "after failure"}]))
    assert [i.get("content") for i in run(session.get_items())] == ["after failure"]


def _assert_pool_idle(pool: Any) -> None:
    """No connection the pool hands out is left inside a transaction."""
    with pool.connection() as connection:
        assert connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_upstream_session_settings_default(pool: Any, tenant: uuid.UUID) -> None:
    session = new_session(pool, tenant, "default_settings_test")
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit is None


def test_upstream_session_settings_constructor(pool: Any, tenant: uuid.UUID) -> None:
    session = new_session(pool, tenant, "constructor_settings_test", session_settings=SessionSettings(limit=5))
    assert session.session_settings is not None
    assert session.session_settings.limit == 5


def test_upstream_session_settings_constructor_normalizes_dictionary(pool: Any, tenant: uuid.UUID) -> None:
    session = new_session(pool, tenant, "dictionary_settings_test", session_settings={"limit": 0})
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 0
    assert session.session_settings.resolve({"limit": 4}).limit == 4


def test_upstream_session_settings_rejects_unknown_dictionary_fields(pool: Any, tenant: uuid.UUID) -> None:
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        new_session(pool, tenant, "invalid_settings_test", session_settings={"limitt": 1})


def test_upstream_get_items_uses_session_settings_limit(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "uses_settings_limit_test", session_settings=SessionSettings(limit=3))
        await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(5)])
        retrieved = await session.get_items()
        assert [i.get("content") for i in retrieved] == ["Message 2", "Message 3", "Message 4"]

    run(scenario())


def test_upstream_get_items_explicit_limit_overrides_session_settings(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "explicit_override_test", session_settings=SessionSettings(limit=5))
        await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(10)])
        retrieved = await session.get_items(limit=2)
        assert [i.get("content") for i in retrieved] == ["Message 8", "Message 9"]

    run(scenario())


def test_upstream_runner_with_session_settings_override(pool: Any, tenant: uuid.UUID) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "runner_override_test", session_settings=SessionSettings(limit=100))
        await session.add_items([{"role": "user", "content": f"Turn {i}"} for i in range(10)])
        model, agent = scripted_agent()
        model.enqueue([get_text_message("Got it")])
        await Runner.run(agent, "New question", session=session,
                         run_config=RunConfig(session_settings=SessionSettings(limit=2)))
        history = [i for i in model.calls[-1].input if i.get("content") != "New question"]
        assert len(history) == 2

    run(scenario())


@pytest.mark.parametrize("operation", ["clear", "pop"])
def test_upstream_sqlite_session_failed_operation_releases_write_lock(db: Any, pool: Any, tenant: uuid.UUID,
                                                                      operation: str) -> None:
    """Upstream's test_sqlite_session_failed_clear_session_rolls_back and
    test_sqlite_session_failed_pop_item_releases_write_lock break the SQLite table; here the call fails inside its
    transaction because the context asks for a role the login does not hold. Nothing changes and no transaction
    stays open on the pooled connection."""
    good = new_session(pool, tenant, "failed_write")
    run(good.add_items([{"role": "user", "content": "kept"}]))
    bad = MemsubSession("failed_write", pool, TenantContext(tenant, roles=["platform_admin"]))
    with pytest.raises(ContextError):
        run(bad.clear_session() if operation == "clear" else bad.pop_item())
    _assert_pool_idle(pool)
    assert [i.get("content") for i in run(good.get_items())] == ["kept"]


def _wait_until_blocked(db: Any, mutation: asyncio.Task[Any]) -> None:
    """Returns once a backend waits for the locked table (the mutation under test reached it), or the mutation
    ended without reaching it."""
    with db.connect(autocommit=True) as conn:
        while not mutation.done() and not conn.execute(
                "select exists (select from pg_locks where not granted "
                "and relation = 'memsub.agent_session_items'::regclass)").fetchone()[0]:
            conn.execute("select pg_sleep(0.01)")


@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
def test_upstream_sqlite_session_post_commit_cancellation_propagates_after_known_outcome(
        db: Any, pool: Any, tenant: uuid.UUID, operation: str) -> None:
    """Upstream pauses SQLite's commit; here the superuser holds a lock on the table, so the write waits inside its
    transaction while the caller is cancelled twice. The cancellation surfaces only once the write is done."""
    async def scenario() -> None:
        session = new_session(pool, tenant, f"post_commit_{operation}")
        item: TResponseInputItem = {"role": "user", "content": "once"}
        if operation != "add":
            await session.add_items([item])
        with db.connect() as blocker:
            blocker.execute("lock table memsub.agent_session_items in exclusive mode")
            if operation == "add":
                mutation: asyncio.Task[Any] = asyncio.create_task(session.add_items([item]))
            elif operation == "pop":
                mutation = asyncio.create_task(session.pop_item())
            else:
                mutation = asyncio.create_task(session.clear_session())
            await asyncio.to_thread(_wait_until_blocked, db, mutation)
            assert not mutation.done()
            mutation.cancel()
            await asyncio.sleep(0)
            mutation.cancel()
            await asyncio.sleep(0)
            assert not mutation.done()  # still waiting for the write's outcome
            blocker.rollback()
        with pytest.raises(asyncio.CancelledError):
            await mutation
        assert mutation.cancelled()
        assert await session.get_items() == ([item] if operation == "add" else [])

    run(scenario())


# --- tests/memory/test_session_limit.py -------------------------------------------------------------------------


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_limit_parameter(pool: Any, tenant: uuid.UUID, runner_method: str) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "limit_test")
        model, agent = scripted_agent()
        for n in (1, 2, 3):
            await run_turn(runner_method, agent, model, f"Reply {n}", f"Message {n}", session=session)
        assert len(await session.get_items()) == 6
        await run_turn(runner_method, agent, model, "Reply 4", "Message 4", session=session,
                       run_config=RunConfig(session_settings=SessionSettings(limit=2)))
        last_input = model.calls[-1].input
        assert len(last_input) == 3
        assert last_input[0].get("content") == "Message 3"
        assert last_input[1].get("content")[0]["text"] == "Reply 3"
        assert last_input[2].get("content") == "Message 4"

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_limit_drops_unmatched_history_function_call_output(pool: Any, tenant: uuid.UUID,
                                                                              runner_method: str) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "limit_tool_pair")
        history = cast(list[TResponseInputItem], [
            {"role": "user", "content": "What is the weather?"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}]},
        ])
        await session.add_items(history)
        assert await session.get_items(limit=2) == history[-2:]
        model, agent = scripted_agent()
        await run_turn(runner_method, agent, model, "Tomorrow is sunny too.", "What about tomorrow?", session=session,
                       run_config=RunConfig(session_settings=SessionSettings(limit=2)))
        assert model.calls[-1].input == [history[-1], {"role": "user", "content": "What about tomorrow?"}]

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_limit_zero(pool: Any, tenant: uuid.UUID, runner_method: str) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "limit_zero_test")
        model, agent = scripted_agent()
        for n in (1, 2):
            await run_turn(runner_method, agent, model, f"Reply {n}", f"Message {n}", session=session)
        await run_turn(runner_method, agent, model, "Reply 3", "Message 3", session=session,
                       run_config=RunConfig(session_settings=SessionSettings(limit=0)))
        last_input = model.calls[-1].input
        assert len(last_input) == 1
        assert last_input[0].get("content") == "Message 3"

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_limit_none_gets_all_history(pool: Any, tenant: uuid.UUID, runner_method: str) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "limit_none_test")
        model, agent = scripted_agent()
        for n in range(1, 6):
            await run_turn(runner_method, agent, model, f"Reply {n}", f"Message {n}", session=session)
        assert len(await session.get_items()) == 10
        await run_turn(runner_method, agent, model, "Reply 6", "Message 6", session=session,
                       run_config=RunConfig(session_settings=SessionSettings(limit=None)))
        last_input = model.calls[-1].input
        assert len(last_input) == 11
        assert last_input[0].get("content") == "Message 1"
        assert last_input[-1].get("content") == "Message 6"

    run(scenario())


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_upstream_session_limit_larger_than_history(pool: Any, tenant: uuid.UUID, runner_method: str) -> None:
    async def scenario() -> None:
        session = new_session(pool, tenant, "limit_large_test")
        model, agent = scripted_agent()
        await run_turn(runner_method, agent, model, "Reply 1", "Message 1", session=session)
        await run_turn(runner_method, agent, model, "Reply 2", "Message 2", session=session,
                       run_config=RunConfig(session_settings=SessionSettings(limit=100)))
        last_input = model.calls[-1].input
        assert len(last_input) == 3
        assert last_input[0].get("content") == "Message 1"
        assert last_input[1].get("content")[0]["text"] == "Reply 1"
        assert last_input[2].get("content") == "Message 2"

    run(scenario())


# --- memsub's own ------------------------------------------------------------------------------------------------


def test_memsub_session_satisfies_the_sdk_session_protocol(pool: Any, tenant: uuid.UUID) -> None:
    assert isinstance(new_session(pool, tenant, "protocol"), Session)


def test_items_round_trip_exactly(pool: Any, tenant: uuid.UUID) -> None:
    """Items come back as they were added: key order, nested values, numbers and a NUL character included."""
    items = cast(list[TResponseInputItem], [
        {"type": "function_call", "name": "f", "call_id": "c", "arguments": "{\"a\": 1.50}"},
        {"role": "user", "content": "nul \x00 inside", "z": [1, 2.5, None, True, {"b": "c"}], "a": 10**18},
    ])
    session = new_session(pool, tenant, "round_trip")
    run(session.add_items(items))
    back = run(session.get_items())
    assert back == items
    assert [list(item) for item in back] == [list(item) for item in items]


def test_two_tenants_with_the_same_session_id_are_isolated(db: Any, pool: Any) -> None:
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    session_a = new_session(pool, tenant_a, "shared-id")
    session_b = new_session(pool, tenant_b, "shared-id")
    run(session_a.add_items([{"role": "user", "content": "a1"}, {"role": "user", "content": "a2"}]))
    run(session_b.add_items([{"role": "user", "content": "b1"}]))
    assert [i.get("content") for i in run(session_a.get_items())] == ["a1", "a2"]
    assert [i.get("content") for i in run(session_b.get_items())] == ["b1"]

    # Tenant B pops and clears its own session only.
    assert run(session_b.pop_item()) == {"role": "user", "content": "b1"}
    assert run(session_b.pop_item()) is None
    run(session_b.add_items([{"role": "user", "content": "b2"}]))
    run(session_b.clear_session())
    assert [i.get("content") for i in run(session_a.get_items())] == ["a1", "a2"]

    # Reading the table directly as the app login shows only the context tenant's rows.
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant_b)])
        assert conn.execute("select count(*) from memsub.agent_session_items").fetchone() == (0,)
        conn.commit()  # a transaction acts for one tenant
        conn.execute("select memsub.set_context(%s)", [str(tenant_a)])
        assert conn.execute("select count(*) from memsub.agent_session_items").fetchone() == (2,)
        conn.rollback()
        # Without a context nothing is visible, and the functions refuse.
        assert conn.execute("select count(*) from memsub.agent_session_items").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select * from memsub.agent_session_get_items('shared-id')")
        conn.rollback()
        # The app login cannot write the table past the functions.
        conn.execute("select memsub.set_context(%s)", [str(tenant_a)])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("delete from memsub.agent_session_items")
    with db.connect() as conn:
        owners = conn.execute("select tenant_id, count(*) from memsub.agent_session_items group by 1").fetchall()
        assert owners == [(tenant_a, 2)]


ORG_X = uuid.UUID("0000000a-0000-0000-0000-00000000000a")


@pytest.mark.parametrize("runner_method", RUNNERS)
def test_a_session_is_read_and_changed_only_from_the_context_that_wrote_it(db: Any, pool: Any, tenant: uuid.UUID,
                                                                            runner_method: str) -> None:
    """A session id is one conversation, written from one context (an organization's, or the tenant-wide one).
    An organization read a tenant-wide session's history but could add no turn to it, so a run there failed
    once it wrote; and the tenant-wide context read another organization's session as empty while its writes
    were refused (the id is taken). Reads now follow the writes: from another context every call is refused
    naming session_id (ContextError), and the table shows an organization no tenant-wide item (policy
    agent_session_context)."""
    item: TResponseInputItem = {"role": "user", "content": "kept"}
    wide = MemsubSession("wide", pool, TenantContext(tenant))
    mine = MemsubSession("of-x", pool, TenantContext(tenant, ORG_X))
    run(wide.add_items([item]))
    run(mine.add_items([item]))
    for other in (MemsubSession("wide", pool, TenantContext(tenant, ORG_X)),
                  MemsubSession("of-x", pool, TenantContext(tenant))):
        model, agent = scripted_agent()
        model.enqueue([get_text_message("never")])
        with pytest.raises(ContextError) as refused:
            run(run_agent_async(runner_method, agent, "hello", session=other))
        assert refused.value.sqlstate == "42501" and refused.value.field == "session_id", refused.value
        assert not model.calls
        for call in (other.get_items(), other.get_items(limit=1), other.add_items([item]), other.pop_item(),
                     other.clear_session()):
            with pytest.raises(ContextError) as refused:
                run(call)
            assert refused.value.field == "session_id", refused.value
    assert run(wide.get_items()) == [item]
    assert run(mine.get_items()) == [item]
    with db.connect("app") as conn:
        for context, expected in (([str(tenant)], ["wide"]), ([str(tenant), str(ORG_X)], ["of-x"])):
            conn.execute(f"select memsub.set_context({', '.join(['%s'] * len(context))})", context)
            seen = conn.execute("select session_id from memsub.agent_session_items order by 1").fetchall()
            assert [r[0] for r in seen] == expected, context
            conn.commit()


def test_bad_input_names_the_field_and_writes_nothing(db: Any, pool: Any, tenant: uuid.UUID) -> None:
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        for query, field in [
            ("select memsub.agent_session_add_items('', '[{\"role\": \"user\"}]')", "session_id"),
            ("select memsub.agent_session_add_items(null, '[{\"role\": \"user\"}]')", "session_id"),
            ("select memsub.agent_session_add_items('s', '{\"role\": \"user\"}')", "items"),
            ("select memsub.agent_session_add_items('s', null)", "items"),
            ("select memsub.agent_session_add_items('s', '[{\"role\": \"user\"}, 3]')", "items[1]"),
            ("select * from memsub.agent_session_get_items(' ')", "session_id"),
            ("select memsub.agent_session_pop_item('')", "session_id"),
            ("select memsub.agent_session_clear(null)", "session_id"),
        ]:
            with pytest.raises(psycopg.errors.InvalidParameterValue) as raised:
                with conn.transaction():
                    conn.execute(query)
            assert raised.value.diag.column_name == field, query
            assert field.split("[")[0] in str(raised.value), query
    # Through the adapter: the memsub error names the field, and the constructor checks the session id.
    session = new_session(pool, tenant, "s")
    with pytest.raises(InvalidInput) as error:
        run(session.add_items([{"role": "user", "content": "fine"}, cast(TResponseInputItem, ["not", "an object"])]))
    assert error.value.field == "items[1]"
    with pytest.raises(InvalidInput) as error:  # an unpaired surrogate has no UTF-8 form to send
        run(session.add_items([{"role": "user", "content": "half \ud800"}]))
    assert (error.value.field, error.value.sqlstate) == ("items", "22021")
    for number in (float("nan"), float("inf")):  # json.dumps wrote NaN, which the server refused naming nothing
        with pytest.raises(InvalidInput) as error:
            run(session.add_items([{"role": "user", "content": "fine", "score": number}]))
        assert (error.value.field, error.value.sqlstate) == ("items", "22P02")
        assert "items" in str(error.value)
    _assert_pool_idle(pool)
    with pytest.raises(ValueError, match="session_id"):
        MemsubSession(" ", pool, TenantContext(tenant))
    with pytest.raises(ValueError, match="tenant_id"):
        MemsubSession("s", pool)
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.agent_session_items").fetchone() == (0,)


def test_a_value_that_is_not_json_is_refused_naming_its_item(pool: Any, tenant: uuid.UUID) -> None:
    """A set, bytes or any other object inside an item is refused as the SDK's SQLiteSession refuses it (a
    TypeError, before anything is written), and the error names the item: ``items[i]``, as the JSON arguments of
    the client are named (``memsub._calls.NotJson``). Before, json.dumps's own TypeError came through ("Object of
    type set is not JSON serializable"), naming neither the field nor which item of the batch held the value."""
    session = new_session(pool, tenant, "not_json")
    for value in ({1, 2}, b"bytes", object()):
        batch = cast(list[TResponseInputItem], [{"role": "user", "content": "fine"},
                                                {"role": "user", "content": [{"nested": value}]}])
        with pytest.raises(TypeError) as error:
            run(session.add_items(batch))
        assert isinstance(error.value, NotJson) and error.value.field == "items[1]", error.value
        assert str(error.value).startswith("items[1]: ") and type(value).__name__ in str(error.value)
    _assert_pool_idle(pool)
    assert run(session.get_items()) == []


class _CompactingResponses:
    """The ``responses`` of an OpenAI client whose ``compact`` answers one summary message, offline."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def compact(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        summary = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "summary"}]}
        return SimpleNamespace(output=[summary], usage=None)


def test_the_sdk_compaction_session_compacts_a_memsub_session(pool: Any, tenant: uuid.UUID) -> None:
    """The SDK's OpenAIResponsesCompactionSession reads the whole history of the session it wraps as
    ``get_items(limit=2_147_483_647)`` (its _ALL_SESSION_ITEMS_LIMIT) before replacing it with the compacted
    items. MemsubSession refused that limit as over max_rows (LimitExceeded naming limit), so compaction over it
    failed after the compaction request had been made (and billed), history unchanged, where over SQLiteSession it
    succeeds. A limit is now the most items to read, as in the SDK's sessions; no limit reads the whole history
    already, so max_rows bounded nothing a caller could not read anyway."""
    history = cast(list[TResponseInputItem], [{"role": "user", "content": f"turn {n}"} for n in range(4)])
    outcomes = []
    for underlying in (SQLiteSession("compacted"), new_session(pool, tenant, "compacted")):
        responses = _CompactingResponses()
        session = OpenAIResponsesCompactionSession("compacted", underlying,
                                                   client=cast(Any, SimpleNamespace(responses=responses)),
                                                   compaction_mode="input")
        run(underlying.add_items(list(history)))
        run(session.run_compaction({"force": True}))
        outcomes.append((len(responses.calls), run(underlying.get_items())))
        underlying.close()
    assert outcomes[0][1] == [{"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": "summary"}]}]
    assert outcomes[1] == outcomes[0]


def test_a_stored_item_is_always_a_json_object(db: Any, tenant: uuid.UUID) -> None:
    """Why the upstream corrupt-row tests do not apply: not even the superuser can store such a row."""
    with db.connect() as conn:
        for item, sqlstate in [("not valid json {{{", "22P02"), ("[1, 2]", "23514")]:
            with pytest.raises(psycopg.Error) as raised:
                with conn.transaction():
                    conn.execute("insert into memsub.agent_session_items (tenant_id, session_id, item) "
                                 "values (%s, 's', %s)", [tenant, item])
            assert raised.value.sqlstate == sqlstate


def test_integrations_doc_example_runs_as_written(db: Any, capsys: Any) -> None:
    run_doc_example("OpenAI Agents SDK session", db.dsn("app"))
    out = capsys.readouterr().out
    assert "Paris" in out and "['What is the capital of France?', 'Paris', 'And of Italy?', 'Rome']" in out
