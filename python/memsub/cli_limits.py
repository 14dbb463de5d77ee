"""``memsub login-timeouts``: give application login roles the statement, lock and idle timeouts of memsub.limits.

PostgreSQL applies ``ALTER ROLE ... SET`` settings of the role that logs in only: settings on a group role such as
``memsub_app`` are not inherited by its member logins, so each login gets its own. A login can still ``SET`` a
longer timeout in its session; the timeouts guard against runaway statements and forgotten transactions, while
the size limits of memsub.limits (enforced inside the functions) are what binds a hostile login.
"""

from __future__ import annotations

import click
import psycopg
from psycopg import sql

from memsub._calls import checked_text
from memsub.cli_common import dsn_option, emit_json, primary_dsn
from memsub.connection import connect
from memsub.errors import InvalidInput

# GUC name -> the memsub.limits entry that holds its value in milliseconds.
TIMEOUTS: dict[str, str] = {
    "statement_timeout": "statement_timeout_ms",
    "lock_timeout": "lock_timeout_ms",
    "idle_in_transaction_session_timeout": "idle_in_transaction_timeout_ms",
}


def check_login(conn: psycopg.Connection[tuple[object, ...]], login: str) -> None:
    """Raise ValueError unless ``login`` names a role that can log in."""
    checked_text(login, "login")
    row = conn.execute("select rolcanlogin from pg_catalog.pg_roles where rolname = %s", [login]).fetchone()
    if row is None:
        raise ValueError(f"role {login!r} does not exist")
    if not row[0]:
        raise ValueError(f"role {login!r} cannot log in: role settings apply only to the login that connects, "
                         "so set them on each login role, not on a group role")


def apply_login_timeouts(conn: psycopg.Connection[tuple[object, ...]], login: str) -> dict[str, int]:
    """Set the timeouts of memsub.limits on one login role (ALTER ROLE ... SET); return what was set."""
    check_login(conn, login)
    applied: dict[str, int] = {}
    for setting, limit in TIMEOUTS.items():
        value_row = conn.execute("select memsub.limit_value(%s)", [limit]).fetchone()
        assert value_row is not None
        value = int(str(value_row[0]))
        conn.execute(sql.SQL("alter role {} set {} = {}").format(
            sql.Identifier(login), sql.Identifier(setting), sql.Literal(f"{value}ms")))
        applied[setting] = value
    return applied


@click.command("login-timeouts")
@click.argument("logins", nargs=-1, required=True)
@dsn_option
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one login with its timeouts (ms) per line.")
def login_timeouts_command(logins: tuple[str, ...], dsn: str | None, as_json: bool) -> None:
    """Set statement_timeout, lock_timeout and idle_in_transaction_session_timeout on each LOGIN role to the
    values of memsub.limits (statement_timeout_ms, lock_timeout_ms, idle_in_transaction_timeout_ms). Run as a
    role that may ALTER those roles (a superuser or one with CREATEROLE). New sessions pick them up."""
    # Every login is checked before any is changed, and all are set in one transaction: a refused login leaves
    # every role as it was, and what is printed is what was committed.
    with connect(primary_dsn(dsn, "memsub login-timeouts")) as conn:
        for login in logins:
            try:
                check_login(conn, login)  # type: ignore[arg-type]
            except ValueError as error:
                raise InvalidInput(str(error), field="login") from error
        settings = {login: apply_login_timeouts(conn, login) for login in logins}  # type: ignore[arg-type]
        conn.commit()
        for login, applied in settings.items():
            if as_json:
                emit_json({"login": login, **applied})
            else:
                click.echo(f"{login}: " + ", ".join(f"{name} = {ms}ms" for name, ms in applied.items()))
