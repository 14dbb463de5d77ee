"""MemsubSession against the OpenAI Agents SDK's own sessions, on the same random operation sequences.

Each sequence (a seeded ``random.Random``, so a failure names the seed and step that reproduce it) interleaves
``add_items`` (batches of messages, function calls and their outputs, reasoning items, unicode, large items,
empty batches), ``get_items`` (limit unset, None, 0, 1, n, the session's length and more), ``pop_item`` (on empty
and non-empty sessions) and ``clear_session`` over several session ids, some with a ``session_settings.limit``,
each used through two session objects. Every operation runs on ``MemsubSession`` (an ordinary app login in a
tenant context) and on the SDK's ``SQLiteSession``, the reference, whose sessions all share one database file as
memsub's share one tenant; ``AdvancedSQLiteSession`` (its main branch) runs alongside as a second reference, and
further tests wrap each side in the SDK's ``EncryptedSession`` and in its ``OpenAIResponsesCompactionSession``
(with forced compactions). Answers must be equal exactly: the same items in
the same order, with the same key order and the same JSON number types. The calls take the SDK's own call shapes
(``agents.run_internal.session_persistence``, as ``Runner`` calls a session), in one event loop per sequence or a
fresh loop per call (as ``Runner.run_sync`` uses a session). Whole scripted agent runs with a tool, bad input and
concurrent writers are compared too.

Where memsub deliberately differs (docs/integrations.md, "Where memsub differs from `SQLiteSession`"), the
comparison expects exactly that difference and nothing else: for bad input, the refusals of the table there,
each naming its field with nothing written; for concurrent batches, the order they land in.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from agents import (
    Agent,
    RunConfig,
    Runner,
    SessionSettings,
    SQLiteSession,
    TResponseInputItem,
    function_tool,
    set_tracing_disabled,
)
from agents.extensions.memory import AdvancedSQLiteSession, EncryptedSession
from agents.memory import OpenAIResponsesCompactionSession, SessionABC
from agents.run_internal.session_persistence import _session_add_items, _session_get_items, _session_pop_item
from agents.testing import ScriptedModel, assistant_message, function_call

from memsub._calls import NotJson
from memsub.errors import InvalidInput, LimitExceeded, LocalValidationError
from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.openai_agents import MemsubSession

SEEDS = range(20)
ENCRYPTED_SEEDS = range(6)
STEPS = 50
MAX_ROWS = 10_000  # the max_rows limit's default (sql/015_limits.sql)

SESSION_IDS: list[tuple[str, int | None]] = [
    ("conversation-1", None),
    ("conversation-2", None),
    ("会话 🙂 'quoted' \"double\" \\ back", None),
    (" padded id ", 3),
    ("x" * 200, 1),
    ("conversation-1 ", None),  # differs from conversation-1 by a trailing space only
    ("CONVERSATION-1", 2),  # and by case only
    ("caf\u00e9", None),  # composed
    ("cafe\u0301", None),  # decomposed: the same text to a reader, another session id
]

TEXTS = [
    "hello", "", " ", "emoji 🙂👩‍👩‍👧 and astral 𝄞", "日本語のテキスト", "مرحبا بالعالم", "e\u0301 combining",
    "line\nbreak\ttab\r", "nul \x00 inside", "\u2028\u2029 separators", "quote ' double \" back \\",
    "'); drop table memsub.agent_session_items; --", "{\"looks\": \"like json\"}", "\\u0000 escaped text",
    "\ufeff bom", "\U0010ffff last code point",
]


def _text(rng: random.Random) -> str:
    return rng.choice(TEXTS) + (str(rng.randrange(10**6)) if rng.random() < 0.5 else "")


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, -1, 7, 2**31, -(2**63), 10**30, rng.randrange(-10**9, 10**9)])
    if kind == 3:
        return rng.choice([0.0, -0.0, 1.0, 0.1, -2.5e-308, 1e300, 1.5, rng.uniform(-1e6, 1e6)])
    if kind in (4, 5):
        return _text(rng)
    if kind in (6, 7):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_text(rng)[:12] + str(i): _value(rng, depth + 1) for i in range(rng.randrange(4))}


def _item(rng: random.Random) -> dict[str, Any]:
    kind = rng.randrange(8)
    call_id = f"call_{rng.randrange(10**6)}"
    if kind == 0:
        return {"role": rng.choice(["user", "system", "developer"]), "content": _text(rng)}
    if kind == 1:
        return {"role": "user", "content": [{"type": "input_text", "text": _text(rng)}]}
    if kind == 2:
        return {"id": f"msg_{rng.randrange(10**6)}", "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": _text(rng), "annotations": [], "logprobs": []}]}
    if kind == 3:
        return {"type": "function_call", "call_id": call_id, "name": "lookup",
                "arguments": json.dumps({"q": _text(rng), "n": rng.randrange(5)})}
    if kind == 4:
        return {"type": "function_call_output", "call_id": call_id, "output": _text(rng)}
    if kind == 5:
        return {"type": "reasoning", "id": f"rs_{rng.randrange(10**6)}",
                "summary": [{"type": "summary_text", "text": _text(rng)}]}
    if kind == 6:  # large-ish: tens of kilobytes, far under max_json_bytes
        return {"role": "user", "content": _text(rng) * rng.randrange(500, 3000)}
    # Arbitrary keys and nested values, key order chosen at random.
    item = {"z_last": _value(rng), "a_first": _value(rng), "extra": _value(rng)}
    keys = list(item)
    rng.shuffle(keys)
    return {key: item[key] for key in keys}


def _limit(rng: random.Random, count: int) -> int | None:
    return rng.choice([None, None, 0, 1, 2, max(count - 1, 0), count, count + 1, count + rng.randrange(2, 50),
                       MAX_ROWS])


def _exact(value: Any) -> str:
    """The value as JSON text: equal texts mean equal items, in the same key order with the same number types."""
    return json.dumps(value, ensure_ascii=False)


KEY = "0123456789abcdef0123456789abcdef"  # EncryptedSession's key: the same on both sides


@pytest.fixture
def pool(db: Any) -> Any:
    p = sync_pool(db.dsn("app"))
    yield p
    p.close()


class Compacting:
    """The ``responses`` of an OpenAI client, offline: ``compact`` answers one assistant message that names how
    many items it was sent and the last one's JSON digest."""

    @staticmethod
    def client() -> Any:
        return SimpleNamespace(responses=Compacting())

    async def compact(self, **kwargs: Any) -> Any:
        sent = kwargs.get("input") or []
        text = f"summary of {len(sent)} items, last {hash(_exact(sent[-1:]))}"
        return SimpleNamespace(usage=None, output=[{"type": "message", "role": "assistant",
                                                    "content": [{"type": "output_text", "text": text}]}])


class Pair:
    """One session id on memsub and on the references, each through two session objects (as two workers of an
    application open the same conversation); ``wrapper``: "encrypted" wraps each in the SDK's EncryptedSession
    (which calls the session under it with limits of its own), "compaction" in its OpenAIResponsesCompactionSession
    (which reads the whole history as limit 2147483647 and replaces it by clear and add; its compaction requests
    answered offline by :class:`Compacting`)."""

    def __init__(self, pool: Any, tenant: uuid.UUID, path: Path, session_id: str, limit: int | None,
                 wrapper: str) -> None:
        self.closers: list[Callable[[], None]] = []
        self.handles = [self._handle(pool, tenant, path, session_id, limit, wrapper) for _ in range(2)]

    def _handle(self, pool: Any, tenant: uuid.UUID, path: Path, session_id: str, limit: int | None,
                wrapper: str) -> tuple[SessionABC, list[SessionABC]]:
        """(memsub's session object, the references' objects) of the session id."""
        settings = SessionSettings(limit=limit)
        memsub = MemsubSession(session_id, pool, TenantContext(tenant), session_settings=settings)
        sqlite = SQLiteSession(session_id, path / "reference.db", session_settings=settings)
        self.closers += [memsub.close, sqlite.close]
        if wrapper == "compaction":
            return (OpenAIResponsesCompactionSession(session_id, memsub, client=Compacting.client()),
                    [OpenAIResponsesCompactionSession(session_id, sqlite, client=Compacting.client())])
        if wrapper == "encrypted":
            return EncryptedSession(session_id, memsub, KEY), [EncryptedSession(session_id, sqlite, KEY)]
        advanced = AdvancedSQLiteSession(session_id=session_id, db_path=str(path / "advanced.db"),
                                         create_tables=True, session_settings=settings)
        self.closers.append(advanced.close)
        return memsub, [sqlite, advanced]

    def close(self) -> None:
        for close in self.closers:
            close()


async def _apply(session: SessionABC, op: tuple[Any, ...]) -> Any:
    """One operation, called as the SDK's Runner calls a session (agents.run_internal.session_persistence)."""
    name = op[0]
    if name == "add":
        await _session_add_items(session, cast(list[TResponseInputItem], op[1]))
        return None
    if name == "get":
        if op[1] == "unset":
            return await _session_get_items(session)
        return await _session_get_items(session, limit=op[1])
    if name == "pop":
        return await _session_pop_item(session)
    if name == "compact":
        await cast(OpenAIResponsesCompactionSession, session).run_compaction({"force": True})
        return None
    await session.clear_session()
    return None


def _operations(rng: random.Random, compact: bool = False) -> list[tuple[int, int, tuple[Any, ...]]]:
    """A random sequence of (session index, which of its two objects, operation); each session's length is
    tracked as the reference would have it, so limits around the length are chosen."""
    counts = [0] * len(SESSION_IDS)
    ops: list[tuple[int, int, tuple[Any, ...]]] = []
    for _ in range(STEPS):
        index = rng.randrange(len(SESSION_IDS))
        handle = rng.randrange(2)
        roll = rng.random()
        if roll < 0.4:
            batch = [_item(rng) for _ in range(rng.choice([0, 1, 1, 2, 3, 5]))]
            ops.append((index, handle, ("add", batch)))
            counts[index] += len(batch)
        elif roll < 0.7:
            limit = _limit(rng, counts[index])
            ops.append((index, handle, ("get", "unset" if limit is None and rng.random() < 0.5 else limit)))
        elif roll < 0.92:
            ops.append((index, handle, ("pop",)))
            counts[index] = max(counts[index] - 1, 0)
        elif compact and rng.random() < 0.5:
            ops.append((index, handle, ("compact",)))
            counts[index] = 1
        else:
            ops.append((index, handle, ("clear",)))
            counts[index] = 0
    return ops


def _run_sequence(pool: Any, path: Path, seed: int, wrapper: str = "") -> None:
    rng = random.Random(seed)
    path.mkdir()
    tenant = uuid.uuid4()
    pairs = [Pair(pool, tenant, path, sid, limit, wrapper) for sid, limit in SESSION_IDS]
    ops = _operations(rng, compact=wrapper == "compaction")

    async def one(step: int, index: int, handle: int, op: tuple[Any, ...]) -> None:
        memsub, references = pairs[index].handles[handle]
        where = f"seed {seed}, step {step}, session {index}.{handle}, {op[0]} {op[1] if op[0] == 'get' else ''}"
        answers = [await _apply(reference, op) for reference in references]
        for other in answers[1:]:
            assert _exact(other) == _exact(answers[0]), f"{where}: the references disagree"
        assert _exact(await _apply(memsub, op)) == _exact(answers[0]), where

    async def in_one_loop() -> None:
        for step, (index, handle, op) in enumerate(ops):
            await one(step, index, handle, op)

    try:
        if seed % 3 == 0:  # a fresh event loop for each call, as Runner.run_sync uses a session
            for step, (index, handle, op) in enumerate(ops):
                asyncio.run(one(step, index, handle, op))
        else:
            asyncio.run(in_one_loop())
        for index, pair in enumerate(pairs):  # the final state, read whole
            memsub, references = pair.handles[1]
            final = [asyncio.run(_apply(s, ("get", None))) for s in [memsub, *references]]
            assert _exact(final[0]) == _exact(final[1]), f"seed {seed}, session {index}, final"
    finally:
        for pair in pairs:
            pair.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_random_operation_sequences_agree_with_the_sdk_sessions(pool: Any, tmp_path: Path, seed: int) -> None:
    _run_sequence(pool, tmp_path / "plain", seed)


@pytest.mark.parametrize("seed", ENCRYPTED_SEEDS)
def test_random_operation_sequences_agree_under_the_sdk_encrypted_session(pool: Any, tmp_path: Path,
                                                                          seed: int) -> None:
    """The SDK's EncryptedSession over MemsubSession and over SQLiteSession: it stores envelopes (JSON objects)
    and reads the session under it in windows of its own; the decrypted histories must agree."""
    _run_sequence(pool, tmp_path / "encrypted", seed, "encrypted")


@pytest.mark.parametrize("seed", ENCRYPTED_SEEDS)
def test_random_operation_sequences_agree_under_the_sdk_compaction_session(pool: Any, tmp_path: Path,
                                                                           seed: int) -> None:
    """The SDK's OpenAIResponsesCompactionSession over MemsubSession and over SQLiteSession, with forced
    compactions among the operations: the histories must agree, compacted ones included."""
    _run_sequence(pool, tmp_path / "compaction", seed, "compaction")


# --- invalid input -----------------------------------------------------------------------------------------------

SEEDED: list[dict[str, Any]] = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}]


def _outcome(session_id: Any, make: Callable[[Any], SessionABC],
             op: Callable[[SessionABC], Awaitable[Any]]) -> tuple[Any, Any]:
    """(what ``op`` answered or raised, the session's items afterwards) on a session holding SEEDED.
    A session its constructor refuses answers the constructor's error and no items."""
    try:
        session = make(session_id)
    except Exception as error:
        return error, None
    try:
        asyncio.run(session.add_items(cast(list[TResponseInputItem], list(SEEDED))))
    except Exception as error:
        return error, None
    try:
        try:
            answer: Any = asyncio.run(op(session))  # type: ignore[arg-type]
        except Exception as error:
            answer = error
        return answer, asyncio.run(session.get_items())
    finally:
        session.close()  # type: ignore[attr-defined]


def _add(*items: Any) -> Callable[[SessionABC], Awaitable[Any]]:
    return lambda session: session.add_items(cast(list[TResponseInputItem], list(items)))


def _get(limit: Any) -> Callable[[SessionABC], Awaitable[Any]]:
    return lambda session: session.get_items(limit)


FINE = {"role": "user", "content": "fine"}
ALL = [*SEEDED]
SAME = "the same as the reference"

# (case, session id, operation, what SQLiteSession answers, what MemsubSession answers): an answer is SAME, a list
# of items, or an error as (type, field, sqlstate); the items afterwards are the reference's for SAME, and SEEDED
# (nothing written) for every memsub error.
INVALID: list[tuple[str, Any, Callable[[SessionABC], Awaitable[Any]], Any, Any]] = [
    ("an empty batch", "s", _add(), None, SAME),
    ("a string item", "s", _add(FINE, "hello"), None, (InvalidInput, "items[1]", "22023")),
    ("a list item", "s", _add(FINE, [1, 2]), None, (InvalidInput, "items[1]", "22023")),
    ("a number item", "s", _add(3), None, (InvalidInput, "items[0]", "22023")),
    ("a null item", "s", _add(FINE, None), None, (InvalidInput, "items[1]", "22023")),
    ("a set inside an item", "s", _add(FINE, {"content": {1}}), (TypeError, None, None), (NotJson, "items[1]", None)),
    ("bytes inside an item", "s", _add({"content": b"x"}), (TypeError, None, None), (NotJson, "items[0]", None)),
    ("an object inside an item", "s", _add({"content": object()}), (TypeError, None, None),
     (NotJson, "items[0]", None)),
    ("NaN inside an item", "s", _add({"score": float("nan")}), None, (LocalValidationError, "items", "22P02")),
    ("an infinity inside an item", "s", _add({"score": float("-inf")}), None,
     (LocalValidationError, "items", "22P02")),
    ("an unpaired surrogate", "s", _add({"content": "half \ud800"}), None, (LocalValidationError, "items", "22021")),
    ("an item over max_json_bytes", "s", _add(FINE, {"content": "x" * 1_048_576}), None,
     (LimitExceeded, "items[1]", "54000")),
    ("limit -1", "s", _get(-1), ALL, (InvalidInput, "limit", "22023")),
    ("limit -5", "s", _get(-5), ALL, (InvalidInput, "limit", "22023")),
    ("limit over max_rows", "s", _get(MAX_ROWS + 1), ALL, SAME),
    ("the SDK compaction session's limit for all", "s", _get(2**31 - 1), ALL, SAME),
    ("limit beyond integer", "s", _get(2**31), ALL, (LocalValidationError, "limit", "22003")),
    ("limit True", "s", _get(True), ALL[-1:], (LocalValidationError, "limit", "22023")),
    ("limit 2.5", "s", _get(2.5), (sqlite3.Error, None, None), (LocalValidationError, "limit", "22023")),
    ("limit 1.0", "s", _get(1.0), (TypeError, None, None), (LocalValidationError, "limit", "22023")),
    ("limit '1'", "s", _get("1"), (TypeError, None, None), ALL[-1:]),
    ("an empty session id", "", _get(None), ALL, (ValueError, None, None)),
    ("a blank session id", "  ", _get(None), ALL, (ValueError, None, None)),
    ("a session id that is not text", 5, _get(None), ALL, (ValueError, None, None)),
    ("a NUL in the session id", "a\x00b", _get(None), ALL, (LocalValidationError, "session_id", "22021")),
    ("a session id over max_id_bytes", "y" * 513, _get(None), ALL, (LimitExceeded, "session_id", "54000")),
]


def _same_error(answer: Any, spec: tuple[type[BaseException], str | None, str | None]) -> bool:
    kind, field, sqlstate = spec
    return (isinstance(answer, kind) and getattr(answer, "field", None) == field
            and getattr(answer, "sqlstate", None) == sqlstate)


@pytest.mark.parametrize(("case", "session_id", "op", "reference", "memsub"), INVALID,
                         ids=[case[0] for case in INVALID])
def test_invalid_input_against_the_sdk_session(pool: Any, tenant_id: uuid.UUID, case: str, session_id: Any,
                                               op: Callable[[SessionABC], Awaitable[Any]], reference: Any,
                                               memsub: Any) -> None:
    """Each bad input on SQLiteSession and on MemsubSession, each holding two items: the reference's answer is
    pinned (so a change of the SDK shows), memsub's is the reference's or its documented refusal, naming the
    field, with nothing written."""
    ref_answer, ref_items = _outcome(session_id, SQLiteSession, op)
    if isinstance(reference, tuple):
        assert isinstance(ref_answer, reference[0]), ref_answer
    else:
        assert _exact(ref_answer) == _exact(reference)
    got, items = _outcome(session_id, lambda sid: MemsubSession(sid, pool, TenantContext(tenant_id)), op)
    if memsub == SAME:
        assert (_exact(got), _exact(items)) == (_exact(ref_answer), _exact(ref_items))
    elif isinstance(memsub, tuple):
        assert _same_error(got, memsub), repr(got)
        if items is not None:
            assert items == SEEDED
    else:
        assert _exact(got) == _exact(memsub) and items == SEEDED


@pytest.fixture
def tenant_id() -> uuid.UUID:
    return uuid.uuid4()


# --- whole runs ----------------------------------------------------------------------------------------------------


def _runs(session: SessionABC, runner_method: str, limit: int | None) -> tuple[list[Any], list[Any]]:
    """Three turns of an agent with a tool (each turn: a function call, its output, an answer) on ``session``:
    what the model was sent on each call, and the session's items afterwards."""
    set_tracing_disabled(True)

    @function_tool
    def lookup(q: str) -> str:
        """Looks a word up."""
        return f"« {q} » → 🙂 {len(q)}"

    model = ScriptedModel()
    agent = Agent(name="differential", model=model, tools=[lookup])
    config = RunConfig(session_settings=SessionSettings(limit=limit)) if limit is not None else None
    questions = ["first question", "zweite Frage, größer", "третий 🙂"]
    for turn, question in enumerate(questions):
        model.enqueue([function_call("lookup", {"q": question}, call_id=f"call_{turn}")])
        model.enqueue([assistant_message(f"answer {turn}: 答え", item_id=f"msg_{turn}")])
        if runner_method == "run_sync":
            Runner.run_sync(agent, question, session=session, run_config=config)
        elif runner_method == "run":
            asyncio.run(Runner.run(agent, question, session=session, run_config=config))
        else:
            async def streamed(question: str = question) -> None:
                result = Runner.run_streamed(agent, question, session=session, run_config=config)
                async for _ in result.stream_events():
                    pass
            asyncio.run(streamed())
    return [call.input for call in model.calls], asyncio.run(session.get_items())


@pytest.mark.parametrize("limit", [None, 3])
@pytest.mark.parametrize("runner_method", ["run", "run_sync", "run_streamed"])
def test_runs_with_tools_agree_with_the_sdk_session(pool: Any, tenant_id: uuid.UUID, tmp_path: Path,
                                                   runner_method: str, limit: int | None) -> None:
    """The same scripted runs on MemsubSession and on SQLiteSession: the model is sent the same inputs (history
    read back through get_items, with the run's session_settings limit) and the sessions end up holding the same
    items, exactly."""
    reference = SQLiteSession("run", tmp_path / "reference.db")
    memsub = MemsubSession("run", pool, TenantContext(tenant_id))
    try:
        ref_inputs, ref_items = _runs(reference, runner_method, limit)
        inputs, items = _runs(memsub, runner_method, limit)
    finally:
        reference.close()
        memsub.close()
    assert len(ref_items) == 12  # three turns of question, call, output, answer
    assert _exact(items) == _exact(ref_items)
    assert _exact(inputs) == _exact(ref_inputs)


def _concurrently(session: SessionABC, batches: list[list[dict[str, Any]]], pops: int
                  ) -> tuple[list[Any], list[Any], list[Any]]:
    """Adds the batches all at once, reads the session, then pops ``pops`` items all at once: (the items after
    the adds, the popped items, the items left)."""
    async def scenario() -> tuple[list[Any], list[Any], list[Any]]:
        await asyncio.gather(*(session.add_items(cast(list[TResponseInputItem], batch)) for batch in batches))
        added = await session.get_items()
        popped = await asyncio.gather(*(session.pop_item() for _ in range(pops)))
        return added, list(popped), await session.get_items()
    return asyncio.run(scenario())


def test_concurrent_writers_agree_with_the_sdk_session(pool: Any, tenant_id: uuid.UUID, tmp_path: Path) -> None:
    """Batches added at once land whole and in some order, on both sessions (SQLiteSession in the order its lock
    admits them, memsub in the order the session's transaction lock does; the orders may differ); pops at once
    remove the newest items, each once."""
    rng = random.Random(7)
    batches = [[{"batch": b, "n": n, "text": _text(rng)} for n in range(rng.randrange(1, 5))] for b in range(8)]
    outcomes = []
    for session in (SQLiteSession("together", tmp_path / "reference.db"),
                    MemsubSession("together", pool, TenantContext(tenant_id))):
        try:
            outcomes.append(_concurrently(session, batches, 6))
        finally:
            session.close()
    for added, popped, left in outcomes:
        order = [item["batch"] for item in added]
        runs = [b for i, b in enumerate(order) if i == 0 or order[i - 1] != b]
        assert sorted(runs) == list(range(8)), order  # each batch whole, every batch once
        assert sorted(added, key=lambda i: (i["batch"], i["n"])) == [item for batch in batches for item in batch]
        assert sorted(map(_exact, popped)) == sorted(map(_exact, added[-6:]))
        assert left == added[:-6]
