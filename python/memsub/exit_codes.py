"""Exit codes of the ``memsub`` command, and the boundary that turns any error into one line and one code.

=====  ==========================================================================================
code   meaning
=====  ==========================================================================================
0      success; ``verify`` found the database identical to the shipped SQL
1      a check failed: ``verify`` found differences, ``migrate`` refused (drift, out-of-order,
       newer database), a ``maintain`` task failed, a packet was not found, a file ``ingest`` could
       not store
2      bad input or usage: unknown option, malformed connection string, invalid envelope or field,
       input that is not UTF-8 or JSON nested too deeply to parse
3      cannot connect: refused, timed out, wrong password, no such database, no server configured
4      insufficient privilege: the role lacks a grant or membership the command needs
5      preflight refused: the server lacks what installation needs (extension, privilege, version);
       nothing was changed
6      the server is a hot standby (``pg_is_in_recovery()``): a command that changes the database
       (``migrate``, ``repair``, ``maintain``, ``refresh-views`` ...; docs/operations.md lists them)
       runs on the primary; nothing was attempted
=====  ==========================================================================================
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

import click
import psycopg

from memsub.errors import (
    ConfigurationError,
    ConnectionFailed,
    ContextError,
    HotStandbyError,
    InvalidInput,
    MemsubError,
    PreflightRefused,
)

OK = 0
CHECK_FAILED = 1
BAD_INPUT = 2
CANNOT_CONNECT = 3
NO_PRIVILEGE = 4
PREFLIGHT_REFUSED = 5
ON_STANDBY = 6


def exit_code_of(error: MemsubError) -> int:
    if isinstance(error, HotStandbyError):
        return ON_STANDBY
    if isinstance(error, PreflightRefused):
        return PREFLIGHT_REFUSED
    if isinstance(error, ConnectionFailed):
        return CANNOT_CONNECT
    if isinstance(error, ContextError):
        return NO_PRIVILEGE
    if isinstance(error, ConfigurationError | InvalidInput):
        return BAD_INPUT
    return CHECK_FAILED


def as_memsub_error(error: BaseException) -> MemsubError:
    """Any error the boundary catches, as a MemsubError (connection and pool errors included)."""
    from psycopg_pool import PoolTimeout

    from memsub.connection import translate

    if isinstance(error, MemsubError):
        return error
    if isinstance(error, PoolTimeout):
        return ConnectionFailed(f"cannot connect: no connection from the pool in time ({error})")
    if isinstance(error, psycopg.Error):
        return translate(error)
    return MemsubError(str(error) or type(error).__name__)


def fail(error: BaseException, *, as_json: bool | None = None, suffix: str = "", prefix: str = "",
         code: int | None = None) -> NoReturn:
    """Print one line on stderr (and a JSON object on stdout with ``--json``), then exit with the error's code,
    or with ``code`` when the command gives failures of its own a code of their own (``verify`` and ``repair``
    exit 2 whenever they cannot compare). ``prefix`` says what could not be done."""
    if as_json is None:
        context = click.get_current_context(silent=True)
        as_json = bool(context and context.meta.get("memsub.json"))
    memsub_error = as_memsub_error(error)
    code = exit_code_of(memsub_error) if code is None else code
    # What an error was doing when it happened (the migrator notes the file it was applying): before the message.
    prefix += "".join(f"{note}: " for note in getattr(error, "__notes__", ()))
    message = prefix + (str(memsub_error).strip().splitlines()[0] if str(memsub_error).strip()
                        else type(error).__name__)
    details = []
    if memsub_error.sqlstate and memsub_error.sqlstate not in message:
        details.append(f"SQLSTATE {memsub_error.sqlstate}")
    if memsub_error.field:
        details.append(f"field {memsub_error.field}")
    line = message + (f" ({', '.join(details)})" if details else "") + suffix
    if as_json:
        payload: dict[str, Any] = {
            "ok": False, "exit_code": code, "error": type(memsub_error).__name__, "message": message,
            "sqlstate": memsub_error.sqlstate, "field": memsub_error.field}
        click.echo(json.dumps(payload))
    click.echo(f"memsub: {line}", err=True)
    raise click.exceptions.Exit(code)


class GuardedGroup(click.Group):
    """A click group whose commands never end in a traceback for an expected error (see the module's table)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta.setdefault("memsub.json", "--json" in args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from psycopg_pool import PoolTimeout

        as_json = bool(ctx.meta.get("memsub.json"))
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.UsageError):
            raise  # click's own: an exit code already chosen, or a usage message with its hint (exit 2)
        except click.ClickException as error:
            fail(MemsubError(error.format_message()), as_json=as_json)
        except (MemsubError, psycopg.Error, PoolTimeout) as error:
            fail(error, as_json=as_json)
        except UnicodeError as error:
            # bytes that are not UTF-8 in a file, stdin or an argument
            fail(InvalidInput(f"input is not valid UTF-8: {error}; nothing was written"), as_json=as_json)
        except RecursionError:
            # JSON nested deeper than Python's parser allows
            fail(InvalidInput("JSON nested too deeply to parse; nothing was written"), as_json=as_json)
        except ValueError as error:
            fail(InvalidInput(str(error) or type(error).__name__), as_json=as_json)
        except OSError as error:
            fail(MemsubError(f"{error.strerror or error}" + (f": {error.filename}" if error.filename else "")),
                 as_json=as_json)
        except Exception as error:
            fail(MemsubError(f"unexpected error: {type(error).__name__}: {error}"), as_json=as_json)
