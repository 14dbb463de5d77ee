"""The HTTP API (``memsub serve``): seed 004's ``POST /api/v1/memory/packet`` and the reads around it.

Each route is a thin layer over one stored function. A request is one transaction on a pooled connection:
``memsub.authenticate_api_key`` verifies the caller's key and seals the context of the key's tenant,
organization, user and roles, then the route's function runs under row-level security and PostgreSQL renders
the JSON answer (``to_jsonb``). No request field can name a tenant: the tenant is the key's. Errors are RFC 9457
problem details mapped from the SQLSTATE contract (docs/errors.md); a failed request commits nothing.
docs/http.md describes every route.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, get_args
from urllib.parse import unquote, unquote_plus
from uuid import UUID

import psycopg
from pgvector import Vector
from psycopg import sql
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, compile_path

from memsub import _calls
from memsub.connection import DEFAULT_PREPARE_THRESHOLD, output_format_settings, pool_arguments
from memsub.errors import ConnectionFailed, LocalValidationError, contract_of_error, lost_connection
from memsub.graph import Direction
from memsub.memory import MemoryType
from memsub.models import parse_time
from memsub.packets import LineageDirection
from memsub.search import RankBy, SearchMode
from memsub.signatures import INTEGER_RANGES

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024 + 65536
"""Request bodies over this many bytes get 413: a full batch under memsub's own max_batch_bytes (16 MiB) fits."""

# Fixed settings and names only, no caller's text: the key is the one parameter.
AUTHENTICATE = ("select key_id, pg_catalog.set_config('TimeZone', 'UTC', true), "  # noqa: S608
                f"{output_format_settings(local=True)} from memsub.authenticate_api_key(%s)")
"""The first statement of every request's transaction. It also renders the answer's times in UTC and in memsub's
output formats (OUTPUT_FORMATS: every float with all its digits, whatever the login's extra_float_digits) for that
transaction only (authenticate_api_key returns one row or raises): a session setting would outlive the request on
the server session, which a transaction-mode pooler hands to another client next."""
PROBLEM_MEDIA_TYPE = "application/problem+json"
INT_MIN, INT_MAX = INTEGER_RANGES["integer"]

Handler = Callable[[Request], Awaitable[Response]]


RETRY_AFTER = {"Retry-After": "1"}
"""The header of every 503 but ``read-only``: the database was out of reach or busy, and a retry a second later may
succeed. A write refused by a read-only server (a hot standby) succeeds on the primary, not here a second later."""


class Problem(Exception):
    """An error answered as RFC 9457 problem details; a 503 carries Retry-After, but for a read-only server."""

    def __init__(self, status: int, kind: str, title: str, detail: str, *, field: str | None = None,
                 sqlstate: str | None = None, extra: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.kind, self.title, self.detail = status, kind, title, detail
        self.field, self.sqlstate, self.extra = field, sqlstate, extra or {}
        self.headers = (RETRY_AFTER if status == 503 and kind != "read-only" else {}) | (headers or {})

    def document(self, instance: str | None) -> dict[str, Any]:
        """The problem document (``instance``: the request's path, None when not known)."""
        body: dict[str, Any] = {"type": f"urn:memsub:problem:{self.kind}", "title": self.title,
                                "status": self.status, "detail": self.detail}
        if instance is not None:
            body["instance"] = instance
        if self.field is not None:
            body["field"] = self.field
        if self.sqlstate is not None:
            body["sqlstate"] = self.sqlstate
        body.update(self.extra)
        return body

    def response(self, instance: str) -> Response:
        return Response(json.dumps(self.document(instance)), status_code=self.status, media_type=PROBLEM_MEDIA_TYPE,
                        headers=self.headers)


def invalid(field: str, detail: str) -> Problem:
    return Problem(422, "invalid-input", "Invalid input", detail, field=field)


def problem_from_database(error: psycopg.Error) -> Problem:
    sqlstate = error.sqlstate or ""
    contract = contract_of_error(error)
    if contract is None:
        raise error  # not part of the contract: a server error
    code, kind, title = contract.status, contract.kind, contract.title
    extra: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if sqlstate == "54000" and error.diag.message_detail:
        extra["limit"] = error.diag.message_detail
    if sqlstate == "40001" and error.diag.column_name and error.diag.message_detail:
        extra["conflict"] = error.diag.message_detail  # memsub's stale version; PostgreSQL's own names no field
    if code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="memsub"'
    return Problem(code, kind, title, error.diag.message_primary or str(error), field=error.diag.column_name,
                   sqlstate=sqlstate, extra=extra, headers=headers)


# -- request parsing -------------------------------------------------------------------------------------------

def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_int(digits: str) -> int | float:
    """A JSON integer. Python reads at most 4,300 digits as an int unless told otherwise; a longer one is still
    JSON, read as the double it rounds to (infinite), which a number field refuses by name. Values the database
    stores reach it as the body's own text, digits and all."""
    return int(digits) if len(digits) <= 4000 else float(digits)


async def read_body(request: Request) -> str:
    """The request body as text, refusing more than the configured bytes (413) before reading them all."""
    limit: int = request.app.state.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Problem(413, "body-too-large", "Request body too large",
                      f"the body has {declared} bytes; this server accepts at most {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Problem(413, "body-too-large", "Request body too large",
                          f"the body exceeds {limit} bytes, the most this server accepts")
        chunks.append(chunk)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as error:
        raise Problem(400, "bad-json", "Malformed JSON", f"the body is not UTF-8: {error.reason}") from error


async def read_json(request: Request) -> tuple[str, Any]:
    """The body's text and its parsed value; 400 when it is not JSON (NaN and Infinity are not JSON)."""
    text = await read_body(request)
    if not text.strip():
        raise Problem(400, "bad-json", "Malformed JSON", "the request needs a JSON body")
    try:
        return text, json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)
    except RecursionError as error:
        raise Problem(400, "bad-json", "Malformed JSON", "the JSON body is nested too deeply") from error
    except ValueError as error:
        raise Problem(400, "bad-json", "Malformed JSON", f"the body is not JSON: {error}") from error


def uuid_text(value: Any, field: str) -> str:
    if isinstance(value, str):
        try:
            return str(UUID(value))
        except ValueError:
            pass
    raise invalid(field, f"{field} must be a UUID")


def _from_text(value: Any, field: str, convert: Callable[[str], Any], what: str) -> Any:
    """A string converted (a query parameter; 422 naming the field when it does not convert); any other value as is."""
    if isinstance(value, str):
        try:
            return convert(value)
        except ValueError as error:
            raise invalid(field, f"{field} must be {what}") from error
    return value


def integer(value: Any, field: str) -> int:
    value = _from_text(value, field, int, "an integer")
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(field, f"{field} must be an integer")
    if not INT_MIN <= value <= INT_MAX:
        raise invalid(field, f"{field} must be between {INT_MIN} and {INT_MAX}")
    return value


def bigint(value: Any, field: str) -> int:
    number = _from_text(value, field, int, "an integer")
    if isinstance(number, bool) or not isinstance(number, int) or not -(2**63) <= number < 2**63:
        raise invalid(field, f"{field} must be a 64-bit integer")
    return number


def number(value: Any, field: str) -> float:
    """A double: JSON's integers have no size limit, so one too large for a double is refused as an infinite
    number is (422 naming the field), not left to raise OverflowError."""
    value = _from_text(value, field, float, "a number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(field, f"{field} must be a number")
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise invalid(field, f"{field} must be a finite number within the range of a double")
    return result


def boolean(value: Any, field: str) -> bool:
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    if not isinstance(value, bool):
        raise invalid(field, f"{field} must be true or false")
    return value


def text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise invalid(field, f"{field} must be a string")
    return unicode_checked(_calls.checked_text, value, field)  # NUL and unpaired surrogates


def unicode_checked(check: Callable[[Any, str], str], value: Any, field: str) -> str:
    """``value`` passed through ``check`` (``_calls.checked_text``, or json_string inside JSON): a NUL
    character, or the unpaired surrogate JSON's ``\\ud800`` escape puts in a string (it has no UTF-8 form), is 422
    naming the field (the path inside a JSON value) instead of a failure to send it."""
    try:
        return check(value, field)
    except LocalValidationError as error:
        raise invalid(error.field or field, str(error)) from error


def timestamp(value: Any, field: str) -> datetime:
    """An ISO 8601 time (no offset: UTC), sent as the client sends a datetime: in binary, as a point in time, so
    any offset ISO 8601 spells (up to 23:59) is read, where PostgreSQL's text form stops at 15:59:59."""
    value = text(value, field)
    try:
        return parse_time(value)
    except ValueError as error:
        raise invalid(field, f"{field} must be an ISO 8601 timestamp") from error


def seconds(value: Any, field: str) -> timedelta:
    """A duration given as a number of seconds (the function checks its range)."""
    try:
        return timedelta(seconds=number(value, field))
    except OverflowError as error:
        raise invalid(field, f"{field} is too many seconds") from error


def texts(value: Any, field: str) -> list[str]:
    if not isinstance(value, list):
        raise invalid(field, f"{field} must be an array of strings")
    return [text(item, f"{field}[{i}]") for i, item in enumerate(value)]


FLOAT4_MAX = 3.4028234663852886e38
"""The largest number a vector element (a 4-byte float) holds."""
VECTOR_MAX_DIMENSIONS = _calls.VECTOR_MAX_DIMENSIONS
"""The most elements pgvector's ``vector`` holds (its VECTOR_MAX_DIM)."""


def vector(value: Any, field: str) -> Vector:
    """A vector field as the client's vector argument (``_calls.vector``: sent in binary, 4 bytes a number): an
    array of finite numbers that a 4-byte float holds, the first element that is not one refused by name. A JSON
    array of plain numbers (what clients send) is read in one pass, without a field name per element; anything
    else, or an integer too large for a double, goes element by element through number(), which also converts
    numbers given as text. (Read element by element and sent as text, a 384-number vector took 0.7 ms of the
    server process, a sixth of a search.)"""
    if not isinstance(value, list) or not value:
        raise invalid(field, f"{field} must be a non-empty array of numbers")
    if len(value) > VECTOR_MAX_DIMENSIONS:  # pgvector would refuse it naming no field
        raise Problem(422, "limit-exceeded", "Limit exceeded",
                      f"{field} has {len(value)} dimensions; a vector holds at most {VECTOR_MAX_DIMENSIONS}",
                      field=field, sqlstate="54000")
    numbers: list[float] | None = None
    if all(type(item) is float or type(item) is int for item in value):
        try:
            numbers = [float(item) for item in value]
        except OverflowError:  # an integer no double holds: number() names it
            pass
    if numbers is None:
        numbers = [number(item, f"{field}[{i}]") for i, item in enumerate(value)]
    for i, item in enumerate(numbers):
        if not -FLOAT4_MAX <= item <= FLOAT4_MAX:  # NaN fails both comparisons
            raise invalid(f"{field}[{i}]", f"{field}[{i}] must be a finite number within the range of a 4-byte float")
    return _calls.vector(numbers)


def json_string(value: str, field: str) -> str:
    """A string inside a JSON value, checked as jsonb would check it (a NUL is 22P05 there)."""
    return _calls.checked_text(value, field, "22P05")


def json_strings(value: Any, field: str) -> None:
    """422 naming the path (``value.note``, ``envelopes[1].tags[0]``) of the first string or key of a parsed JSON
    value that PostgreSQL cannot hold: an unpaired surrogate (which JSON's ``\\ud800`` escape puts in a string and
    which has no UTF-8 form) or a NUL. Nothing else is judged: the value is not what is sent (see json_value),
    so a number no double holds, such as 1e400, is left for jsonb, which holds it
    (:func:`memsub._calls.strings_with_places` walks it as deep as json.loads nests it)."""
    for text, path in _calls.strings_with_places(value, field):
        unicode_checked(json_string, text, path)


def json_value(value: Any, field: str) -> None:
    """A JSON field, checked (json_strings) but not re-encoded: call_arguments has the database read it from the
    body text as the client sent it, so its numbers are stored as written (1.10 stays 1.10, and 1e400, which no
    double holds, is kept as jsonb keeps it), as a packet's envelope is."""
    json_strings(value, field)


def json_object(value: Any, field: str) -> None:
    if not isinstance(value, dict):
        raise invalid(field, f"{field} must be a JSON object")
    json_value(value, field)


class _NumberText(str):
    """A JSON number as the body writes it (:func:`json_leaves`)."""


class _Members(list[tuple[str, Any]]):
    """A JSON object's members in the body's order, each duplicate key kept (:func:`json_leaves`)."""


def json_leaves(body: str, place: str) -> Iterator[tuple[str, str]]:
    """Each string, key and number (a :class:`_NumberText`) of a JSON body text with its place (``place.note``,
    ``place[1].tags[0]``; a key placed at its object, ``body`` at the top when ``place`` is empty), depth first in
    the text's order. Every member of an object is read, as the database's jsonb reader reads it, where json.loads
    keeps only the last of a duplicate key."""
    value = json.loads(body, object_pairs_hook=_Members, parse_float=_NumberText, parse_int=_NumberText,
                       parse_constant=_reject_constant)
    pending: list[tuple[Any, str]] = [(value, place)]
    while pending:
        item, path = pending.pop()
        if isinstance(item, _Members):
            yield from ((path or "body", key) for key, _ in item)
            pending.extend((member, f"{path}.{key}" if path else key) for key, member in reversed(item))
        elif isinstance(item, list):
            pending.extend((item[i], f"{path}[{i}]") for i in reversed(range(len(item))))
        elif isinstance(item, str):
            yield path or "body", item


JSON_READ_ERRORS = ("22003", "22P02", "22P05")
"""What PostgreSQL's jsonb reader raises, naming no field, for a body text it cannot read: a number no numeric
holds, an unpaired surrogate escape, a NUL escape."""
NUMERIC_SURE_CHARS = 1000
"""A JSON number this short and without an exponent always fits a numeric (131,072 digits before the point,
16,383 after)."""


async def json_fault(pool: AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]], body: str,
                     place: str) -> Problem | None:
    """The first string or number of a JSON body text that the database could not read, as 422 naming its place
    (:func:`json_leaves`), or None. Asked only after the database refused the body naming nothing: a number
    json.loads reads (as an infinite float) and jsonb does not (1e1000000), or a bad escape in a member
    json.loads dropped for a later one of the same key. Numbers are judged by the database
    (``pg_input_is_valid``), so the one named is one it refuses."""
    numbers: list[tuple[str, str]] = []
    for path, leaf in json_leaves(body, place):
        if not isinstance(leaf, _NumberText):
            try:
                json_string(leaf, path)
            except LocalValidationError as error:
                return invalid(path, str(error))
        elif len(leaf) > NUMERIC_SURE_CHARS or "e" in leaf or "E" in leaf:
            numbers.append((path, leaf))
    if not numbers:
        return None
    try:
        async with pool.connection() as connection:
            cursor = await connection.execute(
                "select t.i from unnest(%s::text[]) with ordinality as t(n, i) "
                "where not pg_catalog.pg_input_is_valid(t.n, 'numeric') order by t.i limit 1",
                [[number for _, number in numbers]])
            row = await cursor.fetchone()
    except (psycopg.Error, PoolTimeout):  # the database's own answer, naming nothing, stands
        return None
    if row is None:
        return None
    path, number = numbers[row[0] - 1]
    return Problem(422, "invalid-input", "Invalid input",
                   f"{path}: the number {number[:40]}{'...' if len(number) > 40 else ''} is out of the range of "
                   "a numeric (131,072 digits before the point, 16,383 after)", field=path, sqlstate="22003")


def unicode_body(body: str, value: Any, field: str) -> None:
    """json_strings of the parsed body, when the body has a ``\\u`` escape: only one can have put an unpaired
    surrogate or a NUL in a string, so a body without one is not walked."""
    if "\\u" in body:
        json_strings(value, field)


Coerce = Callable[[Any, str], Any]


@dataclass(frozen=True)
class Argument:
    """One argument of a stored function, fed from a body or query field of the same name. The route's list of
    them is the one description of its input: the server reads fields with it and the OpenAPI document
    (memsub.http_openapi) is derived from it. A ``jsonb`` argument is read by the database from the body text
    (call_arguments' ``body``); its ``coerce`` only checks the parsed value."""

    name: str
    coerce: Coerce
    cast: str
    required: bool = False
    many: bool = False  # a query parameter that may repeat (an array)
    choices: tuple[str, ...] = ()  # the values the function accepts, for the OpenAPI document
    doc: str = ""  # the field's description in the OpenAPI document


JSONB = "jsonb"
BODY = sql.SQL("body.body")
"""The request body as jsonb, in a query whose FROM list starts with ``(select %s::jsonb) as body(body)``."""


def call_arguments(source: dict[str, Any], arguments: Sequence[Argument],
                   fixed: Sequence[tuple[str, str, Any]] = (), *,
                   body: sql.Composable | None = None) -> tuple[sql.Composed, list[Any]]:
    """``p_name => %s::cast, ...`` for the fields given (the function's defaults stand for the rest) and their
    values; unknown fields and missing required ones are 422 naming the field. A ``jsonb`` field is passed as
    ``p_name => body -> 'name'``: the database reads it from the body text (``body``: a jsonb expression of it),
    not from a re-encoding of Python's parse, which turns 1.10 into 1.1, rounds large numbers and has no form
    for 1e400."""
    known = {argument.name for argument in arguments}
    for name in source:
        if name not in known:
            raise invalid(name, f"unknown field {name}")
    parts: list[sql.Composable] = []
    values: list[Any] = []
    for name, cast, value in fixed:
        parts.append(_argument(name, cast))
        values.append(value)
    for argument in arguments:
        if argument.name not in source or source[argument.name] is None:
            if argument.required:
                raise invalid(argument.name, f"{argument.name} is required")
            continue
        raw = source[argument.name]
        checked = argument.coerce(raw, argument.name)
        if argument.cast == JSONB:
            assert body is not None, f"{argument.name} is read from the body"
            parts.append(sql.SQL("{} => {} -> {}").format(sql.Identifier(f"p_{argument.name}"), body,
                                                          sql.Literal(argument.name)))
            continue
        parts.append(_argument(argument.name, argument.cast))
        values.append(checked)
    return sql.SQL(", ").join(parts), values


def _argument(name: str, cast: str) -> sql.Composed:
    """``p_name => %s::cast``; a vector without a cast: pgvector's type is in the schema its extension was
    installed in, which the login's search_path may not hold, and the value already travels as that type (the
    client's binary vector, or NULL, which takes the one parameter type of the function's argument)."""
    if cast == "vector":
        return sql.SQL("{} => %s").format(sql.Identifier(f"p_{name}"))
    return sql.SQL("{} => %s::{}").format(sql.Identifier(f"p_{name}"), sql.SQL(cast))


def query_fields(request: Request, arguments: Sequence[Argument]) -> dict[str, Any]:
    """Query parameters by name: repeatable ones as lists, others as their single value (422 when repeated)."""
    many = {argument.name for argument in arguments if argument.many}
    fields: dict[str, Any] = {}
    for name in request.query_params:
        values = request.query_params.getlist(name)
        if name in many:
            fields[name] = values
        elif len(values) > 1:
            raise invalid(name, f"{name} may be given once")
        else:
            fields[name] = values[0]
    return fields


async def body_object(request: Request) -> dict[str, Any]:
    return (await body_text_and_object(request))[1]


async def body_text_and_object(request: Request) -> tuple[str, dict[str, Any]]:
    text_body, value = await read_json(request)
    if not isinstance(value, dict):
        raise invalid("body", "the body must be a JSON object")
    return text_body, value


# -- database ----------------------------------------------------------------------------------------------------

def api_key_of(request: Request) -> str:
    """The API key the request presents: a Bearer credential or an X-API-Key. A request presenting more than one
    (two Authorization fields, which is a singleton field, two X-API-Key fields, or both kinds) is refused rather
    than the first found taken, whatever keys they hold: a key a proxy adds cannot be overridden by one the client
    sent. An Authorization field of another scheme holds no key."""
    authorizations = request.headers.getlist("authorization")
    keys = []
    for header in authorizations:
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            keys.append(credentials.strip())
    keys += [key.strip() for key in request.headers.getlist("x-api-key") if key.strip()]
    if len(keys) > 1 or len(authorizations) > 1:
        raise Problem(401, "unauthenticated", "Authentication failed",
                      "send one API key, in one Authorization or X-API-Key field", field="api_key",
                      headers={"WWW-Authenticate": 'Bearer realm="memsub", error="invalid_request"'})
    if keys:
        return keys[0]
    raise Problem(401, "unauthenticated", "Authentication required",
                  "send the API key as 'Authorization: Bearer msk_...' (memsub api-key create)",
                  field="api_key", headers={"WWW-Authenticate": 'Bearer realm="memsub"'})


async def fetch_one(request: Request, query: sql.Composed | sql.SQL | str,
                    params: Sequence[Any], *, body: tuple[str, str] | None = None) -> tuple[Any, ...] | None:
    """The first row of ``query``, run after authenticating the request's key, all in one transaction
    (``_calls.rows_in_context_async``: one round trip for both statements and the commit). Database errors
    become problems; nothing is kept. ``body``: the JSON body text the query reads as jsonb and the place its
    faults are named from (:func:`json_fault`), when the database refuses it naming nothing."""
    authenticate = _calls.query(AUTHENTICATE, [api_key_of(request)], _calls.nothing())
    pool: AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]] = request.app.state.pool
    try:
        found = await _calls.rows_in_context_async(pool, authenticate, [_calls.query(query, params, _calls.raw())])
    except ConnectionFailed as error:  # the pool had no connection in time
        raise Problem(503, "unavailable", "Database unavailable",
                      "no database connection available in time") from error
    except psycopg.Error as error:
        if lost_connection(error):  # out of reach, or ended by the server under the request
            raise Problem(503, "unavailable", "Database unavailable", "the database connection failed") from error
        if body is not None and error.sqlstate in JSON_READ_ERRORS and error.diag.column_name is None:
            fault = await json_fault(pool, *body)
            if fault is not None:
                raise fault from error
        raise problem_from_database(error) from error
    return found[0][0] if found[0] else None


def json_response(row: tuple[Any, ...] | None, status: int = 200) -> Response:
    assert row is not None
    return Response(row[0], status_code=status, media_type="application/json")


# Columns that are indexes, not content: left out of the JSON of a row.
HIDDEN = "array['search_tsv', 'embedding']"
PACKET_JSON = sql.SQL("(to_jsonb(r) - " + HIDDEN + ")")


# -- routes ------------------------------------------------------------------------------------------------------

async def write_packet(request: Request) -> Response:
    text_body, value = await read_json(request)
    if not isinstance(value, dict):
        raise invalid("envelope", "the body must be one PacketEnvelope (a JSON object)")
    unicode_body(text_body, value, "envelope")
    row = await fetch_one(request, "select r.deduplicated, to_jsonb(r)::text from memsub.write_packet(%s::jsonb) r",
                          [text_body], body=(text_body, "envelope"))
    assert row is not None
    return Response(row[1], status_code=200 if row[0] else 201, media_type="application/json")


async def write_packets(request: Request) -> Response:
    """The envelopes go to the database as the body text, in either form: the wrapper's array is taken out by
    the database (``-> 'envelopes'``), so both forms store the same numbers and a batch retried in the other
    form is deduplicated."""
    text_body, value = await read_json(request)
    envelopes, place = sql.SQL("%s::jsonb"), "envelopes"
    if isinstance(value, dict) and set(value) == {"envelopes"}:
        value = value["envelopes"]
        envelopes, place = sql.SQL("%s::jsonb -> 'envelopes'"), ""  # the wrapper's key is the place's start
    if not isinstance(value, list):
        raise invalid("envelopes", "the body must be a JSON array of PacketEnvelopes, or {\"envelopes\": [...]}")
    unicode_body(text_body, value, "envelopes")
    row = await fetch_one(request, sql.SQL("select jsonb_build_object('results', coalesce(jsonb_agg(to_jsonb(r) "
                                           "order by r.position), '[]'))::text from memsub.write_packets({}) r"
                                           ).format(envelopes), [text_body], body=(text_body, place))
    return json_response(row)


GET_PACKET_ARGUMENTS = (
    Argument("with_vectors", boolean, "boolean",
             doc="true (default): the envelope as written, each memory.embeddings[] vector put back; false: as "
                 "stored, each such vector null (cheaper to read when only the content is needed)."),
)


async def get_packet(request: Request) -> Response:
    packet_id = uuid_text(request.path_params["packet_id"], "packet_id")
    arguments, values = call_arguments(query_fields(request, GET_PACKET_ARGUMENTS), GET_PACKET_ARGUMENTS,
                                       fixed=[("packet_id", "uuid", packet_id)])
    row = await fetch_one(request, sql.SQL("select {}::text from memsub.get_packet({}) r").format(
        PACKET_JSON, arguments), values)
    if row is None:
        raise Problem(404, "not-found", "Not found", f"no packet {packet_id} is visible to this key",
                      field="packet_id")
    return json_response(row)


THREAD_ARGUMENTS = (
    Argument("limit", integer, "integer", doc="Packets per page (default 1000)."),
    Argument("after", bigint, "bigint", doc="The cursor: next_cursor of the previous page (a write_seq)."),
    *GET_PACKET_ARGUMENTS,
)


async def get_thread(request: Request) -> Response:
    thread_id = uuid_text(request.path_params["thread_id"], "thread_id")
    fields = query_fields(request, THREAD_ARGUMENTS)
    # The limit is also the full page's size, and after is the function's after_cursor: both are read here; the
    # rest go as get_packet's do (absent: the function's default).
    limit = integer(fields["limit"], "limit") if "limit" in fields else 1000
    after = bigint(fields["after"], "after") if "after" in fields else None
    arguments, values = call_arguments(
        {name: fields[name] for name in fields if name not in ("limit", "after")}, GET_PACKET_ARGUMENTS,
        fixed=[("thread_id", "uuid", thread_id), ("limit", "integer", limit), ("after_cursor", "bigint", after)])
    query = sql.SQL(
        "select jsonb_build_object('packets', coalesce(jsonb_agg({} order by r.write_seq), '[]'), "
        "'next_cursor', case when count(*) = %s then max(r.write_seq) end)::text "
        "from memsub.get_thread({}) r"
    ).format(PACKET_JSON, arguments)
    return json_response(await fetch_one(request, query, [limit, *values]))


LINEAGE_ARGUMENTS = (
    Argument("direction", text, "text", choices=get_args(LineageDirection),
             doc="Walk to parents (default) or children."),
    Argument("max_depth", integer, "integer", doc="Hops at most (default 16)."),
)


async def get_lineage(request: Request) -> Response:
    packet_id = uuid_text(request.path_params["packet_id"], "packet_id")
    arguments, values = call_arguments(query_fields(request, LINEAGE_ARGUMENTS), LINEAGE_ARGUMENTS,
                                       [("packet_id", "uuid", packet_id)])
    query = sql.SQL("select jsonb_build_object('lineage', coalesce(jsonb_agg(to_jsonb(r) order by r.depth, "
                    "r.packet_id), '[]'))::text from memsub.get_lineage({}) r").format(arguments)
    return json_response(await fetch_one(request, query, values))


WITH_PACKETS = Argument("with_packets", boolean, "boolean", doc="Each hit carries its packet (one statement).")

SEMANTIC_ARGUMENTS = (
    Argument("query", vector, "vector", required=True), Argument("k", integer, "integer"),
    Argument("embedding_type", text, "text"), Argument("thread_id", uuid_text, "uuid"),
    Argument("tags", texts, "text[]"), Argument("packet_type", text, "text"),
    Argument("since", timestamp, "timestamptz"), Argument("until", timestamp, "timestamptz"),
    Argument("min_importance", number, "double precision"),
    Argument("rank_by", text, "text", choices=get_args(RankBy)),
    Argument("record_access", boolean, "boolean"), Argument("query_text", text, "text"),
    Argument("agent_id", text, "text"),
    Argument("mode", text, "text", choices=get_args(SearchMode),
             doc="auto (default): the exact scan or the HNSW walk, whichever is cheaper at recall 0.95 or more; "
                 "exact: always the exact scan; approximate: always the walk."),
    Argument("ef_search", integer, "integer",
             doc="HNSW candidate list size for this call, 1 to 1000 (default: derived from k and the tenant's "
                 "share of the index)."),
    Argument("max_scan_tuples", integer, "integer",
             doc="Bound of the iterative HNSW scan for this call (default 20000, at most the limit "
                 "max_scan_tuples)."),
    WITH_PACKETS,
)


async def semantic_search(request: Request) -> Response:
    arguments, values = call_arguments(await body_object(request), SEMANTIC_ARGUMENTS)
    query = ranked('hits', 'semantic_search', arguments)
    return json_response(await fetch_one(request, query, values))


HYBRID_ARGUMENTS = (
    Argument("query_text", text, "text", required=True), Argument("query", vector, "vector"),
    Argument("k", integer, "integer"), Argument("embedding_type", text, "text"),
    Argument("vector_weight", number, "double precision"), Argument("text_weight", number, "double precision"),
    Argument("rrf_k", integer, "integer"), Argument("candidates", integer, "integer"),
    Argument("importance_weight", number, "double precision"),
    Argument("recency_weight", number, "double precision"),
    Argument("half_life", seconds, "interval",
             doc="Seconds in which the recency boost halves (default 30 days: 2592000)."),
    Argument("record_access", boolean, "boolean"), Argument("agent_id", text, "text"), WITH_PACKETS,
)


async def hybrid_search(request: Request) -> Response:
    fields = await body_object(request)
    arguments, values = call_arguments(fields, HYBRID_ARGUMENTS,
                                       [] if fields.get("query") is not None else [("query", "vector", None)])
    query = ranked('hits', 'hybrid_search', arguments)
    return json_response(await fetch_one(request, query, values))


TRAVERSE_ARGUMENTS = (
    Argument("start_entity", text, "text", required=True, doc="The entity to start from."),
    Argument("max_depth", integer, "integer", doc="Hops at most (default 3)."),
    Argument("relationship_types", texts, "text[]", many=True,
             doc="Follow only these relationship types (repeat the parameter)."),
    Argument("min_confidence", number, "double precision", doc="Skip weaker edges."),
    Argument("direction", text, "text", choices=get_args(Direction),
             doc="Edge direction (default outgoing)."),
    Argument("min_path_confidence", number, "double precision", doc="Prune weaker paths."),
    Argument("limit", integer, "integer", doc="Rows at most (default 1000)."),
    Argument("as_of", timestamp, "timestamptz", doc="The graph as it was at this time."),
)


async def traverse_graph(request: Request) -> Response:
    arguments, values = call_arguments(query_fields(request, TRAVERSE_ARGUMENTS), TRAVERSE_ARGUMENTS)
    query = ranked('nodes', 'traverse_graph', arguments)
    return json_response(await fetch_one(request, query, values))


def ranked(name: str, function: str, arguments: sql.Composed) -> sql.Composed:
    """``{name: [rows of memsub.function(arguments) in the function's order]}`` as JSON text."""
    return sql.SQL("select jsonb_build_object({}, coalesce(jsonb_agg(to_jsonb(r) - 'ordinality' "
                   "order by r.ordinality), '[]'))::text from {}({}) with ordinality as r").format(
        sql.Literal(name), sql.Identifier("memsub", function), arguments)


MEMORY_JSON = sql.SQL("(to_jsonb(r) - " + HIDDEN + ")")


def namespace_key(request: Request) -> tuple[str, str]:
    return (text(request.path_params["namespace"], "namespace"), text(request.path_params["key"], "key"))


async def memory_get(request: Request) -> Response:
    namespace, key = namespace_key(request)
    row = await fetch_one(request, sql.SQL("select {}::text from memsub.memory_get(%s, %s) r").format(MEMORY_JSON),
                          [namespace, key])
    if row is None:
        raise Problem(404, "not-found", "Not found", f"no live entry {key!r} in namespace {namespace!r}", field="key")
    return json_response(row)


MEMORY_WRITE_ARGUMENTS = (
    Argument("value", json_value, "jsonb", required=True, doc="Any JSON value but null."),
    Argument("expected_version", integer, "integer"),
    Argument("memory_type", text, "text", choices=get_args(MemoryType)),
    Argument("metadata", json_object, "jsonb"),
    Argument("embedding", vector, "vector", doc="The entry's embedding (a new version without one carries none)."),
)


async def memory_put(request: Request) -> Response:
    namespace, key = namespace_key(request)
    text_body, fields = await body_text_and_object(request)
    arguments, values = call_arguments(fields, MEMORY_WRITE_ARGUMENTS,
                                       [("namespace", "text", namespace), ("key", "text", key)], body=BODY)
    row = await fetch_one(request, sql.SQL(
        "select {}::text from (select %s::jsonb) as body(body), memsub.memory_write({}) r").format(
        MEMORY_JSON, arguments), [text_body, *values], body=(text_body, ""))
    return json_response(row)


MEMORY_LIST_ARGUMENTS = (
    Argument("limit", integer, "integer",
             doc="Entries at most (at most max_rows). Without it every live entry, up to max_rows: more are refused."),
)


async def memory_list(request: Request) -> Response:
    namespace = text(request.path_params["namespace"], "namespace")
    arguments, values = call_arguments(query_fields(request, MEMORY_LIST_ARGUMENTS), MEMORY_LIST_ARGUMENTS,
                                       fixed=[("namespace_prefix", "text", namespace)])
    row = await fetch_one(request, sql.SQL(
        "select jsonb_build_object('entries', coalesce(jsonb_agg({} order by r.namespace, r.key), '[]'))::text "
        "from memsub.memory_list({}) r").format(MEMORY_JSON, arguments), values)
    return json_response(row)


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def ready(request: Request) -> Response:
    """Ready when a pooled connection answers and memsub's authentication function is installed; ``standby``
    says whether the server is a hot standby (pg_is_in_recovery()): it serves the reads, not the writes."""
    pool: AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]] = request.app.state.pool
    try:
        async with pool.connection(timeout=5.0) as connection:
            cursor = await connection.execute(
                "select pg_catalog.to_regprocedure('memsub.authenticate_api_key(text)') is not null, "
                "pg_catalog.pg_is_in_recovery()")
            row = await cursor.fetchone()
    except (psycopg.Error, PoolTimeout) as error:
        raise Problem(503, "unavailable", "Not ready",
                      f"the database does not answer: {type(error).__name__}") from error
    if not row or not row[0]:
        raise Problem(503, "unavailable", "Not ready", "memsub is not installed in this database (memsub migrate)")
    return JSONResponse({"status": "ready", "standby": bool(row[1])})


async def openapi(request: Request) -> Response:
    return Response(request.app.state.openapi_text, media_type="application/json")


class Endpoint(NamedTuple):
    """One route: its path (a Starlette template), its method, its handler, and the query parameters it takes
    (those the handler reads; none for a route whose fields come from the body). Any other query parameter is
    refused, 422 naming it, before the handler runs: a misspelt parameter, or a body field sent in the query
    string, never goes unnoticed while the route answers as if it were absent. A route that is not ``public``
    answers 401 to a request without an API key before anything else."""

    path: str
    method: str
    handler: Handler
    query: Sequence[Argument] = ()
    public: bool = False

    @property
    def template(self) -> str:
        """The path as the OpenAPI document writes it: ``{key}`` for Starlette's ``{key:path}``."""
        return re.sub(r"\{(\w+):\w+\}", r"{\1}", self.path)


def _not_utf8(field: str) -> Problem:
    return invalid(field, f"{field} is not UTF-8 once its percent escapes are decoded")


def utf8_path_and_query(request: Request, path_regex: re.Pattern[str]) -> None:
    """422 naming the path segment or query parameter whose percent escapes decode to bytes that are not UTF-8, as
    a body that is not UTF-8 is refused. The server reads such bytes as U+FFFD, which would name another key (and
    every such key the same one) or search for another entity. The path's segments are found as the route found
    them, on the path decoded with each byte that is not UTF-8 kept apart; a query parameter is named by its name,
    or by its name as sent when the name itself is not UTF-8."""
    raw_path = request.scope.get("raw_path")
    if raw_path:
        encoded = raw_path.decode("latin-1")
        try:
            unquote(encoded, errors="strict")
        except UnicodeDecodeError:
            match = path_regex.match(unquote(encoded, errors="surrogateescape"))
            for name, value in (match.groupdict() if match else {}).items():
                if not value.isascii() and _has_undecoded_byte(value):
                    raise _not_utf8(name) from None
            raise _not_utf8("path") from None
    query = request.scope.get("query_string", b"").decode("latin-1")
    for pair in query.split("&") if query else ():
        raw_name, _, raw_value = pair.partition("=")
        try:
            name = unquote_plus(raw_name, errors="strict")
        except UnicodeDecodeError:
            raise _not_utf8(raw_name) from None
        try:
            unquote_plus(raw_value, errors="strict")
        except UnicodeDecodeError:
            raise _not_utf8(name) from None


def _has_undecoded_byte(value: str) -> bool:
    """Whether ``value`` holds a byte that was not UTF-8, which surrogateescape decoding keeps as U+DC80-U+DCFF."""
    return any("\udc80" <= char <= "\udcff" for char in value)


def guarded(endpoint: Endpoint) -> Handler:
    """The endpoint's handler behind the checks every route shares, answering a Problem as problem details.

    Without an API key a route that is not public is 401 first: before its path, query or body is judged, and
    before the body is read. Only the key's presence is checked here; whether it is valid is the database's
    answer (memsub.authenticate_api_key, in the request's transaction)."""
    known = {argument.name for argument in endpoint.query}
    path_regex = compile_path(endpoint.path)[0]

    async def run(request: Request) -> Response:
        try:
            if not endpoint.public:
                api_key_of(request)
            utf8_path_and_query(request, path_regex)
            for name in request.query_params:
                if name not in known:
                    raise invalid(name, f"unknown query parameter {name}")
            response = await endpoint.handler(request)
        except Problem as problem:
            response = problem.response(request.url.path)
        if not endpoint.public:
            # What a key's tenant reads is never stored by a cache: a shared one keys answers by URL, and does
            # not take X-API-Key for a credential as it takes Authorization.
            response.headers["Cache-Control"] = "no-store"
        return response
    run.__name__ = endpoint.handler.__name__
    return run


ROUTES: list[Endpoint] = [
    Endpoint("/api/v1/memory/packet", "POST", write_packet),
    Endpoint("/api/v1/memory/packets", "POST", write_packets),
    Endpoint("/api/v1/memory/packet/{packet_id}", "GET", get_packet, GET_PACKET_ARGUMENTS),
    Endpoint("/api/v1/memory/packet/{packet_id}/lineage", "GET", get_lineage, LINEAGE_ARGUMENTS),
    Endpoint("/api/v1/memory/thread/{thread_id}", "GET", get_thread, THREAD_ARGUMENTS),
    Endpoint("/api/v1/search/semantic", "POST", semantic_search),
    Endpoint("/api/v1/search/hybrid", "POST", hybrid_search),
    Endpoint("/api/v1/graph/traverse", "GET", traverse_graph, TRAVERSE_ARGUMENTS),
    Endpoint("/api/v1/memory/namespace/{namespace}/keys", "GET", memory_list, MEMORY_LIST_ARGUMENTS),
    # A memory key may hold "/", a namespace cannot: the key is the rest of the path.
    Endpoint("/api/v1/memory/namespace/{namespace}/keys/{key:path}", "GET", memory_get),
    Endpoint("/api/v1/memory/namespace/{namespace}/keys/{key:path}", "PUT", memory_put),
    Endpoint("/api/v1/health", "GET", health, public=True),
    Endpoint("/api/v1/ready", "GET", ready, public=True),
    Endpoint("/api/v1/openapi.json", "GET", openapi, public=True),
]


def _routes() -> list[Route]:
    by_path: dict[str, dict[str, Handler]] = {}
    for endpoint in ROUTES:
        by_path.setdefault(endpoint.path, {})[endpoint.method] = guarded(endpoint)
    routes = []
    for path, handlers in by_path.items():
        if len(handlers) == 1:
            ((method, handler),) = handlers.items()
            routes.append(Route(path, handler, methods=[method]))
        else:
            routes.append(Route(path, _dispatch(handlers), methods=list(handlers)))
    return routes


def _dispatch(handlers: dict[str, Handler]) -> Handler:
    async def dispatch(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await handlers[method](request)
    return dispatch


async def _http_problem(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    kinds = {404: ("not-found", "Not found", f"no route {request.url.path}"),
             405: ("method-not-allowed", "Method not allowed",
                   f"{request.method} is not allowed on {request.url.path}")}
    kind, title, detail = kinds.get(error.status_code, ("http-error", str(error.detail), str(error.detail)))
    return Problem(error.status_code, kind, title, detail, headers=dict(error.headers or {})).response(
        request.url.path)


async def _server_error(request: Request, error: Exception) -> Response:
    return Problem(500, "internal", "Internal server error",
                   "the server failed to answer; nothing was written").response(request.url.path)


def create_app(dsn: str, *, min_size: int = 1, max_size: int = 10,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, pool_timeout: float = 10.0,
               prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> Starlette:
    """The ASGI application over a pool of connections to ``dsn`` (opened at startup, closed at shutdown).

    The login of ``dsn`` needs EXECUTE on memsub.authenticate_api_key (memsub_app has it) and no binding: the
    tenant of every request is its API key's. The pool's options are the client's (``prepare_threshold``: None
    prepares nothing, as a transaction-mode connection pooler needs); one a pool cannot work with raises
    ConfigurationError naming it, before any connection."""
    pool: AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]] = AsyncConnectionPool(
        **pool_arguments(dsn, min_size=min_size, max_size=max_size, timeout=pool_timeout,
                         prepare_threshold=prepare_threshold, autocommit=True, row_factory=tuple_row),
        open=False, connection_class=psycopg.AsyncConnection)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await pool.open(wait=False)
        try:
            yield
        finally:
            await pool.close()

    app = Starlette(routes=_routes(), lifespan=lifespan,
                    exception_handlers={HTTPException: _http_problem, Exception: _server_error})
    # A path is matched as written: Starlette would answer a trailing slash with a redirect to a URL built from
    # the request's Host field (another host, for a forged one), before the route's checks.
    app.router.redirect_slashes = False
    app.state.pool = pool
    app.state.max_body_bytes = max_body_bytes
    app.state.openapi_text = openapi_json()
    return app


def openapi_json() -> str:
    """The OpenAPI document as served (and as committed in docs/openapi.json)."""
    from memsub.http_openapi import openapi_document  # it describes this module's routes and fields

    return json.dumps(openapi_document(), indent=2) + "\n"


UNPARSABLE = Problem(400, "bad-request", "Bad request",
                     "the request is not valid HTTP/1.1 (a malformed request line or header, such as a Content-Length "
                     "that is not a whole number); the connection is closed")
"""The answer to a request uvicorn's parser refuses before the application sees it (:func:`http_protocol`)."""


def http_protocol() -> type[Any]:
    """The HTTP/1.1 protocol ``memsub serve`` runs: uvicorn's (httptools when it is installed, as uvicorn's
    ``http="auto"`` chooses, h11 otherwise), whose answer to a request its parser refuses (a malformed
    Content-Length, a bad request line) is :data:`UNPARSABLE` as a problem document, not uvicorn's text/plain.
    No application code runs for such a request, so only the protocol can answer it in the API's shape."""
    base: type[Any]
    try:
        import httptools  # noqa: F401  (uvicorn's choice when it is installed)
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class ProblemProtocol(base):  # type: ignore[misc]
        def send_400_response(self, msg: str) -> None:
            body = json.dumps(UNPARSABLE.document(None)).encode()
            head = [b"HTTP/1.1 400 Bad Request"]
            head += [name + b": " + value for name, value in self.server_state.default_headers]
            head += [b"content-type: " + PROBLEM_MEDIA_TYPE.encode(), b"content-length: %d" % len(body),
                     b"connection: close"]
            self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
            self.transport.close()

    return ProblemProtocol


@contextmanager
def serve_in_thread(app: Starlette, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Run ``app`` under uvicorn on a background thread (port 0: a free port) and yield its base URL; stop it on
    exit. For tests, benchmarks and embedding the API in another process."""
    import socket
    import threading

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", http=http_protocol()))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the HTTP server did not start")
            time.sleep(0.01)
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
