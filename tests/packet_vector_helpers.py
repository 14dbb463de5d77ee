"""Packets with their vectors given apart: the envelopes, vectors and checks the single and batch write tests share."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector import Vector

from helpers import TENANT_A, set_context, superuser_count
from layer_helpers import DIMENSION


def float32_vector(seed: int) -> list[float]:
    values = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return [float(x) for x in values]


def envelope(seed: int) -> dict[str, Any]:
    return {"packet_type": "memory_write", "payload": {"text": f"item {seed}"},
            "timestamp": f"2026-01-01T00:00:{seed:02d}Z",
            "memory": {"embeddings": [
                {"embedding_type": "content", "vector": float32_vector(seed), "chunk_text": f"item {seed}"},
                {"embedding_type": "entity", "vector": float32_vector(seed + 100), "chunk_index": 3}]}}


def apart(written: dict[str, Any], keep_key: bool = True) -> tuple[dict[str, Any], list[Vector]]:
    """The envelope with JSON null (or, ``keep_key=False``, nothing) in place of each vector, and the vectors."""
    lean = copy.deepcopy(written)
    vectors = []
    for element in lean["memory"]["embeddings"]:
        vectors.append(Vector(element.pop("vector")))
        if keep_key:
            element["vector"] = None
    return lean, vectors


def read_back(db: Any, packet_id: Any) -> tuple[dict[str, Any], list[Any]]:
    """The envelope get_packet returns and the stored embedding rows (slot, vector text, chunk text)."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        row = conn.execute("select envelope from memsub.get_packet(%s)", [packet_id]).fetchone()
        stored = conn.execute("select embedding_type, chunk_index, vector::text, chunk_text "
                              "from memsub.memory_embeddings where packet_id = %s order by 1, 2",
                              [packet_id]).fetchall()
    assert row is not None
    return row[0], stored


def refused(db: Any, write: Callable[[psycopg.Connection[Any]], object], column: str, message: str) -> None:
    """``write`` raises 22023 naming ``column``, ``message`` in its text, and nothing is stored."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
            write(conn)
        conn.rollback()
    assert caught.value.diag.column_name == column
    assert message in str(caught.value)
    assert superuser_count(db) == 0
    assert superuser_count(db, "memsub.memory_embeddings") == 0
