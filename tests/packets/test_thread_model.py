"""Model-based test of a thread's log: random writes of turns (one at a time and in batches, with and without a
packet_id or a timestamp, repeated word for word, in every scope, some already expired) by ordinary logins (two
users, three sessions, a second tenant), and replays of each thread by pages of every size, compared with a model
of what docs/decisions.md ("Identity and deduplication", "Thread replay follows write order") and the comments
of sql/120_packet_write.sql and sql/130_packet_read.sql promise:

- an envelope naming a packet_id is that packet: sent again it is deduplicated, with other content (another
  writer) or when the writer cannot see the packet it is 23505 naming packet_id;
- without a packet_id the same content (type, payload, thread, scope, writer, session) at the same time is a
  retry; at another time (the transaction's now() when no timestamp is stated) a new packet, so a repeated turn is
  never dropped; deduplicating to a packet the writer cannot see (expired) is 23505 naming payload;
- a batch is all or nothing, its envelopes in order, the same envelope twice in it one packet;
- a replay by pages (the cursor is the last row's write_seq) returns each visible, unexpired packet of the thread
  exactly once, in write order: shared for the tenant, cursor for its user and session, l-private for its user;
- the other tenant sees nothing of it.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from memsub.client import Substrate
from memsub.errors import MemsubError

from helpers import TENANT_A, TENANT_B, soak_factor

ALICE = uuid.UUID("a11ce000-0000-0000-0000-00000000a11c")
BOB = uuid.UUID("b0b00000-0000-0000-0000-000000000b0b")


@dataclass(frozen=True)
class Actor:
    tenant: uuid.UUID
    user: uuid.UUID
    session: str


ACTORS = {"alice_s1": Actor(TENANT_A, ALICE, "s1"), "alice_s2": Actor(TENANT_A, ALICE, "s2"),
          "bob_s3": Actor(TENANT_A, BOB, "s3"), "bob_s1": Actor(TENANT_A, BOB, "s1"),
          "alice_b": Actor(TENANT_B, ALICE, "s1")}
NAMES = sorted(ACTORS)
PAST = ["2020-01-01T00:00:00Z", "2020-01-01T00:00:01Z"]
EXPIRED_TTL = "2020-06-01T00:00:00Z"
FUTURE_TTL = "2999-01-01T00:00:00Z"


@dataclass(frozen=True)
class Turn:
    """What a rule asks to write: the envelope is built from it."""

    thread: int
    text: str
    scope: str
    packet_id: uuid.UUID | None
    timestamp: str | None
    ttl: str | None


turns = st.builds(Turn, thread=st.integers(0, 1), text=st.sampled_from(["yes", "ok"]),
                  scope=st.sampled_from(["shared", "cursor", "l-private"]),
                  # Few ids: writers, tenants and threads meet on them.
                  packet_id=st.none() | st.integers(1, 6).map(lambda n: uuid.UUID(int=n)),
                  timestamp=st.none() | st.sampled_from(PAST),
                  ttl=st.none() | st.sampled_from([EXPIRED_TTL, FUTURE_TTL]))


@dataclass(frozen=True)
class Packet:
    packet_id: uuid.UUID | None  # None until the database has generated it
    tenant: uuid.UUID
    thread: uuid.UUID
    user: uuid.UUID
    session: str
    scope: str
    text: str
    time: Any  # the stated timestamp, or the write's transaction
    stated_id: bool
    expired: bool

    def content(self) -> tuple[Any, ...]:
        return (self.tenant, self.thread, self.scope, self.text, self.user, self.session, self.time, self.stated_id)


@dataclass
class Log:
    packets: list[Packet] = field(default_factory=list)  # in write order

    def visible(self, reader: Actor, packet: Packet) -> bool:
        if packet.tenant != reader.tenant or packet.expired:
            return False
        return (packet.scope == "shared" or packet.user == reader.user
                or (packet.scope == "cursor" and packet.session == reader.session))

    def write(self, writer: Actor, threads: list[uuid.UUID], turn: Turn, transaction: int,
              ) -> tuple[int, bool] | tuple[str, str]:
        """The packet's place in the log and whether it was deduplicated, or the (sqlstate, column) the write is
        refused with. Appends a new packet to the log."""
        if turn.ttl == EXPIRED_TTL and turn.timestamp is None:
            return ("22023", "ttl")  # a ttl before the packet's own time (now)
        packet = Packet(turn.packet_id, writer.tenant, threads[turn.thread], writer.user,
                        writer.session, turn.scope, turn.text, turn.timestamp or ("now", transaction),
                        turn.packet_id is not None, turn.ttl == EXPIRED_TTL)
        if turn.packet_id is not None:
            same = [p for p in self.packets if p.tenant == writer.tenant and p.packet_id == turn.packet_id]
            if same:
                stored = same[0]
                if not self.visible(writer, stored):
                    return ("23505", "packet_id")
                # A retry may leave the timestamp out; everything else must match.
                stated = replace(packet, time=stored.time if turn.timestamp is None else packet.time)
                if stored.content() != stated.content():
                    return ("23505", "packet_id")
                return (self.packets.index(stored), True)
        else:
            same = [p for p in self.packets if p.content() == packet.content()]
            if same:
                if not self.visible(writer, same[0]):
                    return ("23505", "payload")
                return (self.packets.index(same[0]), True)
        self.packets.append(packet)
        return (len(self.packets) - 1, False)


def envelope(threads: list[uuid.UUID], turn: Turn) -> dict[str, Any]:
    written: dict[str, Any] = {"packet_type": "turn", "payload": {"text": turn.text},
                               "thread_id": str(threads[turn.thread]), "scope": turn.scope}
    if turn.packet_id is not None:
        written["packet_id"] = str(turn.packet_id)
    if turn.timestamp is not None:
        written["timestamp"] = turn.timestamp
    if turn.ttl is not None:
        written["ttl"] = turn.ttl
    return written


_runs = itertools.count(1)
_transactions = itertools.count(1)


@pytest.fixture
def app(db: Any) -> Iterator[Substrate]:
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        yield substrate


def test_thread_replays_match_the_log_model(app: Substrate) -> None:

    class ThreadMachine(RuleBasedStateMachine):
        @initialize()
        def fresh(self) -> None:
            run = next(_runs)
            # Each example's threads and packet ids are its own (ids drawn as small integers are offset by run).
            self.threads = [uuid.UUID(int=(run << 64) + 1), uuid.UUID(int=(run << 64) + 2)]
            self.offset = run << 80
            self.log = Log()

        def own(self, turn: Turn) -> Turn:
            if turn.packet_id is None:
                return turn
            return replace(turn, packet_id=uuid.UUID(int=turn.packet_id.int + self.offset))

        def session(self, name: str) -> Any:
            actor = ACTORS[name]
            return app.tenant(actor.tenant, user_id=actor.user, session_id=actor.session)

        def check(self, log: Log, outcome: Any, error: MemsubError | None, expected: list[Any]) -> None:
            """The outcome is the expected one; the ids the database generated go into ``log``."""
            refusals = [e for e in expected if isinstance(e[0], str)]
            if refusals:
                assert error is not None, f"expected {refusals[0]}"
                assert (error.sqlstate, error.field) == refusals[0], error
                return
            assert error is None, error
            assert len(outcome) == len(expected)
            for result, (place, deduplicated) in zip(outcome, expected, strict=True):
                assert result.deduplicated == deduplicated, (result, place)
                if log.packets[place].packet_id is None:
                    assert result.packet_id not in {p.packet_id for p in log.packets}
                    log.packets[place] = replace(log.packets[place], packet_id=result.packet_id)
                assert result.packet_id == log.packets[place].packet_id

        @rule(writer=st.sampled_from(NAMES), turn=turns)
        def write_any(self, writer: str, turn: Turn) -> None:
            self.write_one(writer, self.own(turn))

        def write_one(self, writer: str, turn: Turn) -> None:
            attempt = Log(list(self.log.packets))
            expected = [attempt.write(ACTORS[writer], self.threads, turn, next(_transactions))]
            try:
                with self.session(writer) as session:
                    outcome, error = [session.packets.write(envelope(self.threads, turn))], None
            except MemsubError as refused:
                outcome, error = [], refused
            self.check(attempt, outcome, error, expected)
            if error is None:
                self.log = attempt

        @rule(writer=st.sampled_from(NAMES), batch=st.lists(turns, min_size=1, max_size=4),
              repeats=st.lists(st.integers(0, 3), max_size=3))
        def write_batch(self, writer: str, batch: list[Turn], repeats: list[int]) -> None:
            # Some envelopes again, word for word, in the same batch (one transaction: each is one packet).
            batch = [self.own(t) for t in batch]
            batch += [batch[i % len(batch)] for i in repeats]
            attempt = Log(list(self.log.packets))
            transaction = next(_transactions)
            expected = []
            for turn in batch:
                expected.append(attempt.write(ACTORS[writer], self.threads, turn, transaction))
                if isinstance(expected[-1][0], str):
                    break
            try:
                with self.session(writer) as session:
                    outcome, error = session.packets.write_packets([envelope(self.threads, t) for t in batch]), None
            except MemsubError as refused:
                outcome, error = [], refused
            self.check(attempt, outcome, error, expected)
            if error is None:
                self.log = attempt

        @rule(writer=st.sampled_from(NAMES), data=st.data())
        def retry_a_named_packet(self, writer: str, data: st.DataObject) -> None:
            """A packet's envelope sent again by some writer: a retry by its writer, a conflict for any other."""
            named = [p for p in self.log.packets if p.stated_id]
            if not named:
                return
            packet = data.draw(st.sampled_from(named))
            turn = Turn(self.threads.index(packet.thread), packet.text, packet.scope, packet.packet_id,
                        packet.time if isinstance(packet.time, str) else None,
                        EXPIRED_TTL if packet.expired else None)
            self.write_one(writer, turn)

        @rule(reader=st.sampled_from(NAMES), thread=st.integers(0, 1), page=st.integers(1, 4))
        def replay_by_pages(self, reader: str, thread: int, page: int) -> None:
            actor = ACTORS[reader]
            expected = [p.packet_id for p in self.log.packets
                        if p.thread == self.threads[thread] and self.log.visible(actor, p)]
            read: list[Any] = []
            cursor = None
            with self.session(reader) as session:
                while True:
                    rows = session.packets.get_thread(self.threads[thread], limit=page, after_cursor=cursor,
                                                      with_vectors=bool(len(read) % 2))
                    assert len(rows) <= page
                    read += rows
                    if len(rows) < page:
                        break
                    cursor = rows[-1].write_seq
                replayed = [r.packet_id for r in session.packets.replay(self.threads[thread], page_size=page)]
            assert [r.packet_id for r in read] == expected
            assert replayed == expected
            assert [r.write_seq for r in read] == sorted({r.write_seq for r in read})

        @invariant()
        def whole_threads_in_order(self) -> None:
            if not hasattr(self, "log"):
                return
            for name in ("alice_s1", "alice_b"):
                self.replay_by_pages(name, 0, 1000)

    run_state_machine_as_test(ThreadMachine, settings=settings(
        max_examples=30 * soak_factor(), stateful_step_count=20, deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
