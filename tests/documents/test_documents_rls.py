"""Row-level security of document chunks: a context sees exactly the chunks its policies allow, and each policy
is needed (dropping it shows rows it must hide). Chunk vectors in memory_embeddings follow the same rules."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import psycopg
import pytest

from memsub.errors import ContextError, IntegrityError

from doc_helpers import WordEmbedder, tenant_session
from helpers import TENANT_A, TENANT_B, set_context
from session_helpers import ground_truth, rows

ORG_1 = uuid.UUID("00000000-0000-0000-0001-000000000001")
ORG_2 = uuid.UUID("00000000-0000-0000-0001-000000000002")
USER_1 = uuid.UUID("00000000-0000-0000-0002-000000000001")


def _ingest_everywhere(db: Any) -> None:
    embedder = WordEmbedder()
    for tenant, org, tag in [(TENANT_A, ORG_1, "a1"), (TENANT_A, ORG_2, "a2"), (TENANT_A, None, "a0"),
                             (TENANT_B, None, "b")]:
        with tenant_session(db.dsn("app"), tenant, org=org, user=USER_1) as session:
            session.documents.ingest(f"{tag}.md", f"document {tag}\n\nsecond part of {tag}\n",
                                     file_hash=hashlib.sha256(tag.encode()).hexdigest(),
                                     mime="md", embedder=embedder, max_chars=16)


def _problems(db: Any, table: str) -> list[str]:
    everything = ground_truth(db, f"select id, tenant_id, org_id from memsub.{table}")  # noqa: S608
    expected = {r["id"] for r in everything if r["tenant_id"] == TENANT_A and r["org_id"] in (None, ORG_1)}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        visible = {r["id"] for r in rows(conn, f"select id from memsub.{table}")}  # noqa: S608
    problems = []
    if not expected or len(expected) == len(everything):
        problems.append("the fixture gives nothing to see or nothing to hide")
    if visible - expected:
        problems.append(f"{len(visible - expected)} row(s) visible that the policies forbid")
    if expected - visible:
        problems.append(f"{len(expected - visible)} row(s) of the context hidden")
    return problems


@pytest.mark.parametrize("policy", ["tenant_isolation", "org_isolation"])
def test_chunks_are_isolated_by_tenant_and_organization_and_each_policy_is_needed(db, policy):
    _ingest_everywhere(db)
    assert _problems(db, "document_chunks") == []
    with db.connect() as conn:
        conn.execute(f"drop policy {policy} on memsub.document_chunks")
        if policy == "tenant_isolation":  # without it nothing is visible; a permissive stand-in shows the leak
            conn.execute("create policy open_door on memsub.document_chunks using (true)")
    assert _problems(db, "document_chunks") != [], f"dropping {policy} went unnoticed"
    with db.connect() as conn:
        conn.execute("drop policy if exists open_door on memsub.document_chunks")
        conn.execute("call memsub._install_row_security('memsub.document_chunks', array['org'])")
    assert _problems(db, "document_chunks") == []


def test_chunk_vectors_and_versions_follow_the_document_organization(db):
    _ingest_everywhere(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_2, USER_1)
        paths = {r["file_path"] for r in rows(conn, "select file_path from memsub.document_index")}
        set_context(conn, TENANT_A, ORG_2, USER_1)
        vector_paths = {r["path"] for r in rows(conn, "select distinct metadata ->> 'file_path' as path "
                                                      "from memsub.memory_embeddings")}
        conn.commit()  # a transaction acts for one tenant
        set_context(conn, TENANT_B)
        other_tenant = rows(conn, "select count(*) as n from memsub.document_chunks")
    assert paths == {"a2.md", "a0.md"} and vector_paths == {"a2.md", "a0.md"}
    tenant_b = ground_truth(db, "select count(*) as n from memsub.document_chunks where tenant_id = %s", [TENANT_B])
    assert other_tenant == tenant_b and tenant_b[0]["n"] > 0


def test_a_path_held_by_an_invisible_organization_is_refused_by_name_and_nothing_is_written(db):
    _ingest_everywhere(db)
    tables = ("document_index", "document_chunks", "packet_store", "memory_embeddings")
    before = {t: ground_truth(db, f"select count(*) as n from memsub.{t}")[0]["n"] for t in tables}  # noqa: S608
    with pytest.raises(IntegrityError) as raised, \
            tenant_session(db.dsn("app"), TENANT_A, org=ORG_1, user=USER_1) as session:
        session.documents.ingest("a2.md", "organization one's own text for the same path\n",
                                 file_hash=hashlib.sha256(b"other").hexdigest(), mime="md", embedder=WordEmbedder())
    assert raised.value.sqlstate == "23505" and raised.value.field == "file_path"
    assert "a2.md" in str(raised.value)
    after = {t: ground_truth(db, f"select count(*) as n from memsub.{t}")[0]["n"] for t in tables}  # noqa: S608
    assert after == before
    latest = ground_truth(db, "select org_id, version from memsub.document_index "
                              "where file_path = 'a2.md' and is_latest")
    assert [(r["org_id"], r["version"]) for r in latest] == [(ORG_2, 1)]


def test_a_path_written_from_another_context_is_changed_there_only(db):
    """A tenant-wide document is visible to every organization; one organization superseding it moved the path to
    itself and hid it from the others (and from the tenant-wide writer, who could no longer update it). A path is
    now changed only from the context that wrote it: 42501 naming file_path, nothing written."""
    tables = ("document_index", "document_chunks", "packet_store", "memory_embeddings")
    with tenant_session(db.dsn("app"), TENANT_A) as session:
        session.documents.ingest("handbook.md", "tenant wide handbook\n", file_hash=hashlib.sha256(b"1").hexdigest(),
                                 mime="md", embedder=WordEmbedder())
    before = {t: ground_truth(db, f"select * from memsub.{t} order by 1, 2") for t in tables}  # noqa: S608
    with pytest.raises(ContextError) as raised, tenant_session(db.dsn("app"), TENANT_A, org=ORG_1) as session:
        session.documents.ingest("handbook.md", "organization one rewrote it\n",
                                 file_hash=hashlib.sha256(b"2").hexdigest(), mime="md", embedder=WordEmbedder())
    assert raised.value.sqlstate == "42501" and raised.value.field == "file_path"
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1)
        with pytest.raises(psycopg.Error) as put:
            conn.execute("select * from memsub.document_index_put('handbook.md', null, '{\"k\": 1}')")
    assert put.value.sqlstate == "42501" and put.value.diag.column_name == "file_path"
    assert {t: ground_truth(db, f"select * from memsub.{t} order by 1, 2") for t in tables} == before  # noqa: S608
    with tenant_session(db.dsn("app"), TENANT_A, org=ORG_2) as session:
        assert [(d.version, d.is_latest) for d in session.documents.versions("handbook.md")] == [(1, True)]
    with tenant_session(db.dsn("app"), TENANT_A) as session:  # its own context still writes it
        again = session.documents.ingest("handbook.md", "tenant wide handbook, second edition\n",
                                         file_hash=hashlib.sha256(b"3").hexdigest(), mime="md")
    assert (again.status, again.version) == ("new_version", 2)


def test_an_index_entry_of_an_invisible_organizations_path_is_refused_by_name(db):
    """document_index_put on a path whose latest version another organization holds failed with row-level
    security's raw message; it is refused as document_ingest refuses it, and nothing changes."""
    _ingest_everywhere(db)
    before = ground_truth(db, "select * from memsub.document_index order by id")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("select * from memsub.document_index_put('a2.md', null, '{\"k\": 1}')")
    assert raised.value.sqlstate == "23505" and raised.value.diag.column_name == "file_path"
    assert "row-level security" not in str(raised.value)
    assert ground_truth(db, "select * from memsub.document_index order by id") == before


def test_neighbour_links_name_only_chunks_their_readers_may_see(db):
    """An organization's chunk close to a tenant-wide chunk was written into that chunk's neighbours, where every
    other organization read its id. Links now join chunks of one organization (or from an organization's chunk to
    a tenant-wide one); the tenant-wide chunk does not name the organization's."""
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app"), TENANT_A) as session:
        shared = session.documents.ingest("shared.md", "pgvector hnsw index cosine distance\n",
                                          file_hash=hashlib.sha256(b"s").hexdigest(), mime="md", embedder=embedder)
    with tenant_session(db.dsn("app"), TENANT_A, org=ORG_1) as session:
        secret = session.documents.ingest("secret.md", "hnsw index with cosine distance in pgvector\n",
                                          file_hash=hashlib.sha256(b"x").hexdigest(), mime="md", embedder=embedder)
        secret_chunks = session.documents.chunks_of(secret.document_id)
        shared_ids = {c.id for c in session.documents.chunks_of(shared.document_id)}
    assert shared_ids & {n for c in secret_chunks for n in c.neighbors}  # it still finds the tenant-wide chunk
    with tenant_session(db.dsn("app"), TENANT_A, org=ORG_2) as session:
        seen = {n for c in session.documents.chunks_of(shared.document_id) for n in c.neighbors}
    assert seen & {c.id for c in secret_chunks} == set()
