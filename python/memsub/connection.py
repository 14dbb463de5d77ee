"""Which server a command talks to, and one-line errors when it cannot.

Resolution, first match wins:

1. ``--dsn``;
2. ``MEMSUB_DSN``;
3. ``DATABASE_URL``;
4. libpq's own environment: any of ``PGHOST``, ``PGHOSTADDR``, ``PGPORT``, ``PGUSER``, ``PGDATABASE``,
   ``PGSERVICE`` set means "the server libpq would pick", exactly as ``psql`` would (``PGPASSWORD``,
   ``PGPASSFILE``, ``PGSSLMODE`` and the service file apply as libpq applies them);
5. the embedded cluster (started on first use).

Every connection string gets ``connect_timeout`` (default 5 seconds, ``PGCONNECT_TIMEOUT`` or the string's own
value wins), so an unreachable server fails in seconds rather than hanging.
"""

from __future__ import annotations

import getpass
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import RowFactory, dict_row, tuple_row

from memsub.errors import ConfigurationError, ConnectionFailed, HotStandbyError, MemsubError, PrivilegeError

LIBPQ_SERVER_VARIABLES = ("PGSERVICE", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER")
DEFAULT_CONNECT_TIMEOUT = 5


@dataclass(frozen=True, repr=False)
class ResolvedDsn:
    dsn: str
    source: str  # option | MEMSUB_DSN | DATABASE_URL | libpq environment (...) | embedded

    def describe(self) -> str:
        return f"{describe(self.dsn)} (from {self.source})"

    def __repr__(self) -> str:
        return f"ResolvedDsn(dsn={masked(self.dsn)!r}, source={self.source!r})"


def with_timeout(dsn: str) -> str:
    """``dsn`` with a ``connect_timeout`` unless it (or ``PGCONNECT_TIMEOUT``) sets one; checks the syntax."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as error:
        raise ConfigurationError(f"malformed connection string: {_without_password(first_line(error), dsn)}",
                                 field="dsn") from None
    if any("@" in host for host in str(params.get("host") or "").split(",")):
        # libpq ends a URI's user information at its first "@": the rest of the password became the host name.
        raise ConfigurationError("malformed connection string: a host name cannot hold \"@\"; write an \"@\" "
                                 "in a user name or password as %40", field="dsn")
    if "connect_timeout" in params or os.environ.get("PGCONNECT_TIMEOUT"):
        return dsn
    return make_conninfo(dsn, connect_timeout=DEFAULT_CONNECT_TIMEOUT)


OUTPUT_FORMATS = (("DateStyle", "ISO"), ("IntervalStyle", "postgres"), ("extra_float_digits", "1"))
"""The output formats memsub reads the server's text in, whatever a DBA made the database's or login's default
(docs/operations.md, "Server and login settings"): times in ISO 8601 (psycopg reads no other DateStyle for a
timestamptz), intervals as PostgreSQL writes them by default, and every float with the digits that read back as
the same float (an extra_float_digits of 0 or less rounds them); and catalog text (column defaults, view
definitions) as a fresh installation's snapshot has it."""


def output_format_settings(local: bool) -> str:
    """The ``set_config`` calls that set :data:`OUTPUT_FORMATS` for the session, or for the transaction when
    ``local``, as select items (fixed names and values, no caller's text): for a statement of their own
    (:func:`output_formats`) or beside the first call of a transaction."""
    scope = "true" if local else "false"
    return ", ".join(f"pg_catalog.set_config('{name}', '{value}', {scope})" for name, value in OUTPUT_FORMATS)


def output_formats(local: bool) -> str:
    """The statement that sets :data:`OUTPUT_FORMATS` for the session, or for the transaction when ``local``."""
    return "select " + output_format_settings(local)


def check_pool_options(min_size: int, max_size: int, timeout: float) -> None:
    """Refuse pool sizes and a wait a pool cannot work with, naming the option (before any connection)."""
    if min_size < 0:
        raise ConfigurationError(f"min_size must be 0 or more, not {min_size}", field="min_size")
    if max_size < max(min_size, 1):
        raise ConfigurationError(f"max_size must be at least 1 and at least min_size ({min_size}), not {max_size}",
                                 field="max_size")
    if not timeout > 0:
        raise ConfigurationError(f"timeout must be more than 0 seconds, not {timeout}", field="timeout")


DEFAULT_PREPARE_THRESHOLD = 5
"""psycopg's own: a statement is prepared on a connection the sixth time it runs there."""


def check_prepare_threshold(prepare_threshold: object) -> None:
    """Refuse a ``prepare_threshold`` that is neither a whole number of runs (0 or more) nor None (before any
    connection)."""
    if prepare_threshold is None:
        return
    if type(prepare_threshold) is not int or prepare_threshold < 0:
        raise ConfigurationError(f"prepare_threshold must be an integer 0 or more, or None (never prepare), not "
                                 f"{prepare_threshold!r}", field="prepare_threshold")


def pool_arguments(dsn: str, *, min_size: int, max_size: int, timeout: float, prepare_threshold: int | None,
                   autocommit: bool = False, row_factory: RowFactory[Any] = dict_row) -> dict[str, Any]:
    """The arguments of every connection pool memsub builds (a Substrate's, sync or async, the HTTP server's, the
    framework adapters'), whose options are refused here, before any connection, when a pool cannot work with
    them: ``prepare_threshold`` on every connection, rows by column name unless ``row_factory`` says otherwise,
    autocommit mode when asked, and the connection string with its ``connect_timeout``."""
    check_pool_options(min_size, max_size, timeout)
    check_prepare_threshold(prepare_threshold)
    kwargs: dict[str, Any] = {"row_factory": row_factory, "prepare_threshold": prepare_threshold}
    if autocommit:
        kwargs["autocommit"] = True
    return {"conninfo": with_timeout(dsn), "min_size": min_size, "max_size": max_size, "timeout": timeout,
            "kwargs": kwargs}


def resolve(option: str | None = None, *, start_embedded: bool = True, announce: bool = False) -> ResolvedDsn:
    """The DSN to use and where it came from; starts the embedded cluster only as the last resort.

    ``announce`` prints ``memsub: server ...`` on stderr, so the operator always sees which server is used."""
    resolved = _resolve(option, start_embedded)
    resolved = ResolvedDsn(with_timeout(resolved.dsn), resolved.source)
    if announce:
        print(f"memsub: server {resolved.describe()}", file=sys.stderr)
    return resolved


def _resolve(option: str | None, start_embedded: bool) -> ResolvedDsn:
    from memsub import embedded

    if option:
        return ResolvedDsn(option, "--dsn")
    for variable in ("MEMSUB_DSN", "DATABASE_URL"):
        value = os.environ.get(variable)
        if value:
            return ResolvedDsn(value, variable)
    libpq = [name for name in LIBPQ_SERVER_VARIABLES if os.environ.get(name)]
    if libpq:
        return ResolvedDsn("", "libpq environment: " + ", ".join(libpq))
    current = embedded.status()
    if current.running and current.url:
        return ResolvedDsn(current.url, f"embedded cluster in {current.data_dir}")
    if not start_embedded:
        raise ConnectionFailed("no server configured (--dsn, MEMSUB_DSN, DATABASE_URL, PGHOST/PGSERVICE/...) "
                               "and the embedded cluster is stopped")
    print(f"memsub: starting the embedded PostgreSQL cluster in {current.data_dir} "
          "(stop it with: memsub db stop)", file=sys.stderr)
    return ResolvedDsn(embedded.start(), f"embedded cluster in {current.data_dir}")


def describe(dsn: str) -> str:
    """``user@host:port/dbname`` of a connection string as libpq would complete it; never the password."""
    try:
        params = conninfo_to_dict(dsn) if dsn else {}
    except psycopg.ProgrammingError:
        return "(malformed connection string)"

    def pick(key: str, variable: str, default: str) -> str:
        return str(params.get(key) or os.environ.get(variable) or default)

    if params.get("service") or (not params.get("host") and os.environ.get("PGSERVICE")):
        service = str(params.get("service") or os.environ.get("PGSERVICE"))
        return f"service {service}"
    host = pick("host", "PGHOST", "") or pick("hostaddr", "PGHOSTADDR", "local socket")
    port = pick("port", "PGPORT", "5432")
    user = pick("user", "PGUSER", _os_user())
    dbname = pick("dbname", "PGDATABASE", user)
    return f"{user}@{host}:{port}/{dbname}"


def _os_user() -> str:
    """The operating system user, libpq's default user name (and so database name)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "?"


def first_line(error: BaseException) -> str:
    """An error's message as one line: its first, without libpq's connection prefixes (the type's name when
    empty)."""
    text = str(error).strip()
    for prefix in ("connection failed: ", "connection is bad: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text.splitlines()[0].strip() if text else type(error).__name__


_URI_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^@/?#:]*:([^/?#]*)@")
_QUERY_PASSWORD = re.compile(r"[?&]password=([^&#]*)", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)


def masked(dsn: str) -> str:
    """``dsn`` with its password as ``****``: for a repr or a message that shows a connection string."""
    return _without_password(dsn, dsn)


def _without_password(message: str, dsn: str) -> str:
    """``message`` with whatever ``dsn`` (well formed or not) gives as a password masked: libpq quotes the
    offending token, or a whole URI, when it cannot parse a connection string."""
    found = [m.group(1) for pattern in (_URI_PASSWORD, _QUERY_PASSWORD) for m in pattern.finditer(dsn)]
    found += [m.group(1).strip("'") for m in _KEYWORD_PASSWORD.finditer(dsn)]
    for secret in sorted({s for s in found if s}, key=len, reverse=True):
        message = message.replace(secret, "****")
    return message


def translate(error: psycopg.Error, dsn: str = "") -> MemsubError:
    """A psycopg error met while connecting or running administrative SQL, as a memsub error with one line."""
    from memsub.errors import from_database_error

    if isinstance(error, psycopg.ProgrammingError) and error.sqlstate is None:
        return ConfigurationError(f"malformed connection string: {_without_password(first_line(error), dsn)}",
                                  field="dsn")
    if error.sqlstate == "42501":
        return PrivilegeError(f"insufficient privilege: {error.diag.message_primary or first_line(error)}",
                              sqlstate="42501")
    if isinstance(error, psycopg.OperationalError) and error.sqlstate in (None, "28P01", "28000", "3D000",
                                                                           "08001", "08006", "57P03"):
        line = _without_password(first_line(error), dsn)
        lowered = line.lower()
        if "invalid" in lowered and ("option" in lowered or "value" in lowered or "sslmode" in lowered):
            return ConfigurationError(f"bad connection option: {line}")
        return ConnectionFailed(f"cannot connect: {line}", sqlstate=error.sqlstate)
    return from_database_error(error)


def connect(dsn: str, **kwargs: object) -> psycopg.Connection[object]:
    """``psycopg.connect`` whose failures are memsub errors with one line naming the problem."""
    try:
        return psycopg.connect(dsn, **kwargs)  # type: ignore[arg-type]
    except psycopg.Error as error:
        translated = translate(error, dsn)
        # A malformed string's own error quotes it, password and all: it is not chained.
        raise translated from (None if isinstance(translated, ConfigurationError) else error)


def probe(dsn: str) -> None:
    """Connect once and disconnect: raises ConnectionFailed / ConfigurationError / PrivilegeError."""
    with connect(dsn):
        pass


def refuse_on_standby(conn: psycopg.Connection[Any], command: str) -> None:
    """HotStandbyError when the server of ``conn`` is a hot standby (``pg_is_in_recovery()``): ``command``
    changes the database, which only the primary can do. Checked before anything is attempted, so the caller
    is told why in one line instead of PostgreSQL's message for the first statement that writes or locks."""
    row = conn.cursor(row_factory=tuple_row).execute("select pg_catalog.pg_is_in_recovery()").fetchone()
    if row and row[0]:
        raise HotStandbyError(
            f"the server is a hot standby (pg_is_in_recovery() is true): {command} changes the database and runs "
            "on the primary; nothing was attempted", sqlstate="25006")


# The timeouts that end a statement or a transaction however long it legitimately runs (transaction_timeout:
# PostgreSQL 17+). `memsub login-timeouts` sets statement_timeout on logins for the applications' statements; a
# maintenance run is one long statement by nature (CALL memsub.refresh_memory_views() refreshes every view in one),
# and a timeout that fires partway stops it there. Its lock waits stay bounded by lock_timeout.
RUN_TIMEOUTS = ("statement_timeout", "transaction_timeout", "idle_in_transaction_session_timeout")


def lift_run_timeouts(conn: psycopg.Connection[Any]) -> list[str]:
    """Turn off, for this session, the statement, transaction and idle-in-transaction timeouts that its connection
    string did not set (those of the login, the database or the server's configuration: a guard against
    applications, which would stop an operator's long task partway); one given on the connection (PGOPTIONS,
    ``options`` in the DSN) stays. Returns the names turned off, for ``restore_run_timeouts``."""
    lifted = [name for (name,) in conn.cursor(row_factory=tuple_row).execute(
        "select name from pg_catalog.pg_settings where name = any(%s) and source <> 'client' and setting <> '0'",
        [list(RUN_TIMEOUTS)]).fetchall()]
    for name in lifted:
        conn.execute("select pg_catalog.set_config(%s, '0', false)", [name])
    return lifted


def restore_run_timeouts(conn: psycopg.Connection[Any], lifted: list[str]) -> None:
    """Give the session back the timeouts ``lift_run_timeouts`` turned off (their values at its start)."""
    for name in lifted:
        conn.execute(sql.SQL("reset {}").format(sql.Identifier(name)))
