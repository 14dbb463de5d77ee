"""``memsub tenant erase``: a platform admin login erases one tenant (memsub.erase_tenant) and the views are
refreshed; without --yes, or as a login that is no platform admin, nothing is deleted and the refusal is one line."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from memsub import exit_codes
from memsub.cli import main as cli

from helpers import TENANT_A, TENANT_B, set_context, write


def _packets(db: Any) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute("select tenant_id::text, count(*) from memsub.packet_store group by 1").fetchall()
    return {str(t): int(n) for t, n in rows}


def _one_packet_each(db: Any) -> None:
    with db.connect("app") as conn:
        for tenant in (TENANT_A, TENANT_B):
            set_context(conn, tenant)
            write(conn, {"packet_type": "note", "payload": "keep me"})
            conn.commit()


def _lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("memsub: server ")]


def test_a_platform_admin_erases_one_tenant(db):
    _one_packet_each(db)
    result = CliRunner().invoke(cli, ["tenant", "erase", str(TENANT_A), "--yes", "--json",
                                      "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == 0, result.output
    rows = {row["table_name"]: row["deleted"] for row in map(json.loads, result.stdout.splitlines())}
    assert rows["packet_store"] == 1 and rows["memory_embeddings"] == 0 and "login_bindings" in rows
    assert _packets(db) == {str(TENANT_B): 1}
    assert f"erased tenant {TENANT_A}" in result.stderr

    table = CliRunner().invoke(cli, ["tenant", "erase", str(TENANT_A), "--yes", "--no-refresh-views",
                                     "--dsn", db.dsn("platform_admin")])
    assert table.exit_code == 0, table.output
    assert table.stdout.splitlines()[0].split() == ["table_name", "deleted"]
    assert "until memsub refresh-views runs" in table.stderr


def test_without_yes_nothing_is_erased(db):
    _one_packet_each(db)
    result = CliRunner().invoke(cli, ["tenant", "erase", str(TENANT_A), "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert _lines(result.stderr) == [f"memsub: memsub tenant erase deletes every row of tenant {TENANT_A}: pass "
                                     "--yes to confirm (field yes)"]
    assert _packets(db) == {str(TENANT_A): 1, str(TENANT_B): 1}


def test_a_login_that_is_no_platform_admin_gets_exit_4(db):
    _one_packet_each(db)
    for kind in ("app", "tenant_admin", "analyst"):
        result = CliRunner().invoke(cli, ["tenant", "erase", str(TENANT_A), "--yes", "--dsn", db.dsn(kind)])
        assert result.exit_code == exit_codes.NO_PRIVILEGE, (kind, result.output)
        assert len(_lines(result.stderr)) == 1 and "Traceback" not in result.output
    assert _packets(db) == {str(TENANT_A): 1, str(TENANT_B): 1}


def test_a_tenant_id_that_is_not_a_uuid_is_bad_input(db):
    result = CliRunner().invoke(cli, ["tenant", "erase", "acme", "--yes", "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert "'acme' is not a UUID" in result.stderr
