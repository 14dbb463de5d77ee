"""Load on the HTTP API (memsub serve): concurrent clients per route, throughput and p50/p95 latency, and the
same calls made directly through psycopg (authenticate the key, call the stored function, one transaction each)
for the ratio of what HTTP adds.

    python bench/http_load.py [--seconds 5] [--concurrency 8] [--packets 1000]

The server runs as a separate process (``memsub serve``), so clients and server do not share an interpreter.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg_pool import AsyncConnectionPool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _database import bench_database, describe

DIMENSION = 384
TENANT = uuid.UUID("cccccccc-0000-0000-0000-000000000001")
USER = uuid.UUID("cccccccc-1000-0000-0000-000000000001")
AUTH = "select key_id from memsub.authenticate_api_key(%s)"


def unit_vector(rng: random.Random) -> list[float]:
    values = [rng.gauss(0, 1) for _ in range(DIMENSION)]
    norm = sum(v * v for v in values) ** 0.5
    return [round(v / norm, 6) for v in values]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def drive(call: Callable[[int], Awaitable[None]], seconds: float, concurrency: int) -> dict[str, float]:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def worker(index: int) -> None:
        n = 0
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            await call(index * 1_000_000 + n)
            latencies.append(time.perf_counter() - started)
            n += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    elapsed = time.perf_counter() - started
    return {"requests": len(latencies), "per_second": len(latencies) / elapsed,
            "p50_ms": percentile(latencies, 0.50) * 1000, "p95_ms": percentile(latencies, 0.95) * 1000}


def setup(admin_dsn: str, packets: int) -> dict[str, Any]:
    rng = random.Random(7)
    thread = uuid.uuid4()
    with psycopg.connect(admin_dsn) as conn:
        conn.execute("select memsub.set_context(%s, null, %s, '{platform_admin}')", [TENANT, USER])
        key = conn.execute("select api_key from memsub.create_api_key(%s, null, %s, p_label => 'bench')",
                           [TENANT, USER]).fetchone()[0]  # type: ignore[index]
        envelopes = [{"packet_type": "note", "thread_id": str(thread), "payload": {"text": f"note {i}"},
                      "memory": {"embeddings": [{"embedding_type": "content", "vector": unit_vector(rng),
                                                 "chunk_text": f"note {i}"}]}} for i in range(packets)]
        ids = [row[0] for row in conn.execute("select packet_id from memsub.write_packets(%s::jsonb)",
                                              [json.dumps(envelopes)]).fetchall()]
        conn.execute("select memsub.memory_write(%s, 'style', '\"concise\"')", [f"user:{USER}:preferences"])
    return {"key": key, "thread": str(thread), "ids": [str(i) for i in ids], "query": unit_vector(rng)}


def routes(data: dict[str, Any]) -> dict[str, tuple[tuple[str, str, Any], tuple[str, list[Any]]]]:
    """route -> ((HTTP method, path, JSON body), (the direct SQL, its arguments)): the same work both ways."""
    packet_id = data["ids"][len(data["ids"]) // 2]
    seed = {"packet_type": "event", "payload": {"action": "user_query", "content": "Find HDPE"},
            "thread_id": "11111111-2222-3333-4444-555555555555", "tags": ["hdpe", "search"]}
    vector = "[" + ",".join(map(str, data["query"])) + "]"
    return {
        "POST /memory/packet": (("POST", "/api/v1/memory/packet", seed),
                                ("select to_jsonb(r)::text from memsub.write_packet(%s::jsonb) r", [json.dumps(seed)])),
        "GET /memory/packet/{id}": (("GET", f"/api/v1/memory/packet/{packet_id}", None),
                                    ("select to_jsonb(r)::text from memsub.get_packet(%s::uuid) r", [packet_id])),
        "GET /memory/thread/{id}?limit=50": (
            ("GET", f"/api/v1/memory/thread/{data['thread']}?limit=50", None),
            ("select jsonb_agg(to_jsonb(r))::text from memsub.get_thread(%s::uuid, 50) r", [data["thread"]])),
        "POST /search/semantic k=10": (
            ("POST", "/api/v1/search/semantic", {"query": data["query"], "k": 10}),
            ("select jsonb_agg(to_jsonb(r))::text from memsub.semantic_search(%s::vector, 10) r", [vector])),
        "GET /memory/namespace/{ns}/keys/{key}": (
            ("GET", f"/api/v1/memory/namespace/user:{USER}:preferences/keys/style", None),
            ("select to_jsonb(r)::text from memsub.memory_get(%s, 'style') r", [f"user:{USER}:preferences"])),
    }


async def measure(url: str, app_dsn: str, data: dict[str, Any], seconds: float,
                  concurrency: int) -> list[dict[str, Any]]:
    results = []
    headers = {"Authorization": f"Bearer {data['key']}"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
        app_dsn, min_size=concurrency, max_size=concurrency, open=False, kwargs={"autocommit": True})
    await pool.open(wait=True)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as client:
        for name, ((method, path, body), (query, args)) in routes(data).items():
            async def over_http(_: int, method: str = method, path: str = path, body: Any = body) -> None:
                response = await client.request(method, path, json=body)
                if response.status_code >= 300:
                    raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")

            async def direct(_: int, query: str = query, args: list[Any] = args) -> None:
                async with pool.connection() as conn, conn.pipeline():
                    await conn.execute(AUTH, [data["key"]])
                    await (await conn.execute(query, args)).fetchall()

            await drive(over_http, 1.0, concurrency)  # warm up: prepared statements, connections
            await drive(direct, 1.0, concurrency)
            http = await drive(over_http, seconds, concurrency)
            sql = await drive(direct, seconds, concurrency)
            results.append({"route": name, "http": http, "direct": sql,
                            "throughput_ratio": sql["per_second"] / http["per_second"]})
            print(f"{name:40s} http {http['per_second']:7.0f}/s p50 {http['p50_ms']:6.1f} ms "
                  f"p95 {http['p95_ms']:6.1f} ms | direct {sql['per_second']:7.0f}/s p50 {sql['p50_ms']:6.1f} ms "
                  f"p95 {sql['p95_ms']:6.1f} ms | direct/http {results[-1]['throughput_ratio']:.2f}x", flush=True)
    await pool.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--packets", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=None, help="Write the results as JSON here.")
    options = parser.parse_args()
    with bench_database(DIMENSION) as (admin_dsn, app_dsn):
        with psycopg.connect(admin_dsn, autocommit=True) as conn:  # the server's login acts only through keys
            conn.execute("select memsub.unbind_login('memsub_bench_app')")
        print(describe(admin_dsn))
        data = setup(admin_dsn, options.packets)
        port = free_port()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        command = [sys.executable, "-c", "from memsub.cli import main; main()", "serve", "--dsn", app_dsn,
                   "--port", str(port), "--pool-size", str(options.concurrency)]
        server = subprocess.Popen(command, env=env)
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(300):
                try:
                    if httpx.get(f"{url}/api/v1/ready").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
            print(f"server: memsub serve, pool {options.concurrency}; clients: {options.concurrency} concurrent, "
                  f"{options.seconds:g} s per route and mode; {options.packets} packets of {DIMENSION}-d vectors")
            results = asyncio.run(measure(url, app_dsn, data, options.seconds, options.concurrency))
        finally:
            server.terminate()
            server.wait(timeout=30)
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
