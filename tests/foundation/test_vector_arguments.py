"""A vector argument of a client call is checked before anything is sent, and refused naming its argument.

A vector holds single-precision numbers: NaN, an infinity, a number beyond a 4-byte float's range, a value that is
not a number, or no number at all can never be stored or searched with. The server refuses them too, but as
pgvector's input error (22000, no field named), and a value that is not a number made the client raise Python's
own ValueError. Every wrapper that takes a vector raises LocalValidationError (an InvalidInput, SQLSTATE 22023)
naming its argument, and nothing is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memsub.client import TenantSession

from doc_helpers import DIMENSION, tenant_session
from helpers import TENANT_A
from refusal_helpers import assert_refused_locally
from session_helpers import ALICE

GOOD = [1.0] + [0.0] * (DIMENSION - 1)
BAD = {
    "nan": [float("nan"), *GOOD[1:]],
    "infinity": [*GOOD[:-1], float("-inf")],
    "beyond a 4-byte float": [1e39, *GOOD[1:]],
    "not a number": ["x", *GOOD[1:]],
    "no number": [],
}
Call = Callable[[TenantSession, Any], object]
CALLS: dict[str, tuple[str, Call]] = {
    "memory.write": ("embedding", lambda s, v: s.memory.write(f"user:{ALICE}:notes", "k", {"a": 1}, embedding=v)),
    "memory.search": ("query", lambda s, v: s.memory.search(None, v)),
    "graph.upsert_entity": ("embedding", lambda s, v: s.graph.upsert_entity("Acme", "Organization", embedding=v)),
    "graph.entity_search": ("query", lambda s, v: s.graph.entity_search(None, v)),
    "reflection.record": ("vector", lambda s, v: s.reflection.record("lesson", "check the supplier", vector=v)),
    "reflection.record_summary": ("vector", lambda s, v: s.reflection.record_summary(
        "thread", "t1", "a summary", [uuid.uuid4()], vector=v)),
    "reflection.retrieve": ("query", lambda s, v: s.reflection.retrieve(v)),
    "search.store_embedding": ("vector", lambda s, v: s.search.store_embedding(uuid.uuid4(), "content", v)),
    "search.store_semantic_memory": ("vector", lambda s, v: s.search.store_semantic_memory("agent-1", v)),
    "search.semantic_memory": ("query", lambda s, v: s.search.semantic_memory(v)),
    "search.semantic": ("query", lambda s, v: s.search.semantic(v)),
    "search.hybrid": ("query", lambda s, v: s.search.hybrid("resin", v)),
    "documents.index_put": ("embedding", lambda s, v: s.documents.index_put("notes/a.md", embedding=v)),
}
TABLES = ("memory_entries", "world_model_entities", "reflection_store", "memory_summaries", "memory_embeddings",
          "semantic_memory", "audit", "document_index")


@pytest.mark.parametrize("wrapper", sorted(CALLS))
def test_a_vector_that_cannot_be_one_is_refused_naming_the_argument(db, wrapper):
    field, call = CALLS[wrapper]
    for values in BAD.values():
        assert_refused_locally(db, lambda s, values=values: call(s, values), field, "22023", TABLES)


def test_a_good_vector_still_goes_through_each_kind_of_value(db):
    import numpy

    from memsub._calls import vector

    with tenant_session(db.dsn("app"), TENANT_A, user=ALICE) as session:
        for number, values in enumerate((GOOD, tuple(GOOD), numpy.array(GOOD, dtype=numpy.float64),
                                         vector(GOOD), [int(v) for v in GOOD])):
            entry = session.memory.write(f"user:{ALICE}:notes", f"k{number}", {"a": number}, embedding=values)
            assert entry.version == 1
        assert [hit.key for hit in session.memory.search(None, GOOD, k=5)][:1] in (["k0"], ["k1"], ["k2"], ["k3"],
                                                                                    ["k4"])


@pytest.mark.parametrize("wrapper", sorted(CALLS))
def test_a_vector_longer_than_pgvector_holds_is_refused_naming_the_argument(db, wrapper):
    """More than 16,000 numbers: pgvector refuses the value while parsing it (54000) and names no field; the client
    refuses it first, with the same SQLSTATE, naming the argument (as the HTTP API does)."""
    field, call = CALLS[wrapper]
    refused = assert_refused_locally(db, lambda s: call(s, [1.0] * 16_001), field, "54000", TABLES)
    assert "16000" in str(refused)
