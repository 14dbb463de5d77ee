"""What every ``memsub`` command shares: the connection and tenant options gathered into one context object,
the table printer, JSON output, and the error boundary (:class:`memsub.exit_codes.GuardedGroup`).

Command modules import from here, never from :mod:`memsub.cli`, which imports them to assemble the program.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_args
from uuid import UUID

import click
from pydantic import BaseModel

from memsub._calls import ContextRole
from memsub.connection import (
    DEFAULT_PREPARE_THRESHOLD,
    check_prepare_threshold,
    connect,
    masked,
    probe,
    refuse_on_standby,
    resolve,
)
from memsub.errors import ConfigurationError

if TYPE_CHECKING:
    from memsub.client import Substrate, TenantSession

F = TypeVar("F", bound=Callable[..., Any])

dsn_option = click.option("--dsn", envvar=None, default=None,
                          help="libpq connection string (default: MEMSUB_DSN, DATABASE_URL, libpq's PG* "
                               "environment, then the embedded cluster). Other users of the machine see it in "
                               "ps: keep passwords in MEMSUB_DSN, PGPASSWORD or ~/.pgpass.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print data as JSON on stdout.")
json_lines_option = click.option("--json", "as_json", is_flag=True, help="Print JSON Lines, one row per line.")


def server_dsn(dsn: str | None) -> str:
    """The resolved connection string, after saying on stderr which server it points at."""
    return resolve(dsn, announce=True).dsn


def reachable_dsn(dsn: str | None) -> str:
    """The resolved connection string of a server that answered: a precise one-line error (refused, password,
    no such database) comes from here, before any pool starts."""
    conninfo = server_dsn(dsn)
    probe(conninfo)
    return conninfo


def primary_dsn(dsn: str | None, command: str) -> str:
    """:func:`reachable_dsn` for a command that changes the database: a server that is a hot standby is refused
    here (HotStandbyError, exit 6, naming ``command``), before anything is attempted, instead of with
    PostgreSQL's read-only message for its first write."""
    conninfo = server_dsn(dsn)
    with connect(conninfo) as conn:
        refuse_on_standby(conn, command)
    return conninfo


@dataclass(frozen=True, repr=False)
class Target:
    """The shared context of a command that acts for a tenant: the server and the tenant context it sets. Its
    repr masks the connection string's password."""

    dsn: str | None
    tenant_id: str
    org_id: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    roles: tuple[str, ...] = ()

    def __repr__(self) -> str:
        shown = None if self.dsn is None else masked(self.dsn)
        return (f"Target(dsn={shown!r}, tenant_id={self.tenant_id!r}, org_id={self.org_id!r}, "
                f"user_id={self.user_id!r}, session_id={self.session_id!r}, roles={self.roles!r})")

    def context(self) -> dict[str, Any]:
        return {"org_id": self.org_id, "user_id": self.user_id, "session_id": self.session_id,
                "roles": self.roles}

    @contextmanager
    def substrate(self, writes: str | None = None) -> Iterator[Substrate]:
        """A one-connection Substrate on the reachable server, closed at the end. ``writes``: the command, which
        changes the database, so a hot standby is refused up front (:func:`primary_dsn`)."""
        from memsub.client import Substrate

        conninfo = reachable_dsn(self.dsn) if writes is None else primary_dsn(self.dsn, writes)
        substrate = Substrate(conninfo, max_size=1, timeout=10.0)
        try:
            yield substrate
        finally:
            substrate.close()

    @contextmanager
    def session(self, writes: str | None = None) -> Iterator[TenantSession]:
        """One TenantSession (one transaction) for this tenant context (``writes``: as for :meth:`substrate`)."""
        with self.substrate(writes) as substrate, substrate.tenant(
                self.tenant_id, **self.context()) as memory:
            yield memory


_TENANT_PARAMETERS = ("dsn", "tenant_id", "org_id", "user_id", "session_id", "roles")


if TYPE_CHECKING:
    _TextParamType = click.ParamType[str]
else:  # the older click releases pyproject.toml allows take no type argument here at run time
    _TextParamType = click.ParamType


class UuidText(_TextParamType):
    """A UUID option, checked as the command line is read (before any server is reached) and passed on as the
    text of the UUID; a value that is not one is refused naming the option."""

    name = "uuid"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return str(UUID(str(value)))
        except ValueError:
            self.fail(f"{value!r} is not a UUID", param, ctx)


UUID_TEXT = UuidText()


if TYPE_CHECKING:
    _ThresholdParamType = click.ParamType[int | None]
else:
    _ThresholdParamType = click.ParamType


class PrepareThreshold(_ThresholdParamType):
    """``--prepare-threshold``: a whole number of runs (memsub.connection.check_prepare_threshold judges it) or
    ``none``, checked as the command line is read, before any server is reached."""

    name = "integer|none"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | None:
        if value is None or type(value) is int:
            return value
        text = str(value).strip()
        if text.lower() == "none":
            return None
        try:
            threshold = int(text, 10)
            check_prepare_threshold(threshold)
        except (ValueError, ConfigurationError):
            self.fail(f"must be an integer 0 or more, or none (never prepare), not {value!r} (given as the option "
                      f"or as MEMSUB_PREPARE_THRESHOLD)", param, ctx)
        return threshold


prepare_threshold_option = click.option(
    "--prepare-threshold", envvar="MEMSUB_PREPARE_THRESHOLD", type=PrepareThreshold(),
    default=DEFAULT_PREPARE_THRESHOLD, show_default=True,
    help="Runs of one statement on a database connection after which it is prepared there (0: at once); none "
         "prepares nothing, as a transaction-mode connection pooler needs (or MEMSUB_PREPARE_THRESHOLD).")


def tenant_options(function: F) -> F:
    """Add --dsn, --tenant, --org, --user, --session and --role; the command receives them as ``target``."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in _TENANT_PARAMETERS}
        return function(*args, target=Target(**values), **kwargs)

    command: Any = wrapper
    for option in reversed([
        dsn_option,
        click.option("--tenant", "tenant_id", envvar="MEMSUB_TENANT", required=True, type=UUID_TEXT,
                     help="Tenant UUID (or MEMSUB_TENANT)."),
        click.option("--org", "org_id", envvar="MEMSUB_ORG", default=None, type=UUID_TEXT,
                     help="Organization UUID (or MEMSUB_ORG)."),
        click.option("--user", "user_id", envvar="MEMSUB_USER", default=None, type=UUID_TEXT,
                     help="User UUID (or MEMSUB_USER)."),
        click.option("--session", "session_id", envvar="MEMSUB_SESSION", default=None,
                     help="Session identifier (or MEMSUB_SESSION)."),
        context_role_option("Context role (needs membership in the matching memsub role)."),
    ]):
        command = option(command)
    return command  # type: ignore[no-any-return]


def context_role_option(help_text: str) -> Callable[[F], F]:
    """``--role``, repeatable, one of the context roles of the database (memsub.context_roles())."""
    return click.option("--role", "roles", multiple=True, type=click.Choice(list(get_args(ContextRole))),
                        help=help_text)


def _json_default(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def emit_json(payload: Any) -> None:
    """One JSON document on one line of stdout (dates in ISO 8601)."""
    click.echo(json.dumps(payload, default=_json_default))


def emit_json_lines(rows: Sequence[BaseModel | dict[str, Any]]) -> None:
    for row in rows:
        if isinstance(row, BaseModel):
            click.echo(row.model_dump_json())
        else:
            emit_json(row)


def cell(value: Any) -> str:
    """A value as table text: lists joined by commas, times to the second, None empty."""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if hasattr(value, "isoformat"):
        return str(value.isoformat(timespec="seconds"))
    return "" if value is None else str(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """The one table layout of the CLI: a header line, a rule, then one line per row, columns padded."""
    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in text]) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for row_text in text:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row_text, widths, strict=True)).rstrip())


def print_rows(rows: Sequence[BaseModel], columns: Sequence[str], as_json: bool) -> None:
    """Typed rows as JSON Lines, or as a table of the named attributes."""
    if as_json:
        emit_json_lines(rows)
        return
    print_table(columns, [[getattr(row, c) for c in columns] for row in rows])
