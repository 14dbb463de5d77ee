"""A block reads back the graph it has just written: an edge a packet states starts no later than the
transaction that stores it, whatever time the client stamped on the envelope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memsub.models import PacketEnvelopeIn

from doc_helpers import tenant_session
from session_helpers import ground_truth

RELATIONSHIPS = {"relationships": [{"source_entity": "Ada", "relationship_type": "works_at",
                                    "target_entity": "Analytical Engines"}]}


def test_edges_written_in_a_block_are_read_in_the_same_block(db):
    with tenant_session(db.dsn("app")) as session:
        # The client stamps the envelope as it builds it, after the block's transaction began.
        session.packets.write(PacketEnvelopeIn(packet_type="note", payload={"t": "Ada joins"}, memory=RELATIONSHIPS))
        paths = [(p.depth, p.entity) for p in session.graph.traverse("Ada")]
        near = [i.other_entity for i in session.graph.entity_neighbourhood("Ada") if i.kind == "relationship"]
    assert paths == [(1, "Analytical Engines")]
    assert near == ["Analytical Engines"]


def test_an_envelope_stamped_ahead_of_the_server_clock_is_read_at_once(db):
    """A client clock ahead of the server's: the edge is current from the write, not from the stated time."""
    ahead = datetime.now(UTC) + timedelta(minutes=5)
    with tenant_session(db.dsn("app")) as session:
        written = session.packets.write(PacketEnvelopeIn(packet_type="note", payload={"t": "Ada moves"},
                                                          timestamp=ahead, memory=RELATIONSHIPS))
    with tenant_session(db.dsn("app")) as session:
        paths = [(p.depth, p.entity) for p in session.graph.traverse("Ada")]
    assert paths == [(1, "Analytical Engines")]
    stored = ground_truth(db, "select first_seen, lower(valid_period) as valid_from from memsub.entity_relationships")
    assert stored[0]["first_seen"] == written.timestamp  # the observation keeps its stated time
    assert stored[0]["valid_from"] < ahead
