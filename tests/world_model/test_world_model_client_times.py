"""The world model's times are stored as UTC without a time zone (applied_at, a snapshot's created_at and
relations_expire_at); the client returns them aware, in UTC, as it returns a packet's ttl, so they compare with
any other time it returns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memsub.client import Substrate

from doc_helpers import write_expiring_edge
from helpers import TENANT_A


def test_world_model_times_are_utc_and_aware(db):
    ttl = datetime.now(UTC) + timedelta(days=1)
    with Substrate(db.dsn("app")) as substrate:
        with substrate.tenant(TENANT_A) as session:
            write_expiring_edge(session, ttl)
        with substrate.tenant(TENANT_A) as session:
            update = session.world_model.apply_update("insight", [{"entity_id": "L9", "entity_type": "system"}])
            snapshot = session.world_model.take_snapshot("with one relation")
    with db.connect() as judge:
        applied_at, = judge.execute("select applied_at from memsub.world_model_updates where update_id = %s",
                                    [update.update_id]).fetchone() or (None,)
        created_at, expire_at = judge.execute(
            "select created_at, relations_expire_at from memsub.world_model_snapshots where snapshot_id = %s",
            [snapshot.snapshot_id]).fetchone() or (None, None)
    assert update.applied_at == applied_at.replace(tzinfo=UTC)
    assert snapshot.created_at == created_at.replace(tzinfo=UTC)
    assert snapshot.relations_expire_at == expire_at.replace(tzinfo=UTC) == ttl
    assert update.applied_at <= snapshot.created_at < snapshot.relations_expire_at  # no naive-aware TypeError
