"""A mixed workload from a pool of clients for a bounded time: packet writes with fan-out, semantic searches,
edge UPSERTs, optimistic-lock memory updates and view refreshes, all at once.

Required: no error but the documented retryable one (40001 on a stale memory write, retried), no deadlock, and
final counters equal to the operations each client performed. And the same content written by many clients at
the same instant is stored once, fanned out once, and every caller is told which packet holds it.

``MEMSUB_SOAK_FACTOR`` (``make soak``) multiplies the duration and the number of rounds.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter
from typing import Any

import psycopg

from helpers import TENANT_A, TENANT_B, in_parallel, set_context, soak_factor

DURATION_SECONDS = 6.0 * soak_factor()
USER = uuid.UUID("00000000-0000-0000-0001-00000000000a")


def _vector(rng: random.Random, dimension: int) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(dimension)]


def test_mixed_workload_loses_nothing_and_never_deadlocks(db):
    with db.connect() as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        deadlocks_before = conn.execute("select deadlocks from pg_stat_database "
                                        "where datname = current_database()").fetchone()[0]
    namespace = f"user:{USER}:counters"
    deadline = time.monotonic() + DURATION_SECONDS
    done: Counter[str] = Counter()
    edges: Counter[tuple[str, str]] = Counter()
    retries: Counter[str] = Counter()
    errors: list[str] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        rng = random.Random(number)
        try:
            with db.connect("app") as conn:
                while time.monotonic() < deadline:
                    tenant = TENANT_A if number % 2 == 0 else TENANT_B
                    operation = rng.choice(["write", "write", "search", "upsert", "memory"])
                    if operation == "write":
                        set_context(conn, tenant)
                        memory = {"relationships": [{"source_entity": "agent", "relationship_type": "wrote",
                                                      "target_entity": f"note{rng.randrange(3)}"}],
                                   "embeddings": [{"embedding_type": "content",
                                                   "vector": _vector(rng, dimension)}]}
                        conn.execute("select memsub.write_packet(%s::jsonb)",
                                     [json.dumps({"packet_type": "event", "memory": memory,
                                                  "payload": {"n": rng.random(), "client": number}})])
                        conn.commit()
                        with lock:
                            done[f"write:{tenant}"] += 1
                            edges[(str(tenant), memory["relationships"][0]["target_entity"])] += 1
                    elif operation == "search":
                        set_context(conn, tenant)
                        conn.execute("select * from memsub.semantic_search(%s::vector, 5)",
                                     [str(_vector(rng, dimension))]).fetchall()
                        conn.commit()
                        with lock:
                            done["search"] += 1
                    elif operation == "upsert":
                        set_context(conn, tenant)
                        target = f"topic{rng.randrange(3)}"
                        conn.execute("select memsub.upsert_relationship('agent', 'studies', %s, 0.6)", [target])
                        conn.commit()
                        with lock:
                            done["upsert"] += 1
                            edges[(str(tenant), target)] += 1
                    else:
                        while True:  # the seed's read, write, on conflict retry
                            set_context(conn, TENANT_A, user=USER)
                            row = conn.execute("select version, value from memsub.memory_get(%s, 'hits')",
                                               [namespace]).fetchone()
                            version, value = row if row else (None, 0)
                            try:
                                conn.execute("select memsub.memory_write(%s, 'hits', %s::jsonb, %s)",
                                             [namespace, json.dumps(int(value) + 1), version])
                                conn.commit()
                                break
                            except psycopg.errors.SerializationFailure:
                                conn.rollback()
                                with lock:
                                    retries["memory"] += 1
                        with lock:
                            done["memory"] += 1
        except Exception as error:  # pragma: no cover - reported below
            with lock:
                errors.append(f"client {number}: {type(error).__name__}: {error}")

    def refresher() -> None:
        try:
            with db.connect("platform_admin", autocommit=True) as conn:
                while time.monotonic() < deadline:
                    conn.execute("call memsub.refresh_memory_views()")
                    with lock:
                        done["refresh"] += 1
                    time.sleep(0.3)
        except Exception as error:  # pragma: no cover - reported below
            with lock:
                errors.append(f"refresher: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(6)] + [threading.Thread(target=refresher)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=DURATION_SECONDS + 60)
    assert errors == []  # a deadlock would surface here as SQLSTATE 40P01
    assert all(done[k] > 0 for k in ("search", "upsert", "memory", "refresh")), done

    with db.connect() as conn:  # ground truth, as the superuser
        packets = dict(conn.execute("select tenant_id::text, count(*) from memsub.packet_store group by 1").fetchall())
        assert packets.get(str(TENANT_A), 0) == done[f"write:{TENANT_A}"]
        assert packets.get(str(TENANT_B), 0) == done[f"write:{TENANT_B}"]
        embeddings = conn.execute("select count(*) from memsub.memory_embeddings").fetchone()[0]
        assert embeddings == done[f"write:{TENANT_A}"] + done[f"write:{TENANT_B}"]
        mentions = {(str(t), target): count for t, target, count in conn.execute(
            "select tenant_id, target_entity, mention_count from memsub.entity_relationships")}
        assert mentions == dict(edges)
        memory = conn.execute("select max(version), (array_agg(value order by version desc))[1] "
                              "from memsub.memory_entries where namespace = %s and key = 'hits'",
                              [namespace]).fetchone()
        assert memory == (done["memory"], done["memory"])  # version 1..N, value N: no lost update
        audits = conn.execute("select count(*) from memsub.audit where namespace = %s", [namespace]).fetchone()[0]
        assert audits == done["memory"]
        refreshes = conn.execute("select count(distinct run_id) from memsub.memory_view_refresh_log "
                                 "where status = 'ok'").fetchone()[0]
        assert refreshes >= 1
        deadlocks = conn.execute("select deadlocks from pg_stat_database "
                                 "where datname = current_database()").fetchone()[0]
        assert deadlocks == deadlocks_before


def test_same_content_written_at_once_by_many_clients_is_stored_once(db):
    writers = 8
    with db.connect() as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
    for round_number in range(3 * soak_factor()):
        thread = str(uuid.uuid4())
        # Every client sends the same envelope, time included: one packet, the others deduplicated.
        envelope = {"packet_type": "event", "thread_id": thread, "tags": ["race"],
                    "timestamp": f"2025-12-07T12:00:{round_number % 60:02d}Z",
                    "payload": {"round": round_number, "text": "the same words, sent by every client at once"},
                    "memory": {"facts": [{"subject": f"round{round_number}", "predicate": "raced", "object": 1}],
                                "relationships": [{"source_entity": f"round{round_number}",
                                                   "relationship_type": "raced", "target_entity": "clients"}],
                                "embeddings": [{"embedding_type": "content",
                                                "vector": [0.25] * (dimension - 1) + [round_number + 1.0]}]}}
        def write_once(conn: psycopg.Connection[Any], number: int,
                       envelope: dict[str, object] = envelope) -> tuple[uuid.UUID, bool]:
            if number % 2:  # half through the batch function, half through the single one
                row = conn.execute("select packet_id, deduplicated from memsub.write_packets(%s::jsonb)",
                                   [json.dumps([envelope])]).fetchone()
            else:
                row = conn.execute("select packet_id, deduplicated from memsub.write_packet(%s::jsonb)",
                                   [json.dumps(envelope)]).fetchone()
            return row

        results = in_parallel(db, write_once, writers)
        assert len(results) == writers
        assert len({packet_id for packet_id, _ in results}) == 1  # every caller names the same packet
        assert sorted(deduplicated for _, deduplicated in results) == [False] + [True] * (writers - 1)
        with db.connect() as conn:  # ground truth, as the superuser
            packet_id = results[0][0]
            stored = conn.execute("select count(*) from memsub.packet_store where thread_id = %s",
                                  [thread]).fetchone()[0]
            fan_out = conn.execute("""
                select (select count(*) from memsub.memory_embeddings where packet_id = %(p)s),
                       (select count(*) from memsub.knowledge_facts where source_packet = %(p)s),
                       (select mention_count from memsub.entity_relationships where source_packet = %(p)s),
                       (select count(*) from memsub.packet_threads where thread_id = %(t)s)""",
                                   {"p": packet_id, "t": thread}).fetchone()
        assert stored == 1
        assert fan_out == (1, 1, 1, 1)  # nothing fanned out twice
