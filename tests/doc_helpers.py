"""Helpers for the document and temporal-graph tests: a deterministic embedder, a client session per context."""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import click

from memsub.client import Substrate, TenantSession
from memsub.models import PacketEnvelopeIn, PacketWriteResult

from helpers import TENANT_A

DIMENSION = 1536  # the test template is a default installation


class WordEmbedder:
    """Bag of words hashed into ``dimension`` buckets (md5, so stable across runs), L2-normalized.

    Texts sharing words get a small cosine distance; texts without common words are orthogonal. Enough to check
    that vectors travel to the right rows; no claim about retrieval quality.
    """

    def __init__(self, dimension: int = DIMENSION) -> None:
        self.dimension = dimension
        self.calls = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self.vector(text) for text in texts]

    def vector(self, text: str) -> list[float]:
        values = [0.0] * self.dimension
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            bucket = int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "big") % self.dimension
            values[bucket] += 1.0
        norm = math.sqrt(sum(v * v for v in values)) or 1.0
        if not any(values):
            values[0] = 1.0
        return [v / norm for v in values]


class OutageEmbedder(WordEmbedder):
    """A remote embedding service seen from the client: it says on stderr which text it is asked to embed, and
    fails with the client library's own exception for any text that mentions an outage."""

    def embed(self, texts: list[str]) -> list[list[float]]:
        click.echo(f"embedding: {texts[0].split()[0] if texts and texts[0].split() else ''}", err=True)
        if any("outage" in text for text in texts):
            raise RuntimeError("embedding service unavailable")
        return super().embed(texts)


@contextmanager
def tenant_session(dsn: str, tenant: uuid.UUID = TENANT_A, *, org: uuid.UUID | None = None,
                   user: uuid.UUID | None = None, roles: Sequence[str] = (),
                   session: str | None = None) -> Iterator[TenantSession]:
    """One committed transaction of the typed client in a context."""
    with Substrate(dsn, max_size=1) as substrate, substrate.tenant(
            tenant, org_id=org, user_id=user, roles=roles, session_id=session) as memory:
        yield memory


def write_expiring_edge(session: TenantSession, ttl: datetime) -> PacketWriteResult:
    """A packet expiring at ``ttl`` and the edge L9 -[uses]-> Neo4j it observes (so the edge expires with it)."""
    packet = session.packets.write(PacketEnvelopeIn(packet_type="note", payload={"t": 1}, ttl=ttl))
    session.graph.upsert_relationship("L9", "uses", "Neo4j", source_packet=packet.packet_id)
    return packet


def vector_text(values: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def column_types(conn: Any, table: str) -> dict[str, str]:
    rows = conn.execute(
        "select a.attname, format_type(a.atttypid, a.atttypmod) from pg_attribute a "
        "where a.attrelid = %s::regclass and a.attnum > 0 and not a.attisdropped", [f"memsub.{table}"]).fetchall()
    return {name: type_ for name, type_ in rows}
