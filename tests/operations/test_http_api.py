"""The HTTP API (memsub serve) through a real HTTP client against a uvicorn server on a local socket."""

from __future__ import annotations

import json
import re
import socket
import time
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import httpx
import psycopg
import pytest

from http_helpers import (
    SMALL_BODY_LIMIT,
    TENANT_A,
    TENANT_B,
    USER_A,
    USER_B,
    Api,
    create_key,
    hot_vector,
    write_embedded_notes,
)
from memsub.http_api import create_app, openapi_json, serve_in_thread
from memsub.http_openapi import PROBLEM

ROOT = Path(__file__).resolve().parents[2]
SEED_EXAMPLE = {
    "packet_type": "event",
    "payload": {"action": "user_query", "content": "Find HDPE"},
    "thread_id": "11111111-2222-3333-4444-555555555555",
    "tags": ["hdpe", "search"],
}


def assert_problem(response: httpx.Response, status: int, field: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["type"].startswith("urn:memsub:problem:") and body["detail"]
    assert set(body) <= set(PROBLEM["properties"]), body  # the OpenAPI document describes every member
    if field is not None:
        assert body.get("field") == field, body
    return body


def test_the_seed_example_body_is_written_and_read_back(api: Api):
    with api.client() as client:
        response = client.post("/api/v1/memory/packet", json=SEED_EXAMPLE)
        assert response.status_code == 201, response.text
        result = response.json()
        assert result["packet_type"] == "event" and result["deduplicated"] is False
        assert result["thread_id"] == SEED_EXAMPLE["thread_id"] and result["generation"] == 0
        packet = client.get(f"/api/v1/memory/packet/{result['packet_id']}").json()
        assert packet["envelope"]["payload"] == SEED_EXAMPLE["payload"]
        assert packet["tags"] == ["hdpe", "search"] and packet["tenant_id"] == str(TENANT_A)
        assert packet["user_id"] == str(USER_A) and "search_tsv" not in packet
        again = client.post("/api/v1/memory/packet", json={**SEED_EXAMPLE, "packet_id": result["packet_id"],
                                                           "timestamp": result["timestamp"]})
        assert again.status_code == 200 and again.json()["deduplicated"] is True


def test_a_packet_is_read_with_or_without_its_vectors(api: Api):
    dimension = api.dimension()
    vector = [0.5] * dimension  # single precision holds 0.5 exactly
    embeddings = [{"embedding_type": "summary", "vector": vector, "chunk_text": "pellets"}]  # no test searches it
    with api.client() as client:
        written = client.post("/api/v1/memory/packet", json={
            "packet_type": "note", "payload": {"text": "pellets"}, "memory": {"embeddings": embeddings}}).json()
        url = f"/api/v1/memory/packet/{written['packet_id']}"
        full = client.get(url).json()
        assert full["envelope"]["memory"]["embeddings"] == embeddings
        lean = client.get(url, params={"with_vectors": "false"}).json()
        assert lean["envelope"]["memory"]["embeddings"] == [{**embeddings[0], "vector": None}]
        assert {**lean, "envelope": None} == {**full, "envelope": None}
        assert client.get(url, params={"with_vectors": "true"}).json() == full
        assert_problem(client.get(url, params={"with_vectors": "maybe"}), 422, "with_vectors")
        assert_problem(client.get(url, params={"vectors": "false"}), 422, "vectors")
        thread = client.post("/api/v1/memory/packet", json={
            "packet_type": "note", "payload": {"text": "in a thread"}, "thread_id": str(uuid.uuid4()),
            "memory": {"embeddings": embeddings}}).json()["thread_id"]
        thread_url = f"/api/v1/memory/thread/{thread}"
        assert client.get(thread_url).json()["packets"][0]["envelope"]["memory"]["embeddings"] == embeddings
        lean_page = client.get(thread_url, params={"with_vectors": "false"}).json()["packets"]
        assert lean_page[0]["envelope"]["memory"]["embeddings"] == [{**embeddings[0], "vector": None}]
        assert_problem(client.get(thread_url, params={"with_vectors": "maybe"}), 422, "with_vectors")
    with api.client("b") as other:
        assert_problem(other.get(url, params={"with_vectors": "false"}), 404, "packet_id")


def test_batch_write_thread_replay_with_the_cursor_and_lineage(api: Api):
    thread = str(uuid.uuid4())
    root = str(uuid.uuid4())
    envelopes = [{"packet_id": root, "packet_type": "event", "payload": {"n": 0}, "thread_id": thread}]
    envelopes += [{"packet_type": "insight", "payload": {"n": n}, "thread_id": thread,
                   "lineage": {"parent_ids": [root], "derivation_type": "inference"}} for n in range(1, 5)]
    with api.client() as client:
        response = client.post("/api/v1/memory/packets", json=envelopes)
        assert response.status_code == 200, response.text
        results = response.json()["results"]
        assert [r["position"] for r in results] == [1, 2, 3, 4, 5]
        assert client.post("/api/v1/memory/packets", json={"envelopes": []}).json() == {"results": []}

        seen, cursor, pages = [], None, 0
        while True:
            params = {"limit": 2} | ({"after": cursor} if cursor is not None else {})
            page = client.get(f"/api/v1/memory/thread/{thread}", params=params).json()
            seen += [p["envelope"]["payload"]["n"] for p in page["packets"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [0, 1, 2, 3, 4] and pages == 3

        lineage = client.get(f"/api/v1/memory/packet/{results[1]['packet_id']}/lineage").json()["lineage"]
        assert [(row["depth"], row["packet_id"]) for row in lineage] == [(1, root)]
        children = client.get(f"/api/v1/memory/packet/{root}/lineage",
                              params={"direction": "descendants", "max_depth": 1}).json()["lineage"]
        assert len(children) == 4
        # An unknown packet, or another tenant's, is not found, as the packet itself is not.
        assert_problem(client.get(f"/api/v1/memory/packet/{uuid.uuid4()}/lineage"), 404, "packet_id")
    with api.client("b") as other:
        assert_problem(other.get(f"/api/v1/memory/packet/{root}/lineage"), 404, "packet_id")


EXACT_NUMBERS = ('{"price": 1.10, "big": 12345678901234567.5, "huge": 1e400, "name": "caf\\u00e9", '
                 f'"digits": 1{"0" * 5000}}}')
"""JSON numbers that a double changes (1.10 prints as 1.1, the big one rounds) or cannot hold (1e400), an integer
longer than Python reads unasked (4,300 digits), beside a string with an escape (which has the server look at each
string of the body)."""


def stored_numbers(api: Api, query: str, key: object) -> tuple[str, ...]:
    """The four numbers of EXACT_NUMBERS as the database keeps them: the jsonb ``query`` reads at ``key``, as
    text, its numbers read as the text they are."""
    with api.database.connect() as conn:
        row = conn.execute(query, [key]).fetchone()
    assert row is not None
    stored = json.loads(row[0], parse_float=str, parse_int=str)
    return stored["price"], stored["big"], stored["huge"], stored["digits"]


EXACT = ("1.10", "12345678901234567.5", "1" + "0" * 400, "1" + "0" * 5000)


def test_a_packet_keeps_its_numbers_exactly_in_each_body_form(api: Api):
    """The database reads the envelopes from the body text as sent, whichever of the two batch forms carries
    them: a number is stored as written, and a batch retried in the other form is the same batch."""
    def envelope(packet_id: str) -> str:
        return (f'{{"packet_id": "{packet_id}", "timestamp": "2026-01-01T00:00:00Z", "packet_type": "note", '
                f'"payload": {EXACT_NUMBERS}}}')

    def wrapped(envelopes: str) -> str:
        return f'{{"envelopes": {envelopes}}}'

    def listed(envelopes: str) -> str:
        return envelopes

    by_packet = "select (envelope -> 'payload')::text from memsub.packet_store where packet_id = %s"
    with api.client() as client:
        single = str(uuid.uuid4())
        assert client.post("/api/v1/memory/packet", content=envelope(single)).status_code == 201
        assert stored_numbers(api, by_packet, single) == EXACT
        for first, again in ((listed, wrapped), (wrapped, listed)):
            packet_id = str(uuid.uuid4())
            written = client.post("/api/v1/memory/packets", content=first(f"[{envelope(packet_id)}]"))
            assert written.status_code == 200, written.text
            assert stored_numbers(api, by_packet, packet_id) == EXACT
            retried = client.post("/api/v1/memory/packets", content=again(f"[{envelope(packet_id)}]"))
            assert retried.status_code == 200, retried.text
            assert retried.json()["results"][0]["deduplicated"] is True


def test_a_memory_value_keeps_its_numbers_exactly(api: Api):
    namespace = f"user:{USER_B}:numbers"  # tenant B's user: tenant A's memory listings stay as they were
    body = f'{{"value": {EXACT_NUMBERS}, "metadata": {EXACT_NUMBERS}}}'
    with api.client("b") as client:
        written = client.put(f"/api/v1/memory/namespace/{namespace}/keys/prices", content=body)
        assert written.status_code == 200, written.text
    assert stored_numbers(api, "select value::text from memsub.memory_entries where namespace = %s",
                          namespace) == EXACT
    assert stored_numbers(api, "select metadata::text from memsub.memory_entries where namespace = %s",
                          namespace) == EXACT


def test_semantic_and_hybrid_search(api: Api):
    dimension = api.dimension()
    with api.client() as client:
        write_embedded_notes(client, dimension, ("polymer supplier in california", "weather report for tuesday"))
        hits = client.post("/api/v1/search/semantic", json={"query": hot_vector(dimension, 1), "k": 2}).json()["hits"]
        assert [h["chunk_text"] for h in hits] == ["weather report for tuesday", "polymer supplier in california"]
        hybrid = client.post("/api/v1/search/hybrid", json={"query_text": "polymer supplier",
                                                            "query": hot_vector(dimension, 0), "k": 1}).json()["hits"]
        assert hybrid[0]["chunk_text"] == "polymer supplier in california" and hybrid[0]["text_rank"] == 1
        keyword_only = client.post("/api/v1/search/hybrid", json={"query_text": "weather"}).json()["hits"]
        assert keyword_only[0]["chunk_text"] == "weather report for tuesday"
        wrong = client.post("/api/v1/search/semantic", json={"query": [1.0, 2.0]})
        assert_problem(wrong, 422, "query")


def test_search_tuning_fields_reach_the_functions(api: Api):
    """mode, ef_search, max_scan_tuples and half_life are passed to the stored functions, which judge them."""
    dimension = api.dimension()
    with api.client() as client:
        write_embedded_notes(client, dimension, ("tuning note zero", "tuning note one", "tuning note two"))
        query = hot_vector(dimension, 2)
        for mode in ("exact", "approximate"):
            response = client.post("/api/v1/search/semantic", json={
                "query": query, "k": 1, "mode": mode, "ef_search": 200, "max_scan_tuples": 5000})
            assert response.status_code == 200, response.text
            assert [(h["chunk_text"], h["method"]) for h in response.json()["hits"]] == [("tuning note two", mode)]
        for body, field in (({"mode": "sideways"}, "mode"), ({"ef_search": 0}, "ef_search"),
                            ({"ef_search": 1001}, "ef_search"), ({"max_scan_tuples": 0}, "max_scan_tuples")):
            problem = assert_problem(client.post("/api/v1/search/semantic", json={"query": query, **body}), 422, field)
            assert problem["sqlstate"] == "22023", problem
        assert_problem(client.post("/api/v1/search/semantic", json={"query": query, "ef_search": "many"}),
                       422, "ef_search")

        hybrid = client.post("/api/v1/search/hybrid", json={"query_text": "tuning note", "recency_weight": 0.5,
                                                            "half_life": 3600})
        assert hybrid.status_code == 200, hybrid.text
        assert {h["chunk_text"] for h in hybrid.json()["hits"]} >= {"tuning note zero", "tuning note two"}
        for half_life in (0, -5):
            problem = assert_problem(client.post("/api/v1/search/hybrid", json={
                "query_text": "tuning", "half_life": half_life}), 422, "half_life")
            assert problem["sqlstate"] == "22023", problem
        for half_life in (1e300, "soon"):
            assert_problem(client.post("/api/v1/search/hybrid", json={"query_text": "tuning", "half_life": half_life}),
                           422, "half_life")


def test_an_integer_too_large_for_a_double_is_422_naming_its_field(api: Api):
    """A JSON integer has no size limit; one that no double holds is refused by name like any out-of-range
    number, in a number field and in a vector element alike."""
    huge = "1" + "0" * 400
    vector = hot_vector(api.dimension(), 0)
    elements = ", ".join(map(str, vector[1:]))
    cases = (("/api/v1/search/semantic", f'{{"query": {json.dumps(vector)}, "min_importance": {huge}}}',
              "min_importance"),
             ("/api/v1/search/semantic", f'{{"query": [{huge}, {elements}]}}', "query[0]"),
             ("/api/v1/search/semantic", f'{{"query": ["0.5", -{huge}, {elements}]}}', "query[1]"),
             ("/api/v1/search/hybrid", f'{{"query_text": "x", "vector_weight": {huge}}}', "vector_weight"),
             ("/api/v1/search/hybrid", f'{{"query_text": "x", "half_life": {huge}}}', "half_life"),
             # Beyond the 4,300 digits Python reads as an int without being asked: still JSON, still a number.
             ("/api/v1/search/hybrid", f'{{"query_text": "x", "vector_weight": 1{"0" * 5000}}}', "vector_weight"))
    for path, body, field in cases:
        with api.client() as client:  # a fresh connection each time, should the server drop one
            assert_problem(client.post(path, content=body), 422, field)



def test_a_body_the_database_cannot_read_is_422_naming_the_field(api: Api):
    """What only the database's JSON reader refuses, a number no numeric holds (1e1000000, 1e-20000) or a bad
    escape in a duplicate key's value that json.loads dropped (it keeps the last), and a vector over pgvector's
    16,000 dimensions, is 422 in the API's own shape naming the field or its path, and writes nothing (a bad
    escape as one json.loads kept is answered: no sqlstate, as the server finds it before the database)."""
    namespace = f"user:{USER_A}:unreadable"
    memory = f"/api/v1/memory/namespace/{namespace}/keys/k"
    big = json.dumps([0.5] * 16001)
    cases = (
        ("post", "/api/v1/memory/packet", '{"packet_type": "note", "payload": {"x": 1e1000000}}',
         "envelope.payload.x", "22003"),
        ("post", "/api/v1/memory/packets", '[{"packet_type": "note", "payload": {"x": 1}}, '
         '{"packet_type": "note", "payload": {"x": [1, -1e1000000]}}]', "envelopes[1].payload.x[1]", "22003"),
        ("post", "/api/v1/memory/packets", '{"envelopes": [{"packet_type": "note", "payload": {"x": 1e-20000}}]}',
         "envelopes[0].payload.x", "22003"),
        ("put", memory, '{"value": {"x": 1e131072}}', "value.x", "22003"),
        ("put", memory, '{"value": {"x": 0e-20000}}', "value.x", "22003"),
        ("put", memory, '{"value": 1, "metadata": {"n": [2, 1e1000000]}}', "metadata.n[1]", "22003"),
        ("put", memory, '{"value": {"a": "\\u0000", "a": 1}}', "value.a", None),
        ("put", memory, '{"value": {"a": "\\u0000"}, "value": 1}', "value.a", None),
        ("put", memory, '{"value": 1, "metadata": {"a": {"b": "\\ud800"}, "a": 1}}', "metadata.a.b", None),
        ("post", "/api/v1/memory/packet", '{"packet_type": "note", "payload": {"a": "\\ud800", "a": 1}}',
         "envelope.payload.a", None),
        ("post", "/api/v1/search/semantic", f'{{"query": {big}}}', "query", "54000"),
        ("post", "/api/v1/search/hybrid", f'{{"query_text": "x", "query": {big}}}', "query", "54000"),
        ("put", memory, f'{{"value": 1, "embedding": {big}}}', "embedding", "54000"),
    )
    before = (api.packet_count(), api.memory_count())
    for method, path, body, field, sqlstate in cases:
        with api.client() as client:
            problem = assert_problem(client.request(method.upper(), path, content=body), 422, field)
        assert problem.get("sqlstate") == sqlstate, (body[:80], problem)
    assert (api.packet_count(), api.memory_count()) == before


def raw_request(url: str, request: bytes) -> bytes:
    """The server's whole answer to ``request`` sent as is on a socket of its own (the server closes it)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def test_a_request_the_http_parser_refuses_is_400_in_the_problem_shape(api: Api):
    """A malformed Content-Length (or any request that is not HTTP/1.1) is refused by uvicorn's parser before the
    application sees it; the answer is still a problem document, not uvicorn's text/plain, and closes the
    connection."""
    for length in (b"abc", b"-1", b"1x"):
        answer = raw_request(api.url, b"POST /api/v1/memory/packet HTTP/1.1\r\nHost: x\r\nContent-Length: " + length
                             + b"\r\nContent-Type: application/json\r\n\r\n{}")
        head, _, body = answer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
        assert lines[0].startswith("HTTP/1.1 400 "), answer
        assert headers["content-type"] == "application/problem+json", answer
        assert headers["connection"] == "close" and int(headers["content-length"]) == len(body), answer
        problem = json.loads(body)
        assert problem["status"] == 400 and problem["type"] == "urn:memsub:problem:bad-request", problem
        assert problem["detail"] and set(problem) <= set(PROBLEM["properties"]), problem


def test_a_memory_value_of_null_is_refused_by_the_database_naming_it(api: Api):
    """memsub.memory_write owns the rule that a value is any JSON but null; the HTTP API passes its answer on."""
    namespace = f"user:{USER_B}:nulls"
    with api.client("b") as client:
        assert_problem(client.put(f"/api/v1/memory/namespace/{namespace}/keys/k", json={"value": None}), 422,
                       "value")
    with api.database.connect() as conn:
        assert conn.execute("select count(*) from memsub.memory_entries where namespace = %s",
                            [namespace]).fetchone() == (0,)

def test_a_memory_entry_is_written_with_its_embedding(api: Api):
    dimension = api.dimension()
    namespace = f"user:{USER_B}:embedded"  # tenant B's user: tenant A's memory listings stay as they were
    with api.client("b") as client:
        written = client.put(f"/api/v1/memory/namespace/{namespace}/keys/k",
                             json={"value": "v", "embedding": hot_vector(dimension, 3)})
        assert written.status_code == 200, written.text
        assert_problem(client.put(f"/api/v1/memory/namespace/{namespace}/keys/k",
                                  json={"value": "w", "embedding": [1.0, 2.0]}), 422, "embedding")
    with api.database.connect() as conn:
        stored = conn.execute("select version, embedding is not null from memsub.memory_entries "
                              "where namespace = %s and key = 'k' order by version", [namespace]).fetchall()
    assert stored == [(1, True)]


def test_graph_traversal(api: Api):
    with api.client() as client:
        response = client.post("/api/v1/memory/packet", json={
            "packet_type": "event", "payload": {"text": "L9 uses Neo4j, Neo4j runs on Java"},
            "memory": {"relationships": [
                {"source_entity": "L9", "relationship_type": "uses", "target_entity": "Neo4j"},
                {"source_entity": "Neo4j", "relationship_type": "runs_on", "target_entity": "Java"}]}})
        assert response.status_code == 201, response.text
        nodes = client.get("/api/v1/graph/traverse", params={"start_entity": "L9", "max_depth": 2}).json()["nodes"]
        assert [(n["depth"], n["entity"]) for n in nodes] == [(1, "Neo4j"), (2, "Java")]
        only_uses = client.get("/api/v1/graph/traverse", params=[("start_entity", "L9"), ("max_depth", "2"),
                                                                 ("relationship_types", "uses")]).json()["nodes"]
        assert [n["entity"] for n in only_uses] == ["Neo4j"]
        assert_problem(client.get("/api/v1/graph/traverse"), 422, "start_entity")
        assert_problem(client.get("/api/v1/graph/traverse", params={"start_entity": "L9", "max_depth": "x"}),
                       422, "max_depth")


def test_a_time_without_an_offset_is_utc_as_in_the_envelope(api: Api):
    """HTTP reads times as the SQL envelope, the client, the CLI and MCP do: no offset means UTC."""
    before = datetime.now(UTC) - timedelta(seconds=1)
    with api.client() as client:
        response = client.post("/api/v1/memory/packet", json={
            "packet_type": "event", "payload": {"text": "Ada uses Rust"},
            "memory": {"relationships": [{"source_entity": "Ada", "relationship_type": "uses",
                                          "target_entity": "Rust"}]}})
        assert response.status_code == 201, response.text
        after = datetime.now(UTC) + timedelta(seconds=1)
        for when, entities in ((before, []), (after, ["Rust"])):
            # ISO 8601 offsets reach 23:59; PostgreSQL's text form stops at 15:59:59, its binary form has none
            far = [when.astimezone(timezone(timedelta(hours=hours, minutes=minutes))).isoformat()
                   for hours, minutes in ((20, 0), (-23, -59))]
            for text in (when.isoformat(), when.replace(tzinfo=None).isoformat(), *far):
                answer = client.get("/api/v1/graph/traverse", params={"start_entity": "Ada", "as_of": text})
                assert answer.status_code == 200, answer.text
                assert [n["entity"] for n in answer.json()["nodes"]] == entities, text
        assert_problem(client.get("/api/v1/graph/traverse", params={"start_entity": "Ada", "as_of": "noon"}),
                       422, "as_of")

def test_namespaced_memory_read_and_write(api: Api):
    namespace = f"user:{USER_A}:preferences"
    with api.client() as client:
        written = client.put(f"/api/v1/memory/namespace/{namespace}/keys/style", json={"value": "concise"})
        assert written.status_code == 200, written.text
        assert written.json()["version"] == 1 and written.json()["value"] == "concise"
        second = client.put(f"/api/v1/memory/namespace/{namespace}/keys/style",
                            json={"value": {"tone": "dry"}, "expected_version": 1})
        assert second.json()["version"] == 2
        stale = client.put(f"/api/v1/memory/namespace/{namespace}/keys/style",
                           json={"value": "x", "expected_version": 1})
        assert_problem(stale, 409, "expected_version")
        assert client.get(f"/api/v1/memory/namespace/{namespace}/keys/style").json()["value"] == {"tone": "dry"}
        entries = client.get(f"/api/v1/memory/namespace/user:{USER_A}/keys").json()["entries"]
        assert [(e["key"], e["version"]) for e in entries] == [("style", 2)]
        assert_problem(client.get(f"/api/v1/memory/namespace/{namespace}/keys/missing"), 404, "key")
        other_user = client.put(f"/api/v1/memory/namespace/user:{uuid.uuid4()}:x/keys/k", json={"value": 1})
        assert_problem(other_user, 403, "namespace")


def test_a_memory_listing_takes_a_limit(api: Api):
    namespace = f"user:{USER_A}:listing"
    with api.client() as client:
        for key in ("a", "b", "c"):
            assert client.put(f"/api/v1/memory/namespace/{namespace}/keys/{key}", json={"value": 1}).status_code == 200
        listed = client.get(f"/api/v1/memory/namespace/{namespace}/keys", params={"limit": "2"})
        assert listed.status_code == 200, listed.text
        assert [e["key"] for e in listed.json()["entries"]] == ["a", "b"]
        assert_problem(client.get(f"/api/v1/memory/namespace/{namespace}/keys", params={"limit": "0"}), 422, "limit")


def test_a_memory_key_with_slashes_is_read_and_written(api: Api):
    """A key may hold "/" (a namespace may not): the key is the rest of the path, sent as %2F or as is."""
    namespace = f"user:{USER_B}:files"  # tenant B's user: tenant A's memory listings stay as they were
    url = f"/api/v1/memory/namespace/{namespace}/keys"
    with api.client("b") as client:
        written = client.put(f"{url}/docs%2Freadme.md", json={"value": {"v": 1}})
        assert written.status_code == 200, written.text
        assert written.json()["key"] == "docs/readme.md"
        assert client.get(f"{url}/docs%2Freadme.md").json()["value"] == {"v": 1}
        again = client.put(f"{url}/docs/readme.md", json={"value": {"v": 2}, "expected_version": 1})
        assert again.status_code == 200, again.text
        assert client.get(f"{url}/docs/readme.md").json()["version"] == 2
        nested = client.put(f"{url}/a/keys/b", json={"value": 3})  # the route's own words inside the key
        assert nested.status_code == 200 and nested.json()["key"] == "a/keys/b", nested.text
        assert [entry["key"] for entry in client.get(url).json()["entries"]] == ["a/keys/b", "docs/readme.md"]
        assert_problem(client.get(f"{url}/docs%2Fmissing"), 404, "key")
        assert_problem(client.get(f"/api/v1/memory/namespace/user:{USER_B}%2Ffiles/keys/k"), 404)  # no route


def test_a_path_or_query_value_that_is_not_utf8_is_422_naming_it(api: Api):
    """Percent escapes that decode to bytes that are not UTF-8 (a Latin-1 é, a lone byte, an encoded surrogate)
    are refused by name, as a body that is not UTF-8 is refused, and nothing is written: read as U+FFFD they
    would name another key, and every such key the same one."""
    namespace = f"user:{USER_B}:bytes"
    url = f"/api/v1/memory/namespace/{namespace}/keys"
    with api.client("b") as client:
        for key in ("caf%E9", "%FF", "%ED%A0%80", "a%C3"):
            assert_problem(client.put(f"{url}/{key}", json={"value": 1}), 422, "key")
            assert_problem(client.get(f"{url}/{key}"), 422, "key")
        assert_problem(client.get(f"/api/v1/memory/namespace/user:{USER_B}%FF/keys"), 422, "namespace")
        assert_problem(client.get(f"/api/v1/memory/packet/{uuid.uuid4()}%FF"), 422, "packet_id")
        assert_problem(client.get("/api/v1/graph/traverse?start_entity=caf%E9"), 422, "start_entity")
        assert_problem(client.get("/api/v1/graph/traverse?start_entity=a&relationship_types=b&relationship_types=%FF"),
                       422, "relationship_types")
        assert_problem(client.get("/api/v1/graph/traverse?start_entity=a&caf%E9=1"), 422, "caf%E9")
        assert client.get(url).json()["entries"] == []
        # UTF-8 escapes are read as the text they spell
        assert client.put(f"{url}/caf%C3%A9", json={"value": 1}).status_code == 200
        assert client.get(f"{url}/café").json()["key"] == "café"
        assert client.get("/api/v1/graph/traverse?start_entity=caf%C3%A9").status_code == 200


def test_health_readiness_and_the_committed_openapi_document(api: Api):
    with httpx.Client(base_url=api.url) as client:  # no key needed
        assert client.get("/api/v1/health").json() == {"status": "ok"}
        assert client.get("/api/v1/ready").json() == {"status": "ready", "standby": False}
        served = client.get("/api/v1/openapi.json")
    assert served.status_code == 200
    assert served.text == (ROOT / "docs" / "openapi.json").read_text() == openapi_json()
    document = served.json()
    documented = {(path, method.upper()) for path, item in document["paths"].items() for method in item}
    from memsub.http_api import ROUTES
    assert documented == {(endpoint.template, endpoint.method) for endpoint in ROUTES}


def test_errors_are_problem_details_and_write_nothing(api: Api):
    before, memories = api.packet_count(), api.memory_count()
    with api.client() as client:
        assert_problem(client.post("/api/v1/memory/packet", content=b"{not json"), 400)
        assert_problem(client.post("/api/v1/memory/packet", content=b'{"packet_type": NaN}'), 400)
        assert_problem(client.post("/api/v1/memory/packet", content=b"\xff\xfe"), 400)
        assert_problem(client.post("/api/v1/memory/packet", content=b""), 400)
        deep = b'{"packet_type": "x", "payload": ' + b"[" * 2000 + b"]" * 2000 + b"}"  # JSON, deeper than it reads
        assert "nested too deeply" in assert_problem(client.post("/api/v1/memory/packet", content=deep), 400)["detail"]
        assert_problem(client.post("/api/v1/memory/packet", json=[SEED_EXAMPLE]), 422, "envelope")
        assert_problem(client.post("/api/v1/memory/packet", json={"payload": {}}), 422, "packet_type")
        body = assert_problem(client.post("/api/v1/memory/packet", json={
            **SEED_EXAMPLE, "confidence": {"score": 1.5}}), 422, "confidence.score")
        assert body["sqlstate"] == "22023"
        assert_problem(client.post("/api/v1/memory/packet", json={**SEED_EXAMPLE, "thread_id": "nope"}), 422)
        orphan = client.post("/api/v1/memory/packet", json={**SEED_EXAMPLE, "lineage": {
            "parent_ids": [str(uuid.uuid4())]}})
        assert_problem(orphan, 422)
        # a batch is all or nothing: the bad second envelope keeps the good first one out
        batch = client.post("/api/v1/memory/packets", json=[SEED_EXAMPLE, {"payload": 1}])
        assert_problem(batch, 422, "packet_type")
        big = {**SEED_EXAMPLE, "payload": {"text": "x" * SMALL_BODY_LIMIT}}
        too_large = client.post("/api/v1/memory/packet", json=big)
        assert_problem(too_large, 413)
        streamed = client.post("/api/v1/memory/packet", content=iter([json.dumps(big).encode()]))
        assert_problem(streamed, 413)
        assert_problem(client.get("/api/v1/memory/packet/not-a-uuid"), 422, "packet_id")
        assert_problem(client.get(f"/api/v1/memory/packet/{uuid.uuid4()}"), 404, "packet_id")
        assert_problem(client.get(f"/api/v1/memory/thread/{uuid.uuid4()}", params={"limit": 0}), 422, "limit")
        assert_problem(client.get(f"/api/v1/memory/thread/{uuid.uuid4()}", params={"limit": 10**6}), 422, "limit")
        assert_problem(client.post("/api/v1/search/semantic", json={"query": [1], "tenant_id": str(TENANT_B)}),
                       422, "tenant_id")
        assert_problem(client.post("/api/v1/memory/packet", json={**SEED_EXAMPLE, "tenant_id": str(TENANT_B)}),
                       422, "tenant_id")
        # JSON's \ud800 escape decodes to a lone surrogate, which has no UTF-8 form: refused by name
        def escaped(body: object) -> dict:
            return {"content": json.dumps(body), "headers": {"content-type": "application/json"}}
        lone = "\ud800"
        assert_problem(client.post("/api/v1/search/semantic", **escaped({"query": [1], "query_text": lone})), 422,
                       "query_text")
        assert_problem(client.post("/api/v1/search/hybrid", **escaped({"query_text": f"resin {lone}"})), 422,
                       "query_text")
        assert_problem(client.post("/api/v1/search/hybrid", json={"query_text": "resin\x00"}), 422, "query_text")
        assert_problem(client.put(f"/api/v1/memory/namespace/user:{USER_A}/keys/k", **escaped({
            "value": 1, "memory_type": lone})), 422, "memory_type")
        assert_problem(client.put(f"/api/v1/memory/namespace/user:{USER_A}/keys/k", **escaped({
            "value": {"note": lone}})), 422, "value.note")
        assert_problem(client.post("/api/v1/memory/packet", **escaped({**SEED_EXAMPLE, "payload": {"text": lone}})),
                       422, "envelope.payload.text")
        assert_problem(client.post("/api/v1/memory/packets", **escaped([SEED_EXAMPLE, {**SEED_EXAMPLE, "tags": [
            lone]}])), 422, "envelopes[1].tags[0]")
        assert_problem(client.get("/api/v1/nowhere"), 404)
        wrong_method = client.delete("/api/v1/memory/packet")
        assert_problem(wrong_method, 405)
        assert "POST" in wrong_method.headers["allow"]
    assert api.packet_count() == before
    assert api.memory_count() == memories


def test_a_path_with_a_trailing_slash_is_404_not_a_redirect(api: Api):
    """A route is matched as written: a trailing slash is an unknown route (404 problem), not a 307 redirect to
    a URL built from the request's Host field, which went to another host for a forged Host and was answered
    before the key was looked at."""
    with api.client() as client:
        for method, path, body in (("POST", "/api/v1/search/hybrid/", {"query_text": "x"}),
                                   ("GET", f"/api/v1/memory/packet/{uuid.uuid4()}/", None),
                                   ("GET", "/api/v1/health/", None)):
            response = client.request(method, path, headers={"host": "elsewhere.example"},
                                      **({"json": body} if body is not None else {}))
            assert "location" not in response.headers, response.headers
            assert_problem(response, 404)


PATH_VALUES = {"packet_id": str(uuid.uuid4()), "thread_id": str(uuid.uuid4()), "namespace": f"user:{USER_A}:routes",
               "key": "k"}


def route_url(path: str) -> str:
    """A route's path with a value in each of its segments ({key} or {key:path})."""
    return re.sub(r"\{(\w+)(:\w+)?\}", lambda segment: PATH_VALUES[segment.group(1)], path)


def valid_bodies(dimension: int) -> dict[str, object]:
    """A body each route that takes one accepts, by its handler's name."""
    return {"write_packet": SEED_EXAMPLE, "write_packets": [SEED_EXAMPLE], "memory_put": {"value": 1},
            "semantic_search": {"query": hot_vector(dimension, 0)}, "hybrid_search": {"query_text": "x"}}


def test_an_unknown_query_parameter_is_refused_on_every_route(api: Api):
    """Each route declares the query parameters it takes; any other is 422 naming it, before anything is read
    or written, also where the route's fields come from the body (a field given in the query is not taken)."""
    from memsub.http_api import ROUTES

    bodies = valid_bodies(api.dimension())
    before = api.packet_count(), api.memory_count()
    document = json.loads(openapi_json())
    with api.client() as client:
        for endpoint in ROUTES:
            body = bodies.get(endpoint.handler.__name__)
            response = client.request(endpoint.method, route_url(endpoint.path), params={"bogus": "1"},
                                      **({"json": body} if body is not None else {}))
            assert_problem(response, 422, "bogus")
            responses = document["paths"][endpoint.template][endpoint.method.lower()]["responses"]
            assert "422" in responses, endpoint.path  # the document lists the answer
        url = f"/api/v1/memory/namespace/{PATH_VALUES['namespace']}/keys"
        for response, field in (
                (client.post("/api/v1/search/semantic", params={"k": 1}, json=bodies["semantic_search"]), "k"),
                (client.post("/api/v1/search/hybrid", params={"k": 1}, json={"query_text": "x"}), "k"),
                (client.get(url, params={"after": 1}), "after"),
                (client.get(f"{url}/k", params={"version": 1}), "version"),
                (client.put(f"{url}/k", params={"expected_version": 1}, json={"value": 1}), "expected_version"),
                (client.post("/api/v1/memory/packet", params={"dry_run": "true"}, json=SEED_EXAMPLE), "dry_run"),
                (client.get("/api/v1/graph/traverse", params={"start_entity": "L9", "depth": 2}), "depth")):
            assert_problem(response, 422, field)
    assert (api.packet_count(), api.memory_count()) == before


def test_answers_for_a_key_are_never_stored_by_a_cache(api: Api):
    """Every answer of a route that needs a key says Cache-Control: no-store, its errors too. A shared cache keys
    what it stores by URL: a request whose key travels in X-API-Key (a cache does not know it as a credential, as
    it knows Authorization) would otherwise leave tenant A's answer to a guessable URL (a namespace listing, a
    graph walk from an entity's name) for tenant B's request of that URL."""
    from memsub.http_api import ROUTES

    bodies = valid_bodies(api.dimension())
    headers = {"X-API-Key": api.keys["b"]["api_key"]}  # tenant B: tenant A's listings stay as other tests see them
    with httpx.Client(base_url=api.url, headers=headers) as client:
        for path, method, handler, *_ in ROUTES:
            if handler.__name__ in PUBLIC:
                continue
            body = bodies.get(handler.__name__)
            params = {"start_entity": "Ada"} if handler.__name__ == "traverse_graph" else {}
            for request in ({"params": params, **({"json": body} if body is not None else {})},
                            {"params": {**params, "bogus": "1"}}):
                response = client.request(method, route_url(path), **request)
                assert response.headers.get("cache-control") == "no-store", (path, response.status_code)
    with api.client(None) as anonymous:
        assert anonymous.get(route_url("/api/v1/memory/namespace/{namespace}/keys")).headers.get(
            "cache-control") == "no-store"


PUBLIC = {"health", "ready", "openapi"}


def test_a_request_without_a_key_is_401_before_its_input_is_judged(api: Api):
    """Every route but health, readiness and the OpenAPI document answers 401 to a request without a key
    before it looks at the path, the query or the body (which is not read at all): a caller without a key
    learns nothing of its input, and sends no body for the server to parse."""
    from memsub.http_api import ROUTES

    assert {endpoint.handler.__name__ for endpoint in ROUTES if endpoint.public} == PUBLIC
    bodies = valid_bodies(api.dimension())
    with api.client(None) as anonymous:
        for path, method, handler, *_ in ROUTES:
            if handler.__name__ in PUBLIC:
                assert anonymous.request(method, route_url(path)).status_code == 200, path
                continue
            body = bodies.get(handler.__name__)
            url = route_url(path)
            not_uuids = route_url(path.replace("{packet_id}", "not-a-uuid").replace("{thread_id}", "not-a-uuid"))
            for request in (
                    {"url": url, **({"json": body} if body is not None else {})},
                    {"url": not_uuids, "params": {"bogus": "1"}},
                    {"url": url, "content": b"{"},
                    {"url": url, "content": b"x" * (SMALL_BODY_LIMIT + 1)}):
                response = anonymous.request(method, **request)
                assert_problem(response, 401, "api_key")
                assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_request_that_presents_more_than_one_key_is_401(api: Api):
    """A request acts for one key. Two Authorization fields (a singleton field), two X-API-Key fields, or a
    Bearer key and an X-API-Key are refused, whichever keys they hold, rather than the first found being taken:
    a proxy that adds its own key must not be overridden by one the client sent. An Authorization field of
    another scheme holds no key and does not count."""
    key_a, key_b = api.keys["a"]["api_key"], api.keys["b"]["api_key"]
    before = api.packet_count()
    for headers in ([("authorization", f"Bearer {key_a}"), ("authorization", f"Bearer {key_b}")],
                    [("authorization", f"Bearer {key_a}"), ("authorization", "Basic Zm9vOmJhcg==")],
                    [("authorization", f"Bearer {key_a}"), ("x-api-key", key_b)],
                    [("authorization", f"Bearer {key_a}"), ("x-api-key", key_a)],
                    [("x-api-key", key_a), ("x-api-key", key_b)]):
        with httpx.Client(base_url=api.url, headers=httpx.Headers(headers)) as client:
            response = client.post("/api/v1/memory/packet", json={**SEED_EXAMPLE, "payload": "two keys"})
            body = assert_problem(response, 401, "api_key")
            assert "one API key" in body["detail"], body
            assert response.headers["www-authenticate"].startswith("Bearer")
    assert api.packet_count() == before
    headers = httpx.Headers([("authorization", "Basic Zm9vOmJhcg=="), ("x-api-key", key_a)])
    with httpx.Client(base_url=api.url, headers=headers) as client:
        assert client.get(f"/api/v1/memory/thread/{uuid.uuid4()}").status_code == 200


def test_unknown_missing_and_revoked_keys_get_401_and_write_nothing(api: Api):
    key = create_key(api.database.dsn("platform_admin"), TENANT_A, label="to revoke")
    before = api.packet_count(), api.memory_count()
    # the real key with its last hex digit changed (appending "0" kept the key whenever it already ended in 0)
    altered = key["api_key"][:-1] + ("1" if key["api_key"].endswith("0") else "0")
    bad_keys = [None, "msk_0123456789abcdef_" + "0" * 64, "not-a-key", altered]
    for bad in bad_keys:
        headers = {"Authorization": f"Bearer {bad}"} if bad else {}
        with httpx.Client(base_url=api.url, headers=headers) as client:
            response = client.post("/api/v1/memory/packet", json=SEED_EXAMPLE)
            assert_problem(response, 401, "api_key")
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert bad is None or bad[-64:] not in response.text  # the answer never echoes the key
    with httpx.Client(base_url=api.url, headers={"X-API-Key": key["api_key"]}) as client:
        assert client.post("/api/v1/memory/packet", json={**SEED_EXAMPLE, "payload": "before"}).status_code == 201
    with psycopg.connect(api.database.dsn("platform_admin")) as conn:
        conn.execute("select memsub.set_context(null, p_roles => '{platform_admin}')")
        assert conn.execute("select memsub.revoke_api_key(%s)", [key["key_id"]]).fetchone() == (True,)
    after_revoke = api.packet_count(), api.memory_count()
    with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {key['api_key']}"}) as client:
        refused = client.post("/api/v1/memory/packet", json={**SEED_EXAMPLE, "payload": "after"})
        assert_problem(refused, 401)
        assert key["api_key"][-64:] not in refused.text
        assert_problem(client.put(f"/api/v1/memory/namespace/user:{USER_A}:x/keys/k", json={"value": 1}), 401)
        assert_problem(client.get(f"/api/v1/memory/thread/{SEED_EXAMPLE['thread_id']}"), 401)
    assert (api.packet_count(), api.memory_count()) == after_revoke
    assert after_revoke == (before[0] + 1, before[1])


def test_a_key_for_tenant_a_never_reads_tenant_b(api: Api):
    dimension = api.dimension()
    thread = str(uuid.uuid4())
    with api.client("b") as b:
        written = b.post("/api/v1/memory/packet", json={
            "packet_type": "secret", "payload": {"text": "tenant b secret"}, "thread_id": thread,
            "memory": {"embeddings": [{"embedding_type": "content", "vector": hot_vector(dimension, 5),
                                       "chunk_text": "tenant b secret"}],
                       "relationships": [{"source_entity": "Bsecret", "relationship_type": "knows",
                                          "target_entity": "Bother"}]}}).json()
        assert b.put(f"/api/v1/memory/namespace/user:{uuid.UUID('b1000000-0000-0000-0000-00000000000b')}:p/keys/k",
                     json={"value": "b memory"}).status_code == 200
        assert b.get(f"/api/v1/memory/packet/{written['packet_id']}").status_code == 200
    with api.client("a") as a:
        assert_problem(a.get(f"/api/v1/memory/packet/{written['packet_id']}"), 404)
        assert a.get(f"/api/v1/memory/thread/{thread}").json() == {"packets": [], "next_cursor": None}
        assert_problem(a.get(f"/api/v1/memory/packet/{written['packet_id']}/lineage"), 404, "packet_id")
        hits = a.post("/api/v1/search/semantic", json={"query": hot_vector(dimension, 5), "k": 50}).json()["hits"]
        assert written["packet_id"] not in {h["packet_id"] for h in hits}
        hybrid = a.post("/api/v1/search/hybrid", json={"query_text": "tenant secret", "k": 50}).json()["hits"]
        assert written["packet_id"] not in {h["packet_id"] for h in hybrid}
        assert a.get("/api/v1/graph/traverse", params={"start_entity": "Bsecret"}).json()["nodes"] == []
        user_b = "b1000000-0000-0000-0000-00000000000b"
        assert_problem(a.get(f"/api/v1/memory/namespace/user:{user_b}:p/keys/k"), 404)
        assert a.get(f"/api/v1/memory/namespace/user:{user_b}/keys").json()["entries"] == []
        # a lineage parent in tenant B is unknown to tenant A
        assert_problem(a.post("/api/v1/memory/packet", json={**SEED_EXAMPLE, "lineage": {
            "parent_ids": [written["packet_id"]]}}), 422)


def test_the_server_login_cannot_choose_a_tenant(api: Api):
    with api.database.connect("app") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select memsub.set_context(%s)", [TENANT_A])
    with api.database.connect("app") as conn:  # one transaction acts for one tenant: the key's
        conn.execute("select * from memsub.authenticate_api_key(%s)", [api.keys["a"]["api_key"]])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select * from memsub.authenticate_api_key(%s)", [api.keys["b"]["api_key"]])
    with api.database.connect("app") as conn:  # keys are stored as hashes only; app sees no hash column
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select key_hash from memsub.api_keys")


def test_a_key_role_needs_the_server_login_to_hold_it(api: Api):
    admin_key = create_key(api.database.dsn("platform_admin"), TENANT_A, roles=("tenant_admin",))
    with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {admin_key['api_key']}"}) as client:
        assert_problem(client.get(f"/api/v1/memory/thread/{uuid.uuid4()}"), 403, "roles")


def test_who_may_create_and_revoke_keys(api: Api):
    with api.database.connect("tenant_admin") as conn:
        conn.execute("select memsub.set_context(%s, p_roles => '{tenant_admin}')", [TENANT_A])
        key_id = conn.execute("select key_id from memsub.create_api_key(%s, p_roles => '{tenant_admin}')",
                              [TENANT_A]).fetchone()[0]
        assert {row[0] for row in conn.execute("select tenant_id from memsub.list_api_keys()")} == {TENANT_A}
        conn.execute("savepoint s")
        for statement, args in (("select memsub.create_api_key(%s)", [TENANT_B]),
                                ("select memsub.create_api_key(%s, p_roles => '{platform_admin}')", [TENANT_A])):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement, args)
            conn.execute("rollback to savepoint s")
        # another tenant's key is invisible, so it cannot be revoked
        assert conn.execute("select memsub.revoke_api_key(%s)", [api.keys["b"]["key_id"]]).fetchone() == (False,)
        assert conn.execute("select memsub.revoke_api_key(%s)", [key_id]).fetchone() == (True,)
    with api.database.connect("app") as conn:
        conn.execute("select * from memsub.authenticate_api_key(%s)", [api.keys["a"]["api_key"]])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select memsub.create_api_key(%s)", [TENANT_A])


def test_readme_http_example_runs(api: Api):
    block = re.search(r"```python\n(import httpx\n.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert block is not None
    namespace: dict[str, object] = {"MEMSUB_URL": api.url, "API_KEY": api.keys["a"]["api_key"]}
    code = block.group(1).replace('os.environ["MEMSUB_URL"]', "MEMSUB_URL").replace(
        "os.environ['MEMSUB_API_KEY']", "API_KEY")
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["result"]["packet_type"] == "event"  # type: ignore[index]


def test_no_connection_in_time_is_503_with_retry_after(db):
    """A request that waits past the pool timeout gets 503 and Retry-After, not the 503 of a failed connection."""
    import asyncio

    from psycopg_pool import AsyncConnectionPool
    from starlette.datastructures import State
    from starlette.requests import Request

    from memsub.http_api import Problem, fetch_one

    async def scenario() -> Problem:
        async with AsyncConnectionPool(db.dsn("app"), min_size=1, max_size=1, timeout=0.2) as pool:
            app = type("App", (), {"state": State({"pool": pool})})()
            request = Request({"type": "http", "app": app,
                               "headers": [(b"authorization", b"Bearer msk_" + b"0" * 16 + b"_" + b"0" * 64)]})
            async with pool.connection():  # the only connection is busy
                try:
                    await fetch_one(request, "select 1", [])
                except Problem as problem:
                    return problem
        raise AssertionError("fetch_one got a connection from a pool whose only connection was taken")

    problem = asyncio.run(scenario())
    assert problem.status == 503 and problem.headers == {"Retry-After": "1"}
    assert "in time" in problem.detail


def test_a_connection_the_database_dropped_between_requests_is_replaced_before_use(db):
    """Pooled connections the database has dropped (a restart, pg_terminate_backend) are not handed to requests:
    the pool replaces them, and every request after the drop succeeds."""
    from http_helpers import running_api

    with running_api(db) as api, api.client() as client:
        url = f"/api/v1/memory/namespace/user:{USER_A}/keys"
        assert client.get(url).status_code == 200
        with db.connect(autocommit=True) as conn:
            terminate = ("select pg_terminate_backend(pid) from pg_stat_activity "
                         "where datname = current_database() and usename = %s")
            login = psycopg.conninfo.conninfo_to_dict(db.dsn("app"))["user"]
            assert conn.execute(terminate, [login]).fetchall()
            while conn.execute("select count(*) from pg_stat_activity where datname = current_database() "
                               "and usename = %s", [login]).fetchone()[0]:
                time.sleep(0.05)
        answers = [client.get(url) for _ in range(5)]
        assert [answer.status_code for answer in answers] == [200] * 5, [answer.text for answer in answers]


def test_a_connection_lost_under_a_request_is_503_with_retry_after(db):
    """A request whose connection the database ends while it runs (here: waiting for a lock, then
    pg_terminate_backend, as a restart would) gets 503 and Retry-After, like a database out of reach, not the
    answer for a failed statement; the pool replaces the connection and the next request succeeds."""
    import asyncio

    from psycopg_pool import AsyncConnectionPool
    from starlette.datastructures import State
    from starlette.requests import Request

    from memsub.http_api import Problem, fetch_one

    from helpers import terminate_backend, wait_until_blocked

    async def scenario() -> tuple[Problem, tuple[object, ...] | None]:
        async with AsyncConnectionPool(db.dsn("app"), min_size=1, max_size=1) as pool:
            async with pool.connection() as connection:
                pid = connection.info.backend_pid
            app = type("App", (), {"state": State({"pool": pool})})()
            request = Request({"type": "http", "app": app,
                               "headers": [(b"authorization", b"Bearer msk_" + b"0" * 16 + b"_" + b"0" * 64)]})
            with db.connect() as holder:
                holder.execute("lock table memsub.api_keys in access exclusive mode")
                waiting = asyncio.ensure_future(fetch_one(request, "select 1", []))
                await asyncio.to_thread(wait_until_blocked, db, pid)
                await asyncio.to_thread(terminate_backend, db, pid)
                try:
                    await waiting
                except Problem as problem:
                    lost = problem
                else:
                    raise AssertionError("a request whose connection was ended got an answer")
            async with pool.connection() as connection:
                after = await (await connection.execute("select 1")).fetchone()
            return lost, after

    problem, after = asyncio.run(scenario())
    assert problem.status == 503 and problem.headers == {"Retry-After": "1"}, (problem.status, problem.detail)
    assert after == (1,)


def test_not_ready_without_memsub_is_503_with_retry_after(empty_db):
    with serve_in_thread(create_app(empty_db.dsn(), max_size=1)) as url, httpx.Client(base_url=url) as client:
        response = client.get("/api/v1/ready")
        assert_problem(response, 503)
        assert "not installed" in response.json()["detail"]
        assert response.headers.get("retry-after") == "1"
