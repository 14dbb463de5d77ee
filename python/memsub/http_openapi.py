"""The OpenAPI 3.1 document of the HTTP API (served at /api/v1/openapi.json, committed as docs/openapi.json).

The request bodies and query parameters are derived from the routes' ``Argument`` lists in memsub.http_api, the
same lists the server reads requests with, so the document cannot describe a field the server refuses or miss
one it takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from memsub import http_api
from memsub.http_api import Argument
from memsub.models import DerivationType, Scope

Schema = dict[str, Any]

UUID: Schema = {"type": "string", "format": "uuid"}
TIMESTAMP: Schema = {"type": "string", "format": "date-time"}
VECTOR: Schema = {"type": "array", "items": {"type": "number"}, "minItems": 1,
                  "description": "An embedding of the installation's dimension (memsub.vector_dimension())."}
INT32: Schema = {"type": "integer", "minimum": -2147483648, "maximum": 2147483647}
ANY_JSON: Schema = {}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


PACKET_ENVELOPE: Schema = {
    "type": "object",
    "description": "Seed 004's PacketEnvelope. Only packet_type and payload are required: packet_id and timestamp "
                   "are generated when absent. Unknown fields are kept and listed in unknown_fields.",
    "required": ["packet_type", "payload"],
    "properties": {
        "packet_id": UUID, "packet_type": {"type": "string", "minLength": 1}, "timestamp": TIMESTAMP,
        "payload": ANY_JSON, "metadata": {"type": "object"}, "provenance": {"type": "object"},
        "confidence": {"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1},
                                                        "rationale": {"type": "string"}}},
        "reasoning_block": {"type": "object"}, "thread_id": UUID,
        "lineage": {"type": "object", "properties": {
            "parent_ids": {"type": "array", "items": UUID},
            "derivation_type": {"enum": list(get_args(DerivationType))},
            "generation": {"type": "integer"}, "root_packet_id": UUID}},
        "tags": {"type": "array", "items": {"type": "string"}}, "ttl": TIMESTAMP,
        "scope": {"enum": list(get_args(Scope))},
        "importance_score": {"type": "number", "minimum": 0, "maximum": 1},
        "routing": {"type": "object"}, "correlation_id": UUID, "session_id": {"type": "string"},
        "trace_id": {"type": "string"},
        "memory": {"type": "object", "description": "Fan-out into the layer tables: facts, relationships, "
                                                    "embeddings, reasoning_trace."},
    },
    "example": {"packet_type": "event", "payload": {"action": "user_query", "content": "Find HDPE"},
                "thread_id": "11111111-2222-3333-4444-555555555555", "tags": ["hdpe", "search"]},
}

PACKET_WRITE_RESULT: Schema = {
    "type": "object", "description": "What memsub.write_packet did with one envelope (PacketWriteResult).",
    "properties": {
        "position": {"type": "integer"}, "packet_id": UUID, "packet_type": {"type": "string"},
        "timestamp": TIMESTAMP, "thread_id": nullable(UUID), "parent_ids": {"type": "array", "items": UUID},
        "generation": {"type": "integer"}, "root_packet_id": UUID, "content_hash": {"type": "string"},
        "deduplicated": {"type": "boolean"}, "written": {"type": "object"},
        "unknown_fields": {"type": "array", "items": {"type": "string"}},
    },
}

PACKET_ROW: Schema = {
    "type": "object", "description": "One row of memsub.packet_store (PacketStoreRow); write_seq is the thread cursor.",
    "properties": {
        "packet_id": UUID, "packet_type": {"type": "string"}, "envelope": {"type": "object"},
        "timestamp": TIMESTAMP, "thread_id": nullable(UUID), "parent_ids": {"type": "array", "items": UUID},
        "tags": {"type": "array", "items": {"type": "string"}}, "scope": {"type": "string"},
        "importance_score": {"type": "number"}, "tenant_id": UUID, "org_id": nullable(UUID),
        "user_id": nullable(UUID), "write_seq": {"type": "integer"},
    },
}

LINEAGE_ROW: Schema = {
    "type": "object", "properties": {
        "packet_id": UUID, "depth": {"type": "integer"}, "packet_type": {"type": "string"}, "timestamp": TIMESTAMP,
        "parent_ids": {"type": "array", "items": UUID}, "thread_id": nullable(UUID),
        "generation": {"type": "integer"}, "state": {"enum": ["live", "expired", "purged"]}},
}

SEMANTIC_HIT: Schema = {
    "type": "object", "description": "One row of memsub.semantic_search.", "properties": {
        "embedding_id": UUID, "packet_id": UUID, "embedding_type": {"type": "string"},
        "chunk_index": {"type": "integer"}, "chunk_text": nullable({"type": "string"}),
        "distance": {"type": "number"}, "importance_score": nullable({"type": "number"}),
        "combined_score": {"type": "number"}, "method": {"enum": ["exact", "approximate"]},
        "access_id": nullable(UUID),
        "packet": nullable({**ref("PacketStoreRow"), "description": "The hit's packet when asked with_packets."})},
}

HYBRID_HIT: Schema = {
    "type": "object", "description": "One row of memsub.hybrid_search.", "properties": {
        "embedding_id": nullable(UUID), "packet_id": UUID, "chunk_index": nullable({"type": "integer"}),
        "chunk_text": nullable({"type": "string"}), "score": {"type": "number"},
        "vector_rank": nullable({"type": "integer"}), "text_rank": nullable({"type": "integer"}),
        "distance": nullable({"type": "number"}), "text_score": nullable({"type": "number"}),
        "importance_score": nullable({"type": "number"}), "access_id": nullable(UUID),
        "packet": nullable({**ref("PacketStoreRow"), "description": "The hit's packet when asked with_packets."})},
}

GRAPH_NODE: Schema = {
    "type": "object", "description": "One entity reached by memsub.traverse_graph.", "properties": {
        "depth": {"type": "integer"}, "entity": {"type": "string"},
        "path": {"type": "array", "items": {"type": "string"}},
        "relationship_path": {"type": "array", "items": {"type": "string"}},
        "path_confidence": {"type": "number"}, "relationship_id": nullable(UUID),
        "edge_confidence": nullable({"type": "number"})},
}

MEMORY_ENTRY: Schema = {
    "type": "object", "description": "One version of a namespaced memory entry (memsub.memory_entries).",
    "properties": {
        "id": UUID, "namespace": {"type": "string"}, "key": {"type": "string"}, "value": ANY_JSON,
        "memory_type": {"type": "string"}, "version": {"type": "integer"}, "metadata": {"type": "object"},
        "created_at": TIMESTAMP, "tenant_id": UUID},
}

PROBLEM: Schema = {
    "type": "object", "description": "RFC 9457 problem details; field is the input at fault (the SQLSTATE's "
                                     "column diagnostic), sqlstate the database's error code (docs/errors.md).",
    "required": ["type", "title", "status", "detail"],
    "properties": {"type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
                   "detail": {"type": "string"}, "instance": {"type": "string"}, "field": {"type": "string"},
                   "sqlstate": {"type": "string"},
                   "limit": {"type": "string", "description": "54000: limit=NAME value=MAX actual=N."},
                   "conflict": {"type": "string", "description": "40001 (a stale expected_version): "
                                                                 "current_version=N."}},
}

READINESS: Schema = {
    "type": "object", "required": ["status", "standby"], "additionalProperties": False,
    "properties": {
        "status": {"const": "ready"},
        "standby": {"type": "boolean",
                    "description": "true on a hot standby (pg_is_in_recovery()): it serves the reads, and a write "
                                   "sent there is answered 503 read-only; false on the primary, which takes both. "
                                   "A load balancer sends the writes where it is false."}},
}

ARGUMENT_SCHEMAS: dict[http_api.Coerce, Schema] = {
    http_api.integer: INT32, http_api.bigint: {"type": "integer"}, http_api.number: {"type": "number"},
    http_api.boolean: {"type": "boolean"}, http_api.text: {"type": "string"}, http_api.timestamp: TIMESTAMP,
    http_api.texts: {"type": "array", "items": {"type": "string"}}, http_api.vector: VECTOR,
    http_api.uuid_text: UUID, http_api.json_value: ANY_JSON, http_api.json_object: {"type": "object"},
    http_api.seconds: {"type": "number"},
}


def argument_schema(argument: Argument) -> Schema:
    """The JSON Schema of a field: its converter's, or the enumeration of the values the function accepts."""
    return {"enum": list(argument.choices)} if argument.choices else dict(ARGUMENT_SCHEMAS[argument.coerce])


def request_body(arguments: Sequence[Argument], description: str) -> Schema:
    """A JSON object body with exactly the fields of ``arguments``."""
    properties = {argument.name: argument_schema(argument) | ({"description": argument.doc} if argument.doc else {})
                  for argument in arguments}
    schema: Schema = {"type": "object"}
    required = [argument.name for argument in arguments if argument.required]
    if required:
        schema["required"] = required
    return schema | {"additionalProperties": False, "description": description, "properties": properties}


def query_parameters(arguments: Sequence[Argument]) -> list[dict[str, Any]]:
    """The query parameters of ``arguments`` (a repeatable one is an array)."""
    return [query_parameter(argument.name, argument_schema(argument), argument.doc, argument.required)
            for argument in arguments]


SEMANTIC_REQUEST = request_body(http_api.SEMANTIC_ARGUMENTS, "Arguments of memsub.semantic_search "
                                "(docs/retrieval.md); absent ones take its defaults.")
HYBRID_REQUEST = request_body(http_api.HYBRID_ARGUMENTS, "Arguments of memsub.hybrid_search (docs/retrieval.md); "
                              "without query, the keyword leg only.")
MEMORY_WRITE_REQUEST = request_body(http_api.MEMORY_WRITE_ARGUMENTS, "Arguments of memsub.memory_write; absent "
                                    "ones take its defaults.")


def problem_responses(*statuses: int) -> dict[str, Any]:
    text = {400: "Malformed JSON", 401: "No, or an unknown, revoked or expired API key",
            403: "Not allowed in the key's context", 404: "Not found or not visible to the key",
            409: "Conflict (duplicate, stale version, wrong state)", 413: "Body over the server's limit",
            422: "Invalid input, a query parameter the route does not take among it; field names it",
            503: "Database unavailable or busy, or a write sent to a read-only server (a hot standby)"}
    return {str(status): {"description": text[status],
                          "content": {"application/problem+json": {"schema": ref("Problem")}}}
            for status in statuses}


def json_content(schema: Schema) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def wrapped(name: str, item: str) -> Schema:
    return {"type": "object", "required": [name], "properties": {name: {"type": "array", "items": ref(item)}}}


def query_parameter(name: str, schema: Schema, description: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


def path_parameter(name: str, schema: Schema, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


def operation(operation_id: str, summary: str, ok: tuple[str, Schema], *, errors: tuple[int, ...],
              body: Schema | None = None, parameters: list[dict[str, Any]] | None = None,
              extra_ok: dict[str, Any] | None = None, public: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"operationId": operation_id, "summary": summary}
    if parameters:
        result["parameters"] = parameters
    if body is not None:
        result["requestBody"] = {"required": True, "content": json_content(body)}
    responses: dict[str, Any] = {ok[0]: {"description": "OK", "content": json_content(ok[1])}}
    responses.update(extra_ok or {})
    responses.update(problem_responses(*errors))
    result["responses"] = responses
    if public:
        result["security"] = []
    return result


READ_ERRORS = (401, 403, 422, 503)
WRITE_ERRORS = (400, 401, 403, 409, 413, 422, 503)
NAMESPACE = path_parameter("namespace", {"type": "string", "minLength": 1},
                           "A memory namespace, kind:segment[:segment...] (user:<id>:..., session:<id>:..., "
                           "app:..., project:...); it never contains '/'.")
KEY = path_parameter("key", {"type": "string", "minLength": 1},
                     "The entry's key within the namespace. It may contain '/': the key is the rest of the path, "
                     "so docs/readme.md is sent as docs%2Freadme.md or as is (.../keys/docs/readme.md).")


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 description of every route of memsub.http_api."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "memsub HTTP API", "version": "1",
                 "description": "Seed 004's packet submission endpoint and the reads and searches around it, "
                                "each a thin layer over one memsub stored function (docs/http.md). Every "
                                "request acts for the tenant of its API key."},
        "components": {
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer",
                                           "description": "An API key from `memsub api-key create` "
                                                          "(msk_<16 hex>_<64 hex>)."}},
            "schemas": {"PacketEnvelope": PACKET_ENVELOPE, "PacketWriteResult": PACKET_WRITE_RESULT,
                        "PacketStoreRow": PACKET_ROW, "LineageRow": LINEAGE_ROW, "SemanticHit": SEMANTIC_HIT,
                        "HybridHit": HYBRID_HIT, "GraphNode": GRAPH_NODE, "MemoryEntry": MEMORY_ENTRY,
                        "Readiness": READINESS, "Problem": PROBLEM},
        },
        "security": [{"apiKey": []}],
        "paths": {
            "/api/v1/memory/packet": {"post": operation(
                "writePacket", "Write one PacketEnvelope (memsub.write_packet)", ("201", ref("PacketWriteResult")),
                body=ref("PacketEnvelope"), errors=WRITE_ERRORS,
                extra_ok={"200": {"description": "Already stored: the existing packet, deduplicated true",
                                  "content": json_content(ref("PacketWriteResult"))}})},
            "/api/v1/memory/packets": {"post": operation(
                "writePackets", "Write a batch of envelopes, all or nothing (memsub.write_packets)",
                ("200", wrapped("results", "PacketWriteResult")),
                body={"anyOf": [{"type": "array", "items": ref("PacketEnvelope")},
                                {"type": "object", "required": ["envelopes"], "additionalProperties": False,
                                 "properties": {"envelopes": {"type": "array", "items": ref("PacketEnvelope")}}}]},
                errors=WRITE_ERRORS)},
            "/api/v1/memory/packet/{packet_id}": {"get": operation(
                "getPacket", "One packet (memsub.get_packet)", ("200", ref("PacketStoreRow")),
                parameters=[path_parameter("packet_id", UUID, "The packet's id."),
                            *query_parameters(http_api.GET_PACKET_ARGUMENTS)],
                errors=(401, 403, 404, 422, 503))},
            "/api/v1/memory/packet/{packet_id}/lineage": {"get": operation(
                "getLineage", "Ancestors or descendants of a packet (memsub.get_lineage)",
                ("200", wrapped("lineage", "LineageRow")),
                parameters=[path_parameter("packet_id", UUID, "The start packet."),
                            *query_parameters(http_api.LINEAGE_ARGUMENTS)],
                errors=(401, 403, 404, 422, 503))},
            "/api/v1/memory/thread/{thread_id}": {"get": operation(
                "getThread", "One page of a thread in write order (memsub.get_thread)",
                ("200", {"type": "object", "required": ["packets", "next_cursor"], "properties": {
                    "packets": {"type": "array", "items": ref("PacketStoreRow")},
                    "next_cursor": nullable({"type": "integer"})}}),
                parameters=[path_parameter("thread_id", UUID, "The thread."),
                            *query_parameters(http_api.THREAD_ARGUMENTS)],
                errors=READ_ERRORS)},
            "/api/v1/search/semantic": {"post": operation(
                "semanticSearch", "Nearest packets by embedding (memsub.semantic_search)",
                ("200", wrapped("hits", "SemanticHit")), body=SEMANTIC_REQUEST, errors=WRITE_ERRORS)},
            "/api/v1/search/hybrid": {"post": operation(
                "hybridSearch", "Vector and full-text search fused by reciprocal rank (memsub.hybrid_search)",
                ("200", wrapped("hits", "HybridHit")), body=HYBRID_REQUEST, errors=WRITE_ERRORS)},
            "/api/v1/graph/traverse": {"get": operation(
                "traverseGraph", "Entities reachable from one entity (memsub.traverse_graph)",
                ("200", wrapped("nodes", "GraphNode")),
                parameters=query_parameters(http_api.TRAVERSE_ARGUMENTS), errors=READ_ERRORS)},
            "/api/v1/memory/namespace/{namespace}/keys": {"get": operation(
                "listMemory", "Live entries under a namespace prefix (memsub.memory_list)",
                ("200", wrapped("entries", "MemoryEntry")),
                parameters=[NAMESPACE, *query_parameters(http_api.MEMORY_LIST_ARGUMENTS)], errors=READ_ERRORS)},
            "/api/v1/memory/namespace/{namespace}/keys/{key}": {
                "get": operation("getMemory", "The live version of an entry (memsub.memory_get)",
                                 ("200", ref("MemoryEntry")), parameters=[NAMESPACE, KEY],
                                 errors=(401, 403, 404, 422, 503)),
                "put": operation("putMemory", "Write a new version of an entry (memsub.memory_write)",
                                 ("200", ref("MemoryEntry")), parameters=[NAMESPACE, KEY],
                                 body=MEMORY_WRITE_REQUEST, errors=WRITE_ERRORS)},
            "/api/v1/health": {"get": operation(
                "health", "Liveness: the process answers", ("200", {"type": "object"}), errors=(422,), public=True)},
            "/api/v1/ready": {"get": operation(
                "ready", "Readiness: the database answers and memsub is installed; standby says whether it is a "
                "hot standby (reads only)", ("200", ref("Readiness")),
                errors=(422, 503), public=True)},
            "/api/v1/openapi.json": {"get": operation(
                "openapi", "This document", ("200", {"type": "object"}), errors=(422,), public=True)},
        },
    }
