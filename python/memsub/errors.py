"""Exceptions raised by memsub, mapped from the SQLSTATEs its stored functions document (docs/errors.md)."""

from __future__ import annotations

from typing import NamedTuple

import psycopg


class MemsubError(Exception):
    """Base class: every memsub error carries the SQLSTATE and, when known, the offending field."""

    def __init__(self, message: str, *, sqlstate: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.field = field


class InvalidInput(MemsubError):
    """Bad input: a missing, malformed or out-of-range field (SQLSTATE 22xxx, 23502)."""


class LimitExceeded(InvalidInput):
    """An argument over a resource limit of memsub.limits: too many bytes, items, rows or hops (SQLSTATE 54000)."""


class ContextError(MemsubError):
    """No tenant context, or a context role the database role does not hold (SQLSTATE 42501)."""


class IntegrityError(MemsubError):
    """A contract invariant failed: unknown parent (23503), cycle or thread consistency (23514), duplicate (23505),
    overlapping validity windows of one edge (23P01)."""


class ImmutableError(MemsubError):
    """An attempt to change or delete an immutable packet (SQLSTATE 0A000)."""


class ConflictError(MemsubError):
    """A concurrent change got there first, e.g. the world model is not at the expected version (SQLSTATE 40001
    naming the field), or a transaction at REPEATABLE READ or SERIALIZABLE lost to a concurrent one (40001 naming
    nothing), or a concurrent run of the same work held its lock past lock_timeout (SQLSTATE 55P03), or two
    transactions waited for each other and PostgreSQL aborted this one (SQLSTATE 40P01), or the statement was
    cancelled: it ran past the session's statement_timeout, often waiting for a lock, or an administrator cancelled
    it (pg_cancel_backend; SQLSTATE 57014), or a hot standby cancelled a read that held up its replay of the
    primary (40001 naming nothing, "conflict with recovery"). Retrying may succeed."""


class NotFound(MemsubError):
    """The session, task, checkpoint, live memory entry or the packet a lineage walk starts from is missing or not
    visible (SQLSTATE P0002)."""


class StateError(MemsubError):
    """The object is not in a state that allows the call, e.g. a terminated session (SQLSTATE 55000)."""


class ReadOnlyError(StateError):
    """A write (or a call that writes) sent to a server or transaction that is read-only: a hot standby, a login
    or database with default_transaction_read_only, or a transaction begun READ ONLY (SQLSTATE 25006). Nothing was
    written; send it to the primary, or through a login that may write."""


class HotStandbyError(ReadOnlyError):
    """A command that changes the database (migrate, repair, maintain, refresh-views, and the CLI's tenant erase,
    api-key create/revoke, login-timeouts, vector-index rebuild, packet write, ingest) pointed at a hot standby
    (pg_is_in_recovery() is true): refused before anything is attempted (SQLSTATE 25006). Run it on the
    primary."""


class SessionClosed(StateError):
    """A tenant session used after its block ended: its transaction is over and its connection may already serve
    another tenant, so the call is refused before anything is sent."""


class TransactionAborted(StateError):
    """A tenant block ended normally after one of its calls failed. PostgreSQL aborts a transaction at its first
    failed statement and answers its COMMIT with a rollback: nothing of the block was committed, and the block's end
    says so instead of passing for a commit."""


class MigrationError(MemsubError):
    """The database and the shipped migrations disagree (drift, newer database, bad file names)."""


class PreflightRefused(MigrationError):
    """The server lacks what installation needs (an extension, a privilege, a version); nothing was changed."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__("preflight refused, nothing was changed; missing: " + "; ".join(missing))
        self.missing = missing


class ConnectionFailed(MemsubError):
    """The server cannot be reached or refuses the login: refused, timed out, wrong password, no such database,
    or the connection pool could not hand out a connection in time."""


class ConfigurationError(InvalidInput):
    """A malformed connection string or option, found before anything was sent to the server."""


class PrivilegeError(ContextError):
    """The database role lacks a privilege the command needs (SQLSTATE 42501)."""


class LocalValidationError(InvalidInput, ValueError):
    """A value rejected by the client before it reached the database (e.g. an envelope that fails its model)."""


class Contract(NamedTuple):
    """What one documented SQLSTATE means to every surface: the Python exception, and the HTTP status,
    problem kind and title the HTTP API answers with."""

    error: type[MemsubError]
    status: int
    kind: str
    title: str


_INVALID = Contract(InvalidInput, 422, "invalid-input", "Invalid input")

# The one SQLSTATE contract (docs/errors.md). Class 22 (data exceptions) not listed here is invalid input.
SQLSTATE_CONTRACT: dict[str, Contract] = {
    "28000": Contract(ContextError, 401, "unauthenticated", "Authentication failed"),
    "42501": Contract(ContextError, 403, "forbidden", "Not allowed in this context"),
    "P0002": Contract(NotFound, 404, "not-found", "Not found"),
    "23502": _INVALID,
    "23503": Contract(IntegrityError, 422, "unknown-reference", "Unknown reference"),
    "23514": Contract(IntegrityError, 422, "constraint-violated", "Contract violated"),
    "54000": Contract(LimitExceeded, 422, "limit-exceeded", "Limit exceeded"),
    "54001": Contract(InvalidInput, 422, "invalid-input", "Input too deeply nested"),
    "23505": Contract(IntegrityError, 409, "conflict", "Conflicts with an existing object"),
    "23P01": Contract(IntegrityError, 409, "conflict", "Overlaps an existing validity window"),
    "40001": Contract(ConflictError, 409, "stale-version", "Stale version"),
    "55000": Contract(StateError, 409, "wrong-state", "Object not in a state that allows this"),
    "0A000": Contract(ImmutableError, 409, "immutable", "Immutable"),
    "25006": Contract(ReadOnlyError, 503, "read-only", "Read-only server or transaction: write on the primary"),
    "55P03": Contract(ConflictError, 503, "busy", "Locked by a concurrent call, retry later"),
    "40P01": Contract(ConflictError, 503, "busy", "Deadlocked with a concurrent call, retry"),
    "57014": Contract(ConflictError, 503, "busy", "Cancelled after running too long, retry later"),
}


def contract_of(sqlstate: str | None) -> Contract | None:
    """The documented meaning of a SQLSTATE, or None when it is not part of the contract (a server error)."""
    code = sqlstate or ""
    return SQLSTATE_CONTRACT.get(code) or (_INVALID if code.startswith("22") else None)


# A statement a connection prepared before an upgrade changed the columns of what it reads is refused once by
# PostgreSQL with 0A000 (feature_not_supported), which the contract otherwise reads as a change of an immutable
# packet. Nothing was touched; psycopg prepares the statement again on the next call, so a retry succeeds.
# It is told apart by the server routine that raises it (plancache.c), which the server names the same way in
# every language its messages are translated into.
_PLAN_CACHE_REVALIDATION = "RevalidateCachedQuery"
_CHANGED_UNDER_A_PREPARED_STATEMENT = Contract(ConflictError, 503, "busy",
                                               "Changed by an upgrade since it was prepared, retry")


# memsub raises 40001 itself for a stale stated version, naming the field that was stale (``expected_version``,
# ``last_update_time``). PostgreSQL raises it too, naming nothing: for a transaction at REPEATABLE READ or
# SERIALIZABLE (a login's or database's default_transaction_isolation) that a concurrent one changed under it, and
# on a hot standby for a read that held up its replay of the primary past max_standby_streaming_delay. Nothing the
# caller stated was stale, and the same call run again in a new transaction may succeed, as after a deadlock.
_SERIALIZATION_FAILURE = Contract(ConflictError, 503, "busy",
                                  "Could not serialize with a concurrent transaction, retry")


def contract_of_error(error: psycopg.Error) -> Contract | None:
    """:func:`contract_of` the error's SQLSTATE, but for a prepared statement an upgrade changed under it
    ("cached plan must not change result type") and for a 40001 PostgreSQL raised (naming no field, not memsub's
    stale version: a serialization failure, or a read a hot standby cancelled to go on replaying): retryable
    conflicts."""
    if error.sqlstate == "0A000" and error.diag.source_function == _PLAN_CACHE_REVALIDATION:
        return _CHANGED_UNDER_A_PREPARED_STATEMENT
    if error.sqlstate == "40001" and not error.diag.column_name:
        return _SERIALIZATION_FAILURE
    return contract_of(error.sqlstate)


# The server ended the session: an administrator or a restart (57P01, 57P02), a server still starting (57P03),
# a database dropped (57P04), the login's idle_in_transaction_session_timeout (25P03) or idle_session_timeout
# (57P05), or a connection exception (class 08). libpq reports a connection closed under it without a SQLSTATE.
_SESSION_ENDED = ("25P03", "57P01", "57P02", "57P03", "57P04", "57P05")


def lost_connection(error: psycopg.Error) -> bool:
    """Whether ``error`` says that the connection to the server is gone (rather than that a statement failed)."""
    sqlstate = error.sqlstate
    if sqlstate is None:
        return isinstance(error, psycopg.OperationalError)
    return sqlstate in _SESSION_ENDED or sqlstate.startswith("08")


def from_database_error(error: psycopg.Error) -> MemsubError:
    """Translate a psycopg error raised by a stored function into the matching memsub exception; a connection the
    server ended, or that broke, under a call is :class:`ConnectionFailed` with libpq's first line."""
    if lost_connection(error):
        lines = str(error).strip().splitlines()
        reason = lines[0].strip() if lines else type(error).__name__
        for prefix in ("consuming input failed: ", "flush request failed: ", "sending query failed: "):
            reason = reason.removeprefix(prefix)
        said = "" if reason in ("the connection is lost", "the connection is closed") else f": {reason}"
        return ConnectionFailed(f"connection to the server lost{said}", sqlstate=error.sqlstate)
    sqlstate = error.sqlstate or ""
    contract = contract_of_error(error)
    cls = contract.error if contract is not None else MemsubError
    return cls(error.diag.message_primary or str(error), sqlstate=sqlstate, field=error.diag.column_name or None)
