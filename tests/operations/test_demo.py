"""The demo tells its story against a real server, and the database ends up holding what the story says."""

import io
import re
import uuid

import psycopg
import pytest
from psycopg import sql

from memsub import demo
from memsub.embedding import Embedder, HashingEmbedder
from memsub.migrator import Migrator

BOREALIS_LABELS = {"route_ask", "road_report", "route_plan", "route_decision", "diesel"}


def run_demo(dsn: str, database: str | None, recreate: bool, embedder: Embedder | None = None,
             keep: bool = False) -> str:
    out = io.StringIO()
    assert demo.main(dsn, database, recreate=recreate, keep=keep, out=out, embedder=embedder) == 0
    return out.getvalue()


def demo_leftovers(dsn: str) -> tuple[list[str], list[str]]:
    """Demo databases and login roles on the server."""
    with psycopg.connect(dsn) as conn:
        databases = [r[0] for r in conn.execute("select datname from pg_database where datname like 'memsub_demo%'")]
        roles = [r[0] for r in conn.execute("select rolname from pg_roles where rolname like 'memsubdemo%'")]
    return databases, roles


def search_results(text: str) -> dict[str, list[str]]:
    """The search section: semantic and hybrid rows by label, and what bob and carol got."""
    section = text.split("Searching the conversation")[1].split("Expiry: ")[0]
    tables = re.findall(r"^\s+(\d)\s+(\S+)\s+(.*)$", section, re.M)
    semantic = [row[2].split()[0] for row in tables[:5]]
    hybrid = [row[2].split()[2] for row in tables[5:10]]
    others = {name: re.search(rf"{name} runs the same hybrid search: \d+ results \((.*)\)", section)
              for name in ("bob", "carol")}
    return {"semantic": semantic, "hybrid": hybrid, "hybrid_first": tables[5][2].split()[:2],
            **{name: match.group(1).split(", ") if match else [] for name, match in others.items()}}


def check_search(text: str) -> None:
    found = search_results(text)
    assert len(found["semantic"]) == 5 and len(found["hybrid"]) == 5
    # "ISO 14001" is in the rules and in three supplier notes: the first hybrid hit matches by words and meaning.
    assert found["hybrid"][0] in {"rules", "pacific", "baycycle", "golden"}
    assert found["hybrid_first"] != ["-", "-"] and "-" not in found["hybrid_first"]
    # Row-level security holds for search too.
    assert not {"rules", "recommendation", "reply"} & set(found["bob"]) and "shortlist" in found["bob"]
    assert set(found["carol"]) <= BOREALIS_LABELS and found["carol"]
    # Learning is tenant maintenance: alice's application context is refused, the tenant's admin learns.
    assert "her own learn_importance -> SQLSTATE 42501" in text
    assert re.search(r"acme admin   learn_importance\(\) .* counted \d+ accesses and 1 feedback", text)
    before, after = re.search(r"importance of \w+: ([\d.]+) -> ([\d.]+)", text).groups()  # type: ignore[union-attr]
    assert 0.5 == float(before) < float(after) <= 1.0


def stored_per_tenant(dsn: str) -> dict[uuid.UUID, int]:
    """Ground truth as the superuser (bypasses row-level security)."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select tenant_id, count(*) from memsub.packet_store group by tenant_id").fetchall()
    return {tenant: count for tenant, count in rows}


def test_demo_story(db):
    # The test database stores 1536-d vectors: the hashing embedder, at that dimension, embeds the conversation.
    text = run_demo(db.dsn(), db.name, recreate=False, embedder=HashingEmbedder(1536))
    assert "embedder  hashing (feature hashing, 1536-d" in text
    check_search(text)

    # Who runs the story: the demo roles, not the superuser.
    assert re.search(r"memsubdemo_app_\w{6} \(member of memsub_app\)", text)
    assert "memsub demo: server postgres@" in text and "(reused)" in text
    # Thread replay and lineage.
    assert "alice sees 11 packets of thread" in text  # the raw directory page has expired: it is not read
    assert re.search(r"insight \w{8} 'recommendation': generation 5, root \w{8} \(query\)", text)
    assert re.search(r"^\s+5\s+\w{8}\s+query\s+event\s+-\s+0\s+-$", text, re.M)
    assert re.search(r"^\s+1\s+\w{8}\s+shortlist\s+insight\s+merge\s+4\s+pacific,golden,baycycle$", text, re.M)
    # Batch ordering: the child listed first still got its generation and root from parents in the batch.
    assert re.search(r"route_decision\s+\w{8}\s+B\s+insight\s+inference\s+route_plan\s+2\s+route_ask", text)
    # Dedup of a retried write; a repeated turn is kept.
    assert re.search(r"deduplicated: yes; returned packet \w{8} \(query\)", text)
    assert "still holds 11 packets for alice (was 11)" in text
    assert re.search(r"five minutes later: packets \w{8} and \w{8}, deduplicated: no", text)
    assert 'repeated turn kept: the thread replays 2 "yes" turns' in text
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
    assert "after the rejections: 13 packets (unchanged)" in text
    # Tenant isolation.
    assert re.search(r"get_packet\(\w{8}\)\s+alice's shortlist\s+no row", text)
    assert re.search(r"get_thread\(\w{8}\)\s+alice's supplier thread\s+0 packets", text)
    assert re.search(r"get_lineage\(\w{8}\)\s+ancestors of alice's reply\s+refused: NotFound, SQLSTATE P0002, "
                     r"field packet_id", text)
    assert re.search(r"an insight citing the shortlist\s+refused: IntegrityError, SQLSTATE 23503, "
                     r"field lineage\.parent_ids", text)
    assert "the refusal: lineage integrity: parent packet" in text
    # Scopes between two users of one tenant, the tenant admin and the other tenant.
    assert re.search(r"shortlist\s+\w{8}\s+shared\s+sees\s+sees\s+sees\s+-", text)
    assert re.search(r"rules\s+\w{8}\s+l-private\s+sees\s+-\s+sees\s+-", text)
    assert re.search(r"reply\s+\w{8}\s+cursor\s+sees\s+-\s+sees\s+-", text)
    assert re.search(r"bob_draft\s+\w{8}\s+cursor\s+-\s+sees\s+sees\s+-", text)
    assert "alice sees 13, bob sees 11 packets" in text
    assert "SQLSTATE 23503, field lineage.parent_ids" in text.split("bob writes a child")[1]
    # Expiry: an expired packet is not read before the purge; purging keeps its lineage.
    assert "get_packet -> no row; get_thread -> not listed" in text
    assert "children of plan before purging: search (live), scratch (expired)" in text
    assert "Acme Plastics: 3 expired packet(s) removed" in text
    assert "Borealis Freight: 1 expired packet(s) removed" in text
    assert "1 of 3 ticks readable before the purge (two had expired), 1 after" in text
    assert "children of plan after purging: search (live), scratch (purged)" in text
    # Current facts: the superseded supplier is neither returned nor walked through; history stays readable.
    current = re.search(r"traverse_graph\('Acme Plastics'\) now: (.*)$", text, re.M).group(1)  # type: ignore[union-attr]
    assert current == "Acme Plastics -buys_from-> Golden Resin"
    assert re.search(r"entity_neighbourhood\('acme plastics'\) now: Golden Resin$", text, re.M)
    assert ("as of 30 days ago: Acme Plastics -buys_from-> Pacific Polymers; "
            "Acme Plastics -buys_from-> Pacific Polymers -located_in-> Stockton") in text

    # What is stored is what the story told: 18 Acme packets written, 3 purged; 5 + 1 Borealis, 1 purged.
    assert stored_per_tenant(db.dsn()) == {demo.ACME.tenant_id: 15, demo.BOREALIS.tenant_id: 5}


def test_demo_creates_what_it_uses_and_drops_only_that(server):
    name = f"memsub_demo_{uuid.uuid4().hex[:8]}"
    before = demo_leftovers(server.dsn("postgres"))
    try:
        first = run_demo(server.dsn("postgres"), name, recreate=True, keep=True)
        assert f"(created by this run), schema {Migrator('').migrations[-1].version_text}" in first
        # What make demo runs: MiniLM, in a database created at its dimension.
        assert "embedder  minilm (all-MiniLM-L6-v2" in first
        assert "recommendation" in search_results(first)["semantic"]
        assert stored_per_tenant(server.dsn(name)) == {demo.ACME.tenant_id: 15, demo.BOREALIS.tenant_id: 5}
        assert f"kept database {name}" in first and "cleanup: dropped role memsubdemo_app_" in first
        # A database the run did not create is never dropped: asked to create it again, the demo refuses.
        with pytest.raises(demo.DemoRefused, match="never drops what it did not create"):
            run_demo(server.dsn("postgres"), name, recreate=True)
        assert stored_per_tenant(server.dsn(name)) == {demo.ACME.tenant_id: 15, demo.BOREALIS.tenant_id: 5}
        # The default run makes its own database and roles and removes them at the end.
        second = run_demo(server.dsn("postgres"), None, recreate=True)
        for text in (first, second):
            check_search(text)
            assert "deduplicated: yes" in text
            assert "Acme Plastics: 3 expired packet(s) removed" in text
        assert "cleanup: dropped database memsub_demo_" in second
        databases, roles = demo_leftovers(server.dsn("postgres"))
        assert (sorted(set(databases) - {name}), roles) == (sorted(before[0]), before[1])
    finally:
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


@pytest.mark.slow
def test_demo_without_a_server_starts_its_own_cluster_and_stops_it(monkeypatch, tmp_path):
    from memsub import embedded

    for variable in ("MEMSUB_DSN", "DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER", "PGDATABASE",
                     "PGSERVICE"):
        monkeypatch.delenv(variable, raising=False)
    tmp_path.chmod(0o755)
    data_dir = tmp_path / "pgdata"
    monkeypatch.setenv("MEMSUB_DATA_DIR", str(data_dir))
    try:
        text = run_demo("", None, recreate=True, embedder=HashingEmbedder(384))
    finally:
        embedded.stop(data_dir)
    assert f"embedded cluster in {data_dir}, started by this run" in text
    assert f"cleanup: stopped the embedded cluster this run started in {data_dir}" in text
    assert not embedded.status(data_dir).running


def test_reuse_without_a_database_is_a_usage_error():
    from click.testing import CliRunner

    result = CliRunner().invoke(demo.cli, ["--reuse"], env={"MEMSUB_DSN": None, "DATABASE_URL": None})
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == ["memsub: --reuse needs --database (field database)"], result.stderr
