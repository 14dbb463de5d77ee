"""An edge drawn to a Document or Memory version while another transaction supersedes that version."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from doc_helpers import tenant_session
from helpers import TENANT_A, set_context, started_call
from session_helpers import ALICE, ground_truth

ORG_X = uuid.UUID("0000000a-0000-0000-0000-00000000000a")
NOTES = f"user:{ALICE}:notes"
TEXT_V2 = "Alice is a staff engineer."


def _versions(db: Any) -> dict[str, tuple[str, Any]]:
    """A document's first version (tenant-wide) and a memory entry's first version, each about to be superseded;
    how to supersede each, and the context that draws an edge to it (an organization's, for the document: it can
    read the tenant-wide version but not change it)."""
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        doc = session.documents.ingest("bio.md", "Alice is a database engineer.", file_hash="a" * 64, mime="md")
        note = session.memory.write(NOTES, "alice", {"likes": "postgres"})
    return {"Document": (str(doc.document_id), ORG_X), "Memory": (str(note.id), None)}


def _supersede(conn: psycopg.Connection[Any], node_type: str) -> None:
    if node_type == "Document":
        conn.execute("select * from memsub.document_ingest('bio.md', %s, 'md', %s, %s::jsonb)",
                     ["b" * 64, TEXT_V2, f'[{{"start_char": 0, "end_char": {len(TEXT_V2)}}}]'])
    else:
        conn.execute("select memsub.memory_write(%s, 'alice', '{\"likes\": \"postgres 18\"}', 1)", [NOTES])


def _draw(conn: psycopg.Connection[Any], node: str, node_type: str) -> None:
    conn.execute("select memsub.temporal_edge_add(%s, 'about', 'Alice', p_source_type => %s)", [node, node_type])


def _open_edges(db: Any, node: str) -> int:
    return int(ground_truth(db, "select count(*) as n from memsub.entity_relationships "
                                "where source_key = %s and upper_inf(valid_period)", [node])[0]["n"])


@pytest.mark.parametrize("node_type", ["Document", "Memory"])
def test_an_edge_drawn_while_its_version_is_being_superseded_waits_and_is_refused(db, node_type):
    """Transaction A supersedes a version and has not committed; B draws an edge to that version. B did not see
    the supersession and committed an open edge to a superseded version, read as current. B now waits for A and
    is refused (55000 naming the end) as after A's commit."""
    node, org = _versions(db)[node_type]
    with db.connect("app") as superseder, db.connect("app") as drawer:
        set_context(superseder, TENANT_A, user=ALICE)
        _supersede(superseder, node_type)
        set_context(drawer, TENANT_A, org=org, user=ALICE)
        call = started_call(db, drawer, lambda: _draw(drawer, node, node_type))
        superseder.commit()
        call.join()
        drawer.rollback() if call.error else drawer.commit()
    assert isinstance(call.error, psycopg.Error), call.result
    assert (call.error.sqlstate, call.error.diag.column_name) == ("55000", "source_entity"), call.error
    assert _open_edges(db, node) == 0


@pytest.mark.parametrize("node_type", ["Document", "Memory"])
def test_a_version_superseded_while_an_edge_to_it_is_being_drawn_closes_that_edge(db, node_type):
    """Transaction B draws an edge to a version and has not committed; A supersedes the version. A closed the
    edges it could see, not B's, which then stayed open. A now waits for B and closes B's edge too."""
    node, org = _versions(db)[node_type]
    with db.connect("app") as superseder, db.connect("app") as drawer:
        set_context(drawer, TENANT_A, org=org, user=ALICE)
        _draw(drawer, node, node_type)
        set_context(superseder, TENANT_A, user=ALICE)
        call = started_call(db, superseder, lambda: _supersede(superseder, node_type))
        drawer.commit()
        call.join()
        assert call.error is None, call.error
        superseder.commit()
    assert _open_edges(db, node) == 0


def test_a_version_touched_after_the_snapshot_is_superseded_and_drawn_to_under_repeatable_read(db):
    """The locks that make edge writers and superseders wait for each other are taken under READ COMMITTED only,
    where the statements after a wait read what the other committed. Under REPEATABLE READ a row lock on a version
    that an access (memsub.memory_touch) changed after the snapshot would fail the call with 40001 although no
    version was written: a memory write and an edge drawn in such a transaction go through as before."""
    node, _ = _versions(db)["Memory"]
    with db.connect("app") as writer, db.connect("app") as drawer, db.connect("app") as reader:
        for conn in (writer, drawer):
            conn.execute("set transaction isolation level repeatable read")
            set_context(conn, TENANT_A, user=ALICE)
            conn.execute("select count(*) from memsub.memory_entries")  # the snapshot
        set_context(reader, TENANT_A, user=ALICE)
        reader.execute("select memsub.memory_touch(%s, 'alice')", [NOTES])
        reader.commit()
        _draw(drawer, node, "Memory")
        drawer.commit()
        _supersede(writer, "Memory")
        writer.commit()
    assert ground_truth(db, "select max(version) as v from memsub.memory_entries where key = 'alice'") == [{"v": 2}]


def _two_versions(db: Any) -> tuple[str, str]:
    """The first versions of two memory keys, each about to be superseded."""
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        first = session.memory.write(NOTES, "first", {"n": 1})
        second = session.memory.write(NOTES, "second", {"n": 1})
    return str(first.id), str(second.id)


@pytest.mark.parametrize("drawn_by", ["temporal_edge_add", "supersede_relationship"])
@pytest.mark.parametrize("superseded_first", ["source", "target"])
def test_an_edge_drawn_between_two_versions_a_transaction_supersedes_one_after_the_other_never_deadlocks(
        db, superseded_first, drawn_by):
    """Transaction A supersedes one version (and holds it), B draws an edge between it and a second version, and A
    then supersedes the second. B locked one end and waited for the other while A, holding that one, waited for
    the end B held: PostgreSQL broke the cycle with 40P01 (deadlock detected), naming nothing. B now waits
    holding neither end, A finishes, and B is refused as after A's commit (55000 naming source_entity: both ends
    are superseded by then), whichever way the edge points."""
    first, second = _two_versions(db)
    source, target = (first, second) if superseded_first == "source" else (second, first)
    with db.connect("app") as superseder, db.connect("app") as drawer:
        set_context(superseder, TENANT_A, user=ALICE)
        superseder.execute("select memsub.memory_write(%s, 'first', '{\"n\": 2}', 1)", [NOTES])
        set_context(drawer, TENANT_A, user=ALICE)
        call = started_call(db, drawer, lambda: drawer.execute(
            f"select memsub.{drawn_by}(%s, 'about', %s, p_source_type => 'Memory', p_target_type => 'Memory')",
            [source, target]))
        assert not call.done(), call.error or call.result
        superseder.execute("select memsub.memory_write(%s, 'second', '{\"n\": 2}', 1)", [NOTES])
        superseder.commit()
        call.join()
        drawer.rollback()
    assert isinstance(call.error, psycopg.Error), call.result
    assert (call.error.sqlstate, call.error.diag.column_name) == ("55000", "source_entity"), call.error
    assert _open_edges(db, first) + _open_edges(db, second) == 0


def test_a_lock_timeout_while_an_edge_waits_for_a_superseded_end_is_the_callers_error(db):
    """An edge writer that finds an end locked waits for it alone, then tries both again. The lock_timeout its
    transaction set ends that wait as any other: 55P03 (lock_not_available), not another try."""
    first, second = _two_versions(db)
    with db.connect("app") as superseder, db.connect("app") as drawer:
        set_context(superseder, TENANT_A, user=ALICE)
        superseder.execute("select memsub.memory_write(%s, 'first', '{\"n\": 2}', 1)", [NOTES])
        set_context(drawer, TENANT_A, user=ALICE)
        drawer.execute("set local lock_timeout = '100ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            drawer.execute("select memsub.temporal_edge_add(%s, 'about', %s, p_source_type => 'Memory', "
                           "p_target_type => 'Memory')", [second, first])
        drawer.rollback()
        superseder.commit()
    assert _open_edges(db, first) + _open_edges(db, second) == 0
