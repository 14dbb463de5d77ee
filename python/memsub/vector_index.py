"""The HNSW index of each embedding type on memory_embeddings: its build parameters, and rebuilding it with others.

The parameters are checked and recorded by ``memsub.set_vector_index_build`` (22023 naming the field, nothing
changed); the rebuild itself is ``REINDEX INDEX CONCURRENTLY``, which PostgreSQL runs only outside a transaction
block, so it is sent from here on an autocommit connection. Used by ``memsub vector-index`` and the benchmarks.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import psycopg
from psycopg import sql

from memsub._calls import function, raw


@dataclass(frozen=True)
class VectorIndexBuild:
    """One row of ``memsub.vector_index_builds()``."""

    embedding_type: str
    index_name: str
    m: int
    ef_construction: int
    index_bytes: int
    valid: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def index_builds(conn: psycopg.Connection[Any], embedding_type: str | None = None) -> list[VectorIndexBuild]:
    """Every embedding type's index (or the one of ``embedding_type``), in the vocabulary's order."""
    rows = conn.execute("select embedding_type, index_name, m, ef_construction, index_bytes, valid "
                        "from memsub.vector_index_builds() where %s::text is null or embedding_type = %s",
                        [embedding_type, embedding_type]).fetchall()
    return [VectorIndexBuild(*row) for row in rows]


def rebuild_index(conn: psycopg.Connection[Any], embedding_type: str, m: int, ef_construction: int,
                  maintenance_work_mem: str | None = None) -> tuple[str, float]:
    """Record the build parameters and rebuild the type's index concurrently (``conn`` in autocommit, as the
    role that applies migrations); the index's name and the rebuild's seconds."""
    # The memory setting first: a value the server refuses stops the command before any parameter is recorded
    # (recorded first, they were reported by `show` for graphs never rebuilt with them).
    if maintenance_work_mem is not None:
        conn.execute("select pg_catalog.set_config('maintenance_work_mem', %s, false)", [maintenance_work_mem])
    record = function("set_vector_index_build", {"embedding_type": embedding_type, "m": m,
                                                 "ef_construction": ef_construction}, raw())
    recorded: Any = conn.execute(record.statement, record.params).fetchone()
    index_name: str = recorded[0]
    started = time.perf_counter()
    conn.execute(sql.SQL("reindex index concurrently {}").format(sql.Identifier("memsub", index_name)))
    return index_name, time.perf_counter() - started
