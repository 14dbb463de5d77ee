"""An HTTP API server over one test database, with API keys for two tenants."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg

from memsub.http_api import create_app, serve_in_thread

TENANT_A = uuid.UUID("a0000000-0000-0000-0000-00000000000a")
TENANT_B = uuid.UUID("b0000000-0000-0000-0000-00000000000b")
USER_A = uuid.UUID("a1000000-0000-0000-0000-00000000000a")
USER_B = uuid.UUID("b1000000-0000-0000-0000-00000000000b")
SMALL_BODY_LIMIT = 256 * 1024


def create_key(dsn: str, tenant: uuid.UUID, *, user: uuid.UUID | None = None, roles: tuple[str, ...] = (),
               label: str = "test") -> dict[str, Any]:
    """A new API key, created by a platform admin login (dsn) in a platform_admin context."""
    with psycopg.connect(dsn) as conn:
        conn.execute("select memsub.set_context(null, p_roles => '{platform_admin}')")
        cursor = conn.execute("select key_id, api_key from memsub.create_api_key(%s, null, %s, %s, %s)",
                              [tenant, user, list(roles), label])
        key_id, api_key = cursor.fetchone()  # type: ignore[misc]
    return {"key_id": key_id, "api_key": api_key}


def hot_vector(dimension: int, hot: int) -> list[float]:
    """A vector of ``dimension`` small values with one large one at index ``hot``."""
    values = [0.01] * dimension
    values[hot] = 1.0
    return values


def write_embedded_notes(client: httpx.Client, dimension: int, texts: tuple[str, ...]) -> None:
    """Write one note packet a text, embedded (content) with the vector hot at the text's index."""
    for hot, words in enumerate(texts):
        response = client.post("/api/v1/memory/packet", json={
            "packet_type": "note", "payload": {"text": words},
            "memory": {"embeddings": [{"embedding_type": "content", "vector": hot_vector(dimension, hot),
                                       "chunk_text": words}]}})
        assert response.status_code == 201, response.text


@dataclass
class Api:
    url: str
    database: Any  # conftest.Database
    keys: dict[str, dict[str, Any]]

    def client(self, key: str | None = "a") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[key]['api_key']}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def packet_count(self) -> int:
        with self.database.connect() as conn:
            return int(conn.execute("select count(*) from memsub.packet_store").fetchone()[0])

    def memory_count(self) -> int:
        with self.database.connect() as conn:
            return int(conn.execute("select count(*) from memsub.memory_entries").fetchone()[0])

    def dimension(self) -> int:
        with self.database.connect() as conn:
            return int(conn.execute("select memsub.vector_dimension()").fetchone()[0])


@contextmanager
def running_api(database: Any, max_body_bytes: int = SMALL_BODY_LIMIT) -> Iterator[Api]:
    """The API served on a free local port as the app login, which is left without any binding: it cannot
    choose a tenant itself (set_context is refused), only act for the tenant of a presented key."""
    with database.connect(autocommit=True) as conn:
        conn.execute("select memsub.unbind_login('memsub_test_app')")
    admin = database.dsn("platform_admin")
    keys = {"a": create_key(admin, TENANT_A, user=USER_A, label="tenant A"),
            "b": create_key(admin, TENANT_B, user=USER_B, label="tenant B")}
    app = create_app(database.dsn("app"), max_size=4, max_body_bytes=max_body_bytes)
    with serve_in_thread(app) as url:
        yield Api(url, database, keys)
