"""The client's rows of the reflection and world-model areas carry the times their tables hold: when a reflection,
a task reflection or a summary was written (a summary's created_at is what makes it the newest of its scope, the one
summaries_due reports), when a reflection was last read, and until when a snapshot's relations hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memsub.client import Substrate

from doc_helpers import write_expiring_edge
from helpers import TENANT_A


def test_rows_carry_their_times(db):
    ttl = datetime.now(UTC) + timedelta(days=1)
    with Substrate(db.dsn("app")) as substrate:
        with substrate.tenant(TENANT_A) as session:
            packet = write_expiring_edge(session, ttl)
        with substrate.tenant(TENANT_A) as session:
            reflection = session.reflection.record("lesson", "cache the schema", tags=["cache"])
            session.reflection.retrieve(tags=["cache"], record_access=True)
            task = session.reflection.record_task("task-1", "success")
            summary = session.reflection.record_summary("thread", "t-1", "one note", [packet.packet_id])
            snapshot = session.world_model.take_snapshot("with one relation")
    with db.connect() as judge:
        row = judge.execute("select created_at from memsub.reflection_store where reflection_id = %s",
                            [reflection.reflection_id]).fetchone()
        assert row is not None and reflection.created_at == row[0]
        assert reflection.last_accessed is None  # read after it was returned
        row = judge.execute("select created_at, updated_at from memsub.task_reflections where id = %s",
                            [task.id]).fetchone()
        assert row is not None and (task.created_at, task.updated_at) == row
        row = judge.execute("select created_at from memsub.memory_summaries where summary_id = %s",
                            [summary.summary_id]).fetchone()
        assert row is not None and summary.created_at == row[0]
        assert snapshot.relation_count == 1
        row = judge.execute("select relations_expire_at from memsub.world_model_snapshots where snapshot_id = %s",
                            [snapshot.snapshot_id]).fetchone()
        assert row is not None and row[0] is not None and snapshot.relations_expire_at == row[0].replace(tzinfo=UTC)
