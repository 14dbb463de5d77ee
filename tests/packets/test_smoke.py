from helpers import TENANT_A, set_context, superuser_count, write


def test_app_role_writes_and_reads_its_packet(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        result = write(conn, {"packet_type": "event", "payload": {"text": "hello"}})
        assert result["deduplicated"] is False
        row = conn.execute("select packet_type from memsub.get_packet(%s)", [result["packet_id"]]).fetchone()
        assert row == ("event",)
    assert superuser_count(db) == 1
