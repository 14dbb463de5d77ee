"""The demo writes each packet with its embedding in one write: no second pass embeds packets afterwards."""

from __future__ import annotations

import io

import psycopg

from memsub import demo
from memsub.embedding import HashingEmbedder


def test_the_demo_writes_each_packet_with_its_embedding(db):
    out = io.StringIO()
    assert demo.main(db.dsn(), db.name, recreate=False, keep=False, out=out, embedder=HashingEmbedder(1536)) == 0
    with psycopg.connect(db.dsn()) as conn:  # ground truth as the superuser
        rows = conn.execute(
            "select e.packet_id, e.embedding_type, e.chunk_index, e.chunk_text, p.envelope -> 'payload' ->> 'text', "
            "       p.envelope -> 'memory' -> 'embeddings', p.ttl <= now() at time zone 'UTC' "
            "  from memsub.memory_embeddings e "
            "  join memsub.packet_store p on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id").fetchall()
    assert len(rows) >= 15  # the story's packets that have not expired
    for packet_id, embedding_type, chunk_index, chunk_text, text, in_envelope, expired in rows:
        # Each embedding came with its packet's envelope (the vector kept in memory_embeddings, JSON null in the
        # stored envelope): nothing was embedded afterwards.
        assert (embedding_type, chunk_index, chunk_text) == ("content", 0, text), packet_id
        assert in_envelope == [{"embedding_type": "content", "vector": None, "chunk_text": text}], packet_id
        assert expired is not True, packet_id  # an expired packet is never read, so it gets no embedding
