"""summaries_due: the newest summary of each scope of each tenant and organization, due once its validity ends."""

from __future__ import annotations

import uuid
from typing import Any

from helpers import set_context, write


def _summary(conn: Any, tenant: uuid.UUID, org: uuid.UUID | None, text: str, valid_for: str) -> None:
    set_context(conn, tenant, org)
    packet = write(conn, {"packet_type": "note", "payload": {"text": text}})
    conn.execute("select memsub.record_summary('agent', 'planner', %s, array[%s]::uuid[], "
                 "p_valid_until => now() + %s::interval)", [text, packet["packet_id"], valid_for])
    conn.commit()


DUE = "select summary_text from memsub.summaries_due(now() + interval '1 minute') order by 1"


def test_a_newer_summary_of_the_same_scope_elsewhere_does_not_hide_a_due_one(db):
    """The newest summary of a scope was taken over every row the caller sees: another tenant's newer summary of
    ('agent', 'planner') hid a tenant's due one from the platform admin's maintenance run, and another
    organization's newer one hid it from the tenant admin."""
    tenant_a, tenant_b, org_x, org_y = (uuid.uuid4() for _ in range(4))
    with db.connect("app") as app:
        _summary(app, tenant_a, None, "A's plan", "1 second")
        _summary(app, tenant_b, None, "B's plan", "1 hour")
        _summary(app, tenant_b, org_x, "X's plan", "1 second")
        _summary(app, tenant_b, org_y, "Y's plan", "1 hour")
        _summary(app, tenant_b, org_y, "Y's newer plan", "1 second")  # Y's older plan was regenerated
    with db.connect("platform_admin") as admin:
        set_context(admin, tenant_a, roles=["platform_admin"])
        assert admin.execute(DUE).fetchall() == [("A's plan",), ("X's plan",), ("Y's newer plan",)]
    with db.connect("tenant_admin") as admin:
        set_context(admin, tenant_b, roles=["tenant_admin"])
        assert admin.execute(DUE).fetchall() == [("X's plan",), ("Y's newer plan",)]
    with db.connect("app") as app:
        set_context(app, tenant_b, org_x)
        assert app.execute(DUE).fetchall() == [("X's plan",)]


def test_the_newest_of_summaries_written_in_one_transaction_is_the_last_written(db):
    """Summaries of one scope written in one transaction shared created_at (the transaction's start), and the tie
    went by summary_id, a random uuid: the superseded summary was reported due about half of the time."""
    tenant = uuid.uuid4()
    with db.connect("app") as app:
        set_context(app, tenant)
        packet = write(app, {"packet_type": "note", "payload": {"text": "p"}})["packet_id"]
        for scope in range(12):
            for text, valid_for in [("old", "1 second"), ("new", "1 hour")]:
                app.execute("select memsub.record_summary('agent', %s, %s, array[%s]::uuid[], "
                            "p_valid_until => now() + %s::interval)", [f"s{scope}", text, packet, valid_for])
        assert app.execute(DUE).fetchall() == []
        created = app.execute("select scope_value, array_agg(summary_text order by created_at) "
                              "from memsub.memory_summaries group by 1").fetchall()
        assert len(created) == 12 and all(texts == ["old", "new"] for _, texts in created)
