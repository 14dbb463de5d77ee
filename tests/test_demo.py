"""The demo tells its story against a real server, and the database ends up holding what the story says."""

import io
import re
import uuid

import psycopg
from psycopg import sql

from memsub import demo
from memsub.migrator import Migrator


def run_demo(dsn: str, database: str, recreate: bool) -> str:
    out = io.StringIO()
    assert demo.main(dsn, database, recreate=recreate, out=out) == 0
    return out.getvalue()


def stored_per_tenant(dsn: str) -> dict[uuid.UUID, int]:
    """Ground truth as the superuser (bypasses row-level security)."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select tenant_id, count(*) from memsub.packet_store group by tenant_id").fetchall()
    return {tenant: count for tenant, count in rows}


def test_demo_story(db):
    text = run_demo(db.dsn(), db.name, recreate=False)

    # Who runs the story: the demo roles, not the superuser.
    assert "memsubdemo_app (member of memsub_app)" in text
    # Thread replay and lineage.
    assert "alice sees 12 packets of thread" in text
    assert re.search(r"insight \w{8} 'recommendation': generation 5, root \w{8} \(query\)", text)
    assert re.search(r"^\s+5\s+\w{8}\s+query\s+event\s+-\s+0\s+-$", text, re.M)
    assert re.search(r"^\s+1\s+\w{8}\s+shortlist\s+insight\s+merge\s+4\s+pacific,golden,baycycle$", text, re.M)
    # Batch ordering: the child listed first still got its generation and root from parents in the batch.
    assert re.search(r"route_decision\s+\w{8}\s+B\s+insight\s+inference\s+route_plan\s+2\s+route_ask", text)
    # Dedup of a retried write.
    assert re.search(r"deduplicated: yes; returned packet \w{8} \(query\)", text)
    assert "still holds 12 packets for alice (was 12)" in text
    # Rejected envelopes with their SQLSTATE and field.
    for what, state, field, exception in [
        ("confidence above 1", "22023", "confidence.score", "InvalidInput"),
        ("unknown derivation type", "22023", "lineage.derivation_type", "InvalidInput"),
        ("malformed thread_id", "22P02", "thread_id", "InvalidInput"),
        ("missing packet_type", "23502", "packet_type", "InvalidInput"),
        ("ttl before timestamp", "22023", "ttl", "InvalidInput"),
        ("itself as parent", "23514", "lineage.parent_ids", "IntegrityError"),
    ]:
        assert re.search(rf"{what}\s+{state}\s+{re.escape(field)}\s+{exception}", text), what
    assert "after the rejections: 12 packets (unchanged)" in text
    # Tenant isolation.
    assert re.search(r"get_packet\(\w{8}\)\s+alice's shortlist\s+no row", text)
    assert re.search(r"get_thread\(\w{8}\)\s+alice's supplier thread\s+0 packets", text)
    assert re.search(r"an insight citing the shortlist\s+refused: IntegrityError, SQLSTATE 23503, "
                     r"field lineage\.parent_ids", text)
    assert "the refusal: lineage integrity: parent packet" in text
    # Scopes between two users of one tenant, the tenant admin and the other tenant.
    assert re.search(r"shortlist\s+\w{8}\s+shared\s+sees\s+sees\s+sees\s+-", text)
    assert re.search(r"rules\s+\w{8}\s+l-private\s+sees\s+-\s+sees\s+-", text)
    assert re.search(r"reply\s+\w{8}\s+cursor\s+sees\s+-\s+sees\s+-", text)
    assert re.search(r"bob_draft\s+\w{8}\s+cursor\s+-\s+sees\s+sees\s+-", text)
    assert "alice sees 12, bob sees 10 packets" in text
    assert "SQLSTATE 23503, field lineage.parent_ids" in text.split("bob writes a child")[1]
    # TTL hygiene, per tenant.
    assert "Acme Plastics: 3 expired packet(s) removed" in text
    assert "Borealis Freight: 1 expired packet(s) removed" in text
    assert "3 packets before, 1 after" in text

    # What is stored is what the story told: 16 Acme packets written, 3 purged; 5 + 1 Borealis, 1 purged.
    assert stored_per_tenant(db.dsn()) == {demo.ACME.tenant_id: 13, demo.BOREALIS.tenant_id: 5}


def test_demo_runs_again_on_a_fresh_database(server):
    name = f"memsub_demo_{uuid.uuid4().hex[:8]}"
    try:
        first = run_demo(server.dsn("postgres"), name, recreate=True)
        second = run_demo(server.dsn("postgres"), name, recreate=True)
        assert f"(recreated), schema {Migrator('').migrations[-1].version_text}" in first
        for text in (first, second):
            assert "deduplicated: yes" in text
            assert "Acme Plastics: 3 expired packet(s) removed" in text
        assert stored_per_tenant(server.dsn(name)) == {demo.ACME.tenant_id: 13, demo.BOREALIS.tenant_id: 5}
    finally:
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
