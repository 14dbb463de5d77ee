"""The one place the client talks to psycopg: stored-function calls declared once, run sync or async.

A wrapper declares a call — which function, which named arguments, what shape its rows decode into — and an
executor runs it on a connection::

    def get_packet(packet_id: UUID | str) -> Call[PacketStoreRow | None]:
        return function("get_packet", {"packet_id": packet_id}, optional(PacketStoreRow))

    class PacketsArea(Area[SessionT]):
        get = method(get_packet)          # session.packets.get(id) -> PacketStoreRow | None

    (and ``await session.packets.get(id)`` on the async session: the area is declared once for both).

Rules every call follows:

- Arguments travel by name (``p_x => %s``); an argument given as None is left out, so the SQL default applies.
  :data:`NULL` sends an explicit SQL NULL (for parameters without a default).
- One vector adapter (:func:`vector`): pgvector's binary ``Vector``, registered on each connection. A vector
  argument (:class:`AsVector`, or a ``Vector``) is checked when the call is declared: one that cannot be a vector
  (no number, NaN, an infinity, beyond a 4-byte float, not a number) raises LocalValidationError naming it.
- One JSON adapter (:class:`Json`): strict; a value that is not JSON raises TypeError naming the field.
- Text: a string argument (text, a text[] element, a string or key inside JSON) that holds an unpaired
  surrogate (no UTF-8 form) or a NUL character (which PostgreSQL cannot hold) raises LocalValidationError naming
  it (:func:`checked_text`).
- One time adapter: a ``datetime`` travels as ``timestamptz`` and one without an offset is UTC
  (:func:`memsub.models.as_utc`), whatever the server session's TimeZone (an ISO 8601 text for a timestamptz
  argument too: :func:`_iso_time_or_text`); registered on each connection the
  executors run on, so it holds inside lists too and for every call path.
- Rows are decoded by column name into the typed models; only the model's columns are selected. A call whose
  result holds vectors may ask for binary results (``vector`` values as 4 bytes a number, not decimal text).
- One error mapping: psycopg errors become :mod:`memsub.errors` exceptions.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import math
import re
import select
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Generic, Literal, ParamSpec, SupportsFloat, TypeVar, cast, overload
from uuid import UUID

import psycopg
from pgvector import Vector
from pgvector.psycopg.vector import register_vector_info
from psycopg import generators as psycopg_generators
from psycopg import pq, sql
from psycopg.abc import AdaptContext, Buffer, DumperKey, PQGen
from psycopg.adapt import AdaptersMap, Dumper, Loader, PyFormat
from psycopg.types import TypeInfo
from psycopg.types import json as psycopg_json
from psycopg.types.datetime import DatetimeBinaryDumper, DatetimeDumper
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolClosed, PoolTimeout
from pydantic import BaseModel

from memsub import signatures
from memsub.connection import output_format_settings
from memsub.errors import (
    ConnectionFailed,
    LocalValidationError,
    MemsubError,
    SessionClosed,
    StateError,
    TransactionAborted,
    from_database_error,
)
from memsub.models import as_utc, parse_time

Row = dict[str, Any]
logger = logging.getLogger("memsub")
T = TypeVar("T")
RowT = TypeVar("RowT")
M = TypeVar("M", bound=BaseModel)
V = TypeVar("V")
P = ParamSpec("P")
VectorLike = Sequence[SupportsFloat] | Any  # any iterable of numbers, or a NumPy array


# --- arguments -------------------------------------------------------------------------------------------------

class _Null:
    def __repr__(self) -> str:
        return "NULL"


NULL: Any = _Null()
"""An explicit SQL NULL for a parameter that has no default (None leaves the argument out)."""


@dataclass(frozen=True)
class Json:
    """A jsonb argument, encoded strictly when the call is declared (before anything is sent)."""

    value: Any


def json_or_none(value: Any) -> Json | None:
    """A jsonb argument, or None (the argument is left out and its SQL default applies) when not given."""
    return None if value is None else Json(value)


@dataclass(frozen=True)
class AsVector:
    """A vector argument, converted (:func:`vector`) and checked when the call is declared: a value that cannot
    be a vector raises LocalValidationError naming the argument, before anything is sent."""

    values: VectorLike


def vector_or_none(values: VectorLike | None) -> AsVector | None:
    """A vector argument, or None (the argument is left out and its SQL default applies) when not given."""
    return None if values is None else AsVector(values)


class NotJson(TypeError):
    """A value that is not JSON, in a JSON argument: ``field`` is its place (``value.note[2]``), which the message
    starts with."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _json_safe(value: Any, path: str) -> Any:
    """``value`` as plain JSON data; TypeError (:class:`NotJson`) naming ``path`` for anything that is not JSON.

    Accepted besides JSON's own types: tuples (arrays), UUIDs (strings), dates and times (ISO 8601 strings)
    and pydantic models (their JSON form). Sets, bytes, NaN, infinities and other objects are refused; a string
    or key that is not Unicode text raises LocalValidationError (:func:`checked_text`).
    """
    if isinstance(value, str):
        return checked_text(value, path, "22P05")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJson(path, f"{value!r} is not a JSON number")
        return value
    if isinstance(value, dict):
        safe: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJson(path, f"key {key!r} is a {type(key).__name__}, JSON object keys are strings")
            checked_text(key, path, "22P05")
            safe[key] = _json_safe(item, f"{path}.{key}")
        return safe
    if isinstance(value, (list, tuple)):
        if plain_numbers(value) and _finite_sum(value):  # such as a vector: as it is, without a call per number
            return list(value)
        # a loop, not a comprehension: one stack frame per level, so deep documents nest as far as json allows
        items: list[Any] = []
        for index, item in enumerate(value):
            items.append(_json_safe(item, f"{path}[{index}]"))
        return items
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    raise NotJson(path, f"a {type(value).__name__} is not JSON (use a list, dict, string, number, boolean or "
                        "null)")


def strings_with_places(value: Any, place: str) -> Iterator[tuple[str, str]]:
    """Each string and key of a parsed JSON value with its place (``place.note``, ``place[1].tags[0]``; a key is
    placed at its object), depth first in the value's order. A loop over a stack, not a recursion, so a value nests
    as deep as json.loads allows."""
    pending: list[tuple[Any, str]] = [(value, place)]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            yield item, path
        elif isinstance(item, dict):
            yield from ((key, path) for key in item)
            pending.extend((item[key], f"{path}.{key}" if path else str(key)) for key in reversed(item))
        elif isinstance(item, list):
            pending.extend((item[i], f"{path}[{i}]") for i in reversed(range(len(item))))


def checked_text(value: str, field_name: str, nul_sqlstate: str = "22021") -> str:
    """``value`` when PostgreSQL can hold it; LocalValidationError naming the field otherwise: for an unpaired
    surrogate (22021, as PostgreSQL names text that is not valid in its encoding), which a JSON ``\\ud800`` escape
    or a command-line byte that is not UTF-8 puts in a Python string and which has no UTF-8 form, and for a NUL
    character, which neither text nor jsonb holds (``nul_sqlstate``: 22021 for text, 22P05 inside JSON, the codes
    the server would give)."""
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError as error:
            raise LocalValidationError(
                f"field {field_name}: text with no UTF-8 form: an unpaired surrogate "
                f"(U+{ord(value[error.start]):04X}) at character {error.start}", sqlstate="22021",
                field=field_name) from None
    nul = value.find("\x00")
    if nul >= 0:
        raise LocalValidationError(f"field {field_name}: text cannot hold a NUL (U+0000) character, found at "
                                   f"character {nul}", sqlstate=nul_sqlstate, field=field_name)
    return value


def _check_strings(value: Any, field_name: str) -> None:
    """Each string of ``value`` (a string, or a list of them, nested or not) checked by :func:`checked_text`,
    named by its place (``field[0][1]``)."""
    if isinstance(value, str):
        checked_text(value, field_name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_strings(item, f"{field_name}[{index}]")


def plain_numbers(values: Sequence[Any]) -> bool:
    """True when ``values`` is not empty and every value is an int or a float (a subclass of either too) and
    none is a bool; asked once for each distinct type among the values rather than once for each value."""
    kinds = set(map(type, values))
    return bool(kinds) and all(issubclass(kind, int | float) and not issubclass(kind, bool) for kind in kinds)


def _finite_sum(numbers: Sequence[float]) -> bool:
    """True when the sum of these numbers is finite. For single-precision numbers (a vector's), whose sum cannot
    overflow a double, that is exactly when each of them is; for others False may also mean a sum too large, or
    an int too large for a float, and the caller then looks at the numbers one by one."""
    try:
        return math.isfinite(sum(numbers))
    except OverflowError:
        return False


def json_text(value: Any, field_name: str) -> str:
    """The strict JSON text of ``value``; TypeError naming the field (and the path inside it) otherwise."""
    return json.dumps(_json_safe(value, field_name), ensure_ascii=False, allow_nan=False)


@overload
def vector(values: None) -> None: ...


@overload
def vector(values: VectorLike) -> Vector: ...


def vector(values: VectorLike | None) -> Vector | None:
    """A vector argument as pgvector's ``Vector`` (NumPy arrays are taken as they are, in float32)."""
    if values is None:
        return None
    if isinstance(values, Vector):
        return values
    if type(values).__module__ == "numpy" and type(values).__name__ == "ndarray":
        return Vector(cast(Any, values))
    return Vector(list(map(float, values)))


def finite_vector(values: VectorLike) -> Vector | None:
    """``values`` as a :func:`vector` when they are a non-empty sequence of numbers, each finite in single
    precision (what a vector column holds); None otherwise, for the caller to refuse or to send another way."""
    try:
        found = vector(values)
    except (TypeError, ValueError, OverflowError):
        return None
    numbers = found.to_list()
    return found if numbers and _finite_sum(numbers) else None


VECTOR_MAX_DIMENSIONS = 16000
"""The most elements pgvector's ``vector`` holds (its VECTOR_MAX_DIM)."""


def checked_vector(values: VectorLike, field_name: str) -> Vector:
    """``values`` as a :func:`finite_vector`; LocalValidationError (22023) naming the field otherwise, or (54000)
    when it has more than :data:`VECTOR_MAX_DIMENSIONS` numbers. pgvector's own refusals on the server (22000,
    54000) name no field, and a value that is not a number made Python's float() raise its own ValueError."""
    found = finite_vector(values)
    if found is None:
        raise LocalValidationError(
            f"field {field_name}: a vector must hold at least one number, each finite and within the range of a "
            "4-byte float", sqlstate="22023", field=field_name)
    dimensions = len(found.to_list())
    if dimensions > VECTOR_MAX_DIMENSIONS:
        raise LocalValidationError(
            f"field {field_name}: has {dimensions} dimensions; a vector holds at most {VECTOR_MAX_DIMENSIONS}",
            sqlstate="54000", field=field_name)
    return found


def _vector_list(value: Any) -> bool:
    """True for a non-empty list of ``Vector`` values: a ``vector[]`` argument, which %b sends in binary."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, Vector) for item in value)


def items(values: Iterable[V], field_name: str) -> list[V]:
    """An array argument as a list. One string is refused (LocalValidationError, 22023, naming the field), not
    split into its characters: a ``str`` is an iterable of strings to Python and to mypy."""
    if isinstance(values, str | bytes):
        raise LocalValidationError(f"field {field_name}: a list, not one string (pass [{values!r}])",
                                   sqlstate="22023", field=field_name)
    return list(values)


@overload
def texts(values: None, field_name: str) -> None: ...


@overload
def texts(values: Sequence[str], field_name: str) -> list[str]: ...


def texts(values: Sequence[str] | None, field_name: str) -> list[str] | None:
    """A text[] argument as a list, or None (the argument is left out and its SQL default applies) when not given.
    One string is refused, not split into its characters (a ``str`` is a ``Sequence[str]``): LocalValidationError
    (22023) naming the field. An element that is not a string is refused by the call's check of its arguments
    (:func:`_check_values`), naming its place."""
    return None if values is None else items(values, field_name)


def text_or_none(value: UUID | str | None) -> str | None:
    return None if value is None else str(value)


# --- calls -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape(Generic[T]):
    """How rows decode: the columns to select (None: all; none, ``()``: no column, the call is run for its
    effect) and the function that builds the result."""

    columns: Sequence[str] | None
    decode: Callable[[list[Row]], T]


def rows(model: type[M]) -> Shape[list[M]]:
    """Every row, as ``model``."""
    return Shape(tuple(model.model_fields), lambda found: [model.model_validate(row) for row in found])


def one(model: type[M]) -> Shape[M]:
    """Exactly one row, as ``model``."""
    return Shape(tuple(model.model_fields), lambda found: model.model_validate(_single(found)))


def optional(model: type[M]) -> Shape[M | None]:
    """The row as ``model``, or None when there is none."""
    return Shape(tuple(model.model_fields), lambda found: model.model_validate(found[0]) if found else None)


def scalar(kind: Callable[[Any], T]) -> Shape[T]:
    """The single value the function returns, converted by ``kind``."""
    return Shape(("value",), lambda found: kind(_single(found)["value"]))


def columns_of(model: type[BaseModel]) -> str:
    """The quoted column list of ``model``'s fields, for a statement that reads a table or view row by row. A
    statement names its columns rather than ``*``: a prepared ``select *`` fails once on each pooled connection
    with "cached plan must not change result type" after an upgrade adds a column to what it reads
    (docs/operations.md, "Upgrading while applications run")."""
    return ", ".join(sql.Identifier(name).as_string(None) for name in model.model_fields)


def raw() -> Shape[list[Row]]:
    """The rows as dictionaries by column name."""
    return Shape(None, lambda found: found)


def nothing() -> Shape[None]:
    """No result: the statement is run for its effect (a context, an authentication). A function's call reads no
    column of its result (``select from``): ``select *`` would fail once on each pooled connection with "cached
    plan must not change result type" after an upgrade changes what the function returns."""
    return Shape((), lambda _: None)


def _single(found: list[Row]) -> Row:
    if len(found) != 1:
        raise MemsubError(f"expected one row, the function returned {len(found)}")
    return found[0]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One statement ready to run and the decoding of its rows; ``binary`` asks for its result columns in
    PostgreSQL's binary format (a ``vector`` then arrives as 4 bytes a number, not as decimal text); ``vectors``
    says it needs pgvector's adapters on the connection. Its repr leaves ``params`` out: they may hold a context
    token, an API key or any secret a caller passes."""

    statement: sql.Composed | sql.SQL | bytes
    params: Sequence[Any] | Mapping[str, Any] = field(repr=False)
    decode: Callable[[list[Row]], T]
    vectors: bool = field(default=False)
    binary: bool = field(default=False)


Steps = Generator[Call[Any], Any, T]
"""Several calls whose arguments depend on earlier results, declared once: a generator that yields each call, is
sent its decoded result, and returns the outcome. The sync session drives it with plain calls, the async one with
awaited calls (:func:`method` binds it either way)."""


def function(name: str, arguments: Mapping[str, Any], shape: Shape[T], *, binary: bool = False) -> Call[T]:
    """A call of ``memsub.<name>`` with named arguments; arguments that are None take the SQL default.
    ``binary``: the result columns in binary format, pgvector's adapters registered first (for ``vector``
    results)."""
    given: list[tuple[str, str]] = []
    params: list[Any] = []
    vectors = False
    for argument, value in arguments.items():
        if value is None:
            continue
        placeholder = "%s"
        if value is NULL:
            value = None
        elif isinstance(value, Json):
            value, placeholder = json_text(value.value, argument), "%s::jsonb"
        elif isinstance(value, AsVector | Vector):
            value, vectors = checked_vector(value.values if isinstance(value, AsVector) else value, argument), True
        elif _vector_list(value):
            # vector[]: psycopg would send the array as text; %b sends it, and each vector, in binary
            vectors, placeholder = True, "%b"
        elif isinstance(value, UUID):
            value = str(value)
        elif isinstance(value, str | list):
            _check_strings(value, argument)
            if isinstance(value, list) and any(isinstance(item, UUID) for item in value):
                value = [str(item) if isinstance(item, UUID) else item for item in value]  # uuid[] arguments
            elif isinstance(value, str) and _is_timestamptz(name, argument):
                value = _iso_time_or_text(value)
        given.append((argument, placeholder))
        params.append(value)
    _check_signature(name, arguments)
    return Call(_function_statement(name, tuple(given), shape.columns), params, shape.decode, vectors or binary,
                binary)


def _is_timestamptz(name: str, argument: str) -> bool:
    """Whether ``argument`` of ``memsub.<name>`` is a ``timestamp with time zone`` (:mod:`memsub.signatures`)."""
    found = signatures.signature(name)
    return found is not None and found.types.get(argument) == "timestamp with time zone"


def _iso_time_or_text(value: str) -> datetime | str:
    """A time argument given as text: an ISO 8601 time as its datetime, UTC when it has no offset, as a naive
    ``datetime`` is (sent as text, the server read it in its session's TimeZone); other text as it is, for the
    server to read (``'yesterday'``)."""
    try:
        return parse_time(value)
    except ValueError:
        return value


def _check_signature(name: str, arguments: Mapping[str, Any]) -> None:
    """LocalValidationError naming the first argument ``memsub.<name>`` cannot take (:mod:`memsub.signatures`):
    one it has no default for left out (None; 23502), or a value its type cannot take (:func:`_check_values`)."""
    found = signatures.signature(name)
    if found is None:
        return
    for argument in found.required:
        if arguments.get(argument) is None:
            raise LocalValidationError(f"field {argument} is required (memsub.{name} has no default for it)",
                                       sqlstate="23502", field=argument)
    _check_values(found, arguments)


def checked(value: V, kind: str, field_name: str) -> V:
    """``value`` for a parameter of PostgreSQL type ``kind`` in a statement over a view, which no function
    signature covers: refused as :func:`function` refuses an argument (:func:`_mismatch`), naming the field."""
    if value is not None and value is not NULL:
        problem = _mismatch(kind, value)
        if problem is not None:
            message, sqlstate = problem
            raise LocalValidationError(f"field {field_name}: {message}", sqlstate=sqlstate, field=field_name)
    return value


def checked_limit(value: V, field_name: str = "limit") -> V:
    """A row limit of a statement over a view (:func:`checked` as a ``bigint``), refused when negative as LIMIT
    would refuse it (2201W), naming the field."""
    checked(value, "bigint", field_name)
    number = _integer_text(value) if isinstance(value, str) else value
    if isinstance(number, int) and number < 0:
        raise LocalValidationError(f"field {field_name}: must not be negative, not {number}", sqlstate="2201W",
                                   field=field_name)
    return value


def _check_values(found: signatures.Signature, arguments: Mapping[str, Any]) -> None:
    """LocalValidationError naming the first argument given a value its parameter's type cannot take
    (:func:`_mismatch`)."""
    for argument, kind in found.types.items():
        value = arguments.get(argument)
        checked(value, kind, argument)
        element = kind.removesuffix("[]")
        all_fit = _ELEMENTS_FIT.get(element) if kind.endswith("[]") else None
        if all_fit is not None and isinstance(value, list | tuple) and not all_fit(value):  # find the odd one
            for index, item in enumerate(value):
                checked(item, element, f"{argument}[{index}]")


_UUID_TEXT = "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
_UUID_LINES = re.compile(f"{_UUID_TEXT}(?:\n{_UUID_TEXT})*")


def _all_uuids(values: Sequence[Any]) -> bool:
    """True when every value is a UUID, or every one a UUID's usual text: one test of them all (a list of 100 ids
    in about 13 µs), since a read of many packets passes through here."""
    kinds = set(map(type, values))
    if kinds <= {UUID}:
        return True
    if kinds != {str}:
        return False
    joined = "\n".join(values)
    return joined.count("\n") == len(values) - 1 and _UUID_LINES.fullmatch(joined) is not None


def _all_texts(values: Sequence[Any]) -> bool:
    """True when every value is a string or a UUID (sent as its text), asked once per distinct type."""
    return set(map(type, values)) <= {str, UUID}


_ELEMENTS_FIT: dict[str, Callable[[Sequence[Any]], bool]] = {"uuid": _all_uuids, "text": _all_texts}
"""The element types of the arrays whose elements a call checks, each with the test that they all fit at once
(the common case): lists of ids and lists of names. A list that fails it is checked element by element, to name
the first that does not fit."""


_NUMBERS = ("double precision", "real", "numeric")
_TIMES = ("timestamp with time zone", "timestamp without time zone", "date")


def _mismatch(kind: str, value: Any) -> tuple[str, str] | None:
    """Why ``value`` cannot be a parameter of type ``kind``, and the SQLSTATE: None when it can, or when the kind is
    not checked here (JSON, vectors, bytea, composite types: their own code checks them).

    The server could not say it by name: a Python value of another kind is sent with its own type, and PostgreSQL
    then finds no function taking it (42883; a float or a boolean for an integer, a number for a text); a string
    is sent untyped, and fails its parameter's input function naming nothing (22P02 for ``'abc'`` as a uuid). A
    string the server reads as the parameter's type goes as it did (``'5'`` for an integer, ``'yes'`` for a
    boolean); one it cannot read is refused here. A string for a time or an interval is left to the server, whose
    reading of them (``'yesterday'``, ``'Jan 1 2026 PST'``, ``'P1D'``) no Python parser matches."""
    what = type(value).__name__
    if kind in signatures.INTEGER_RANGES:
        number = _integer_text(value) if isinstance(value, str) else value
        if type(number) is not int:
            return (f"{_brief(value)} is not an integer", "22P02") if isinstance(value, str) else \
                (f"an integer, not a {what} ({_brief(value)})", "22023")
        low, high = signatures.INTEGER_RANGES[kind]
        if not low <= number <= high:
            return f"{number} is out of range for {kind} ({low} to {high})", "22003"
    elif kind in _NUMBERS:
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                return f"{_brief(value)} is not a number", "22P02"
        elif isinstance(value, bool) or not isinstance(value, int | float | SupportsFloat):
            return f"a number, not a {what} ({_brief(value)})", "22023"
    elif kind == "boolean":
        if isinstance(value, str):
            if not _BOOLEAN_TEXT.fullmatch(value.strip().lower()):
                return f"{_brief(value)} is not true or false", "22P02"
        elif not isinstance(value, bool):
            return f"true or false, not a {what} ({_brief(value)})", "22023"
    elif kind in ("text", "name"):
        if not isinstance(value, str | UUID):
            return f"a string, not a {what} ({_brief(value)})", "22023"
    elif kind == "uuid":
        if isinstance(value, str):
            try:
                UUID(value)
            except ValueError:
                return f"{_brief(value)} is not a UUID", "22P02"
        elif not isinstance(value, UUID):
            return f"a UUID, not a {what} ({_brief(value)})", "22023"
    elif kind in _TIMES:
        if not isinstance(value, str | date):
            return f"a datetime, not a {what} ({_brief(value)})", "22023"
    elif kind == "interval":
        if not isinstance(value, str | timedelta):
            return f"a timedelta, not a {what} ({_brief(value)})", "22023"
    elif kind.endswith("[]"):
        if not isinstance(value, list | tuple):
            return f"a list, not a {what} ({_brief(value)})", "22023"
    return None


# What PostgreSQL's boolean input reads (case and surrounding spaces aside): true, false, yes, no and any prefix
# of them, on, off, 1, 0.
_BOOLEAN_TEXT = re.compile(r"t(r(ue?)?)?|f(a(l(se?)?)?)?|y(es?)?|no?|on|off?|1|0")


def _integer_text(value: str) -> int | None:
    """The integer PostgreSQL reads in ``value`` (decimal, or 0x/0o/0b with underscores), or None."""
    for base in (10, 0):
        try:
            return int(value, base)
        except ValueError:
            continue
    return None


def _brief(value: Any) -> str:
    """A value's repr, cut to fit a message."""
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


@functools.lru_cache(maxsize=4096)
def _function_statement(name: str, arguments: tuple[tuple[str, str], ...],
                        columns: tuple[str, ...] | None) -> bytes:
    """The statement text of a call of ``memsub.<name>`` with these named arguments (each with its placeholder:
    ``%s``, ``%s::jsonb`` for JSON, ``%b`` for binary) and result columns, composed once per shape and kept: a
    call then costs the binding of its values only."""
    parts = [sql.SQL("{} => " + placeholder).format(sql.Identifier("p_" + argument))
             for argument, placeholder in arguments]
    target = sql.SQL("{}({})").format(sql.Identifier("memsub", name), sql.SQL(", ").join(parts))
    if columns == ("value",):
        statement: sql.Composed = sql.SQL("select {} as value").format(target)
    elif columns is None:
        statement = sql.SQL("select * from {}").format(target)
    elif not columns:  # run for its effect: whatever the function returns, the statement's result stays the same
        statement = sql.SQL("select from {}").format(target)
    else:
        statement = sql.SQL("select {} from {}").format(
            sql.SQL(", ").join(sql.Identifier(column) for column in columns), target)
    return statement.as_bytes(None)


def query(statement: sql.Composed | sql.SQL | str, params: Sequence[Any] | Mapping[str, Any],
          shape: Shape[T]) -> Call[T]:
    """A call of a fixed statement (a view, or a caller's own parameterized SQL), its parameters by position
    (``%s``) or by name (``%(name)s``, a mapping). Text PostgreSQL cannot hold, in a string or a list of strings,
    is refused (:func:`checked_text`) naming the parameter: its key, the argument a positional placeholder stands
    for in a named-argument call (``p_key => %s``), or its position. When the statement calls one memsub function
    by named arguments, each argument is checked against its parameter's type as :func:`function` does
    (:func:`_check_values`). (A JSON parameter: :func:`strict_jsonb`.)"""
    text = statement.encode() if isinstance(statement, str) else statement
    values: dict[Any, Any] | list[Any] = dict(params) if isinstance(params, Mapping) else list(params)
    called, placeholders = _named_arguments(text) if isinstance(text, bytes) else (None, ())
    arguments: dict[str, Any] = {}
    if isinstance(values, dict):
        places: list[Any] = list(values)
        names: Sequence[str] = places
        arguments = {argument: values[key] for argument, key in placeholders if key in values}
    else:
        places = list(range(len(values)))
        found = [argument for argument, key in placeholders if not key]
        names = found if len(found) == len(values) else [f"parameter {n}" for n in range(1, len(values) + 1)]
        if names is found:
            arguments = dict(zip(found, values, strict=True))
    for place, name in zip(places, names, strict=True):
        _check_strings(values[place], name)
    signature = signatures.signature(called) if called and arguments else None
    if signature is not None:
        _check_values(signature, arguments)
    params_sent = values.values() if isinstance(values, dict) else values
    return Call(text, values, shape.decode, any(isinstance(p, Vector) or _vector_list(p) for p in params_sent))


@functools.lru_cache(maxsize=1024)
def _named_arguments(statement: bytes) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """The memsub function a statement calls, when it calls one only, and the argument each of its placeholders
    stands for (``p_key => %s``: key; ``p_key => %(name)s``: key and name), in order."""
    functions = set(re.findall(rb"memsub\.(\w+)\s*\(", statement))
    called = functions.pop().decode() if len(functions) == 1 else None
    return called, tuple((argument.decode(), key.decode())
                         for argument, key in re.findall(rb"p_(\w+)\s*=>\s*%(?:\((\w+)\))?[sbt]", statement))


def strict_jsonb(value: Any, field_name: str) -> psycopg_json.Jsonb:
    """A jsonb parameter of :func:`query`, serialized now by :func:`json_text`: a value that is not JSON raises
    TypeError, and text jsonb cannot hold LocalValidationError, naming the field (and the path inside it)."""
    return psycopg_json.Jsonb(json_text(value, field_name), dumps=_as_serialized)


def _as_serialized(text: Any) -> str:
    """The dumps of a JSON parameter serialized already (:func:`strict_jsonb`)."""
    return str(text)


ContextRole = Literal["tenant_admin", "platform_admin"]
"""The roles a context may ask for (memsub.context_roles())."""


def set_context(tenant_id: UUID | str | None, org_id: UUID | str | None, user_id: UUID | str | None,
                roles: Sequence[str], session_id: str | None) -> Call[None]:
    """memsub.set_context for this transaction. The tenant is always sent (NULL is a platform admin's context);
    the other arguments only when given (:func:`function`), so the usual context binds one to three values and
    no array."""
    return _in_output_formats(function("set_context", {
        "tenant_id": NULL if tenant_id is None else tenant_id, "org_id": org_id, "user_id": user_id,
        "roles": texts(roles, "roles") or None, "session_id": session_id}, nothing()))


def set_context_signed(token: str) -> Call[None]:
    """memsub.set_context_signed for this transaction."""
    return _in_output_formats(query("select from memsub.set_context_signed(%(token)s)", {"token": token},
                                    nothing()))


_OUTPUT_FORMATS = output_format_settings(local=True).encode()


def _in_output_formats(context: Call[None]) -> Call[None]:
    """The context ``context`` sets, in a statement that also sets memsub's output formats (:data:`memsub.
    connection.OUTPUT_FORMATS`) for the transaction: every transaction the client runs begins with its context,
    so its times arrive in ISO 8601 and its floats with all their digits whatever the login's defaults, and the
    server session is left as it was (a transaction-mode pooler hands it to another client next)."""
    statement = context.statement
    assert isinstance(statement, bytes) and statement.startswith(b"select from ")
    return replace(context, statement=b"select " + _OUTPUT_FORMATS + b" from " + statement.removeprefix(
        b"select from "))


# --- times on a connection ------------------------------------------------------------------------------------

class _NaiveIsUtc(Dumper):
    """Dumps a datetime after reading one without an offset as UTC (psycopg would send it as a ``timestamp`` that
    the server places in its session's TimeZone); mixed into psycopg's text and binary datetime dumpers."""

    def get_key(self, obj: datetime, format: PyFormat) -> DumperKey:
        return self.cls  # naive or aware: the same dumper

    def upgrade(self, obj: datetime, format: PyFormat) -> Dumper:
        return self

    def dump(self, obj: datetime) -> Buffer | None:
        parent: Dumper = super()  # type: ignore[assignment]  # the psycopg dumper mixed in after this class
        return parent.dump(as_utc(obj))


class _UtcDatetimeDumper(_NaiveIsUtc, DatetimeDumper):
    """A datetime as timestamptz text, one without an offset read as UTC."""


class _UtcDatetimeBinaryDumper(_NaiveIsUtc, DatetimeBinaryDumper):
    """A datetime as binary timestamptz, one without an offset read as UTC."""


_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # a binary timestamptz counts microseconds from it
_ISO_TIMESTAMPTZ = re.compile(rb"(\d+)-(\d+)-(\d+)[ T](\d+):(\d+):(\d+)(?:\.(\d+))?"  # date, time, fraction
                              rb"([-+])(\d+)(?::(\d+))?(?::(\d+))?( BC)?")  # offset (h, m, s), era
_CYCLE = 400  # years after which the Gregorian calendar repeats, leap days included


def _utc_from_iso(data: bytes) -> datetime | None:
    """A timestamptz in ISO text (DateStyle ISO, any offset, `` BC``) as the instant in UTC, or None when it is
    not one or that instant is outside years 1 to 9999. Computed 400 years (one calendar cycle) away from the
    edges, so that a local time in year 10000 or 1 BC whose instant is inside them is read."""
    found = _ISO_TIMESTAMPTZ.fullmatch(data)
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction, sign, hours, minutes, seconds, bc = found.groups()
    astronomical = 1 - int(year) if bc else int(year)
    shift = 0  # whole cycles added to the year: into years 1 to 9999, where datetime computes
    if astronomical > 9999:
        shift = -_CYCLE * ((astronomical - 9999 + _CYCLE - 1) // _CYCLE)
    elif astronomical < 1:
        shift = _CYCLE * ((1 - astronomical + _CYCLE - 1) // _CYCLE)
    offset = timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
    micros = int((fraction or b"0").ljust(6, b"0")[:6])
    try:
        local = datetime(astronomical + shift, int(month), int(day), int(hour), int(minute), int(second), micros,
                         tzinfo=UTC)
        instant = local - offset if sign == b"+" else local + offset
        return instant.replace(year=instant.year - shift)
    except (ValueError, OverflowError):
        return None


class _TimeLoader(Loader):
    """What the client's time loaders share: psycopg's own loader of the type (``_inner``), and the DateStyle the
    server last reported when it is not ISO (``_style``). psycopg reads times as text in that style, ISO only
    for a timestamptz; a login whose default is another style still gets ISO in the client's transactions, whose
    context statement sets it for the transaction (_in_output_formats), and the loaders read those times."""

    def __init__(self, oid: int, context: AdaptContext | None = None) -> None:
        super().__init__(oid, context)
        self._inner = psycopg.adapters.get_loader(oid, self.format)(oid, context)  # type: ignore[misc]
        style = self.connection.info.parameter_status("DateStyle") if self.connection is not None else None
        self._style = None if style is None or style.startswith("ISO") else style


class _EdgeTimestamptzLoader(_TimeLoader):
    """psycopg's timestamptz loader (the time in the session's TimeZone), and for a time it cannot place there,
    which within a day of year 1 or 9999 falls outside Python's datetime (``timestamp too large (after year
    10K)``, ``BC date``), the instant in UTC. Stored times are held to years 1 to 9999 in UTC, so every stored
    time reads."""

    def load(self, data: Buffer) -> Any:
        if self._style is not None and self.format == pq.Format.TEXT:
            found = _utc_from_iso(bytes(data))
            if found is None:
                raise psycopg.DataError(
                    f"cannot read the time {bytes(data).decode(errors='replace')!r} in DateStyle {self._style!r}: "
                    "memsub reads times in ISO 8601 (set DateStyle to ISO for the transaction, or for the login)")
            return found
        try:
            return self._inner.load(data)
        except psycopg.DataError:
            found = self._instant(bytes(data))
            if found is None:
                raise
            return found

    def _instant(self, data: bytes) -> datetime | None:
        return _utc_from_iso(data)


class _EdgeTimestamptzBinaryLoader(_EdgeTimestamptzLoader):
    """The binary twin of :class:`_EdgeTimestamptzLoader`: microseconds from 2000-01-01 UTC."""

    format = pq.Format.BINARY

    def _instant(self, data: bytes) -> datetime | None:
        try:
            return _PG_EPOCH + timedelta(microseconds=int.from_bytes(data, "big", signed=True))
        except OverflowError:  # infinity, or beyond Python's datetime in UTC too
            return None


_TIMESTAMP_OID = psycopg.postgres.types["timestamp"].oid
_ISO_TIMESTAMP = re.compile(rb"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")


class _IsoTimestampLoader(_TimeLoader):
    """psycopg's timestamp (without time zone) loader, which reads the text in the DateStyle the server last
    reported; under another style than ISO, the client's transactions still get ISO (_in_output_formats), read
    here."""

    def load(self, data: Buffer) -> Any:
        if self._style is None:
            return self._inner.load(data)
        found = _ISO_TIMESTAMP.fullmatch(bytes(data))
        try:
            if found is None:
                raise ValueError("not an ISO 8601 time of years 1 to 9999")
            year, month, day, hour, minute, second, fraction = found.groups()
            return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                            int((fraction or b"0").ljust(6, b"0")))
        except ValueError:
            raise psycopg.DataError(
                f"cannot read the time {bytes(data).decode(errors='replace')!r} in DateStyle {self._style!r}: "
                "memsub reads times in ISO 8601 (set DateStyle to ISO for the transaction, or for the login)"
            ) from None


def register_time_type(adapters: AdaptersMap) -> None:
    """Make ``adapters`` send every datetime as timestamptz, reading one without an offset as UTC, and read every
    timestamptz Python's datetime holds in UTC, whatever the session's TimeZone (:class:`_EdgeTimestamptzLoader`)."""
    adapters.register_dumper(datetime, _UtcDatetimeDumper)
    adapters.register_dumper(datetime, _UtcDatetimeBinaryDumper)  # last registered: the one %s uses, as psycopg's
    adapters.register_loader(_TIMESTAMPTZ_OID, _EdgeTimestamptzLoader)
    adapters.register_loader(_TIMESTAMPTZ_OID, _EdgeTimestamptzBinaryLoader)
    adapters.register_loader(_TIMESTAMP_OID, _IsoTimestampLoader)


def _with_times(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    """Register the time adapter on ``connection`` unless it is there (a lookup, no round trip)."""
    if connection.adapters.get_dumper(datetime, PyFormat.AUTO) is not _UtcDatetimeBinaryDumper:
        register_time_type(connection.adapters)


# --- the vector type on a connection ---------------------------------------------------------------------------

_VECTOR_SCHEMA = ("select n.nspname from pg_catalog.pg_extension e join pg_catalog.pg_namespace n "
                  "on n.oid = e.extnamespace where e.extname = 'vector'")


def _has_vector(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    try:
        connection.adapters.get_dumper(Vector, PyFormat.AUTO)
    except psycopg.ProgrammingError:
        return False
    return True


def _vector_name(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], row: Any) -> str:
    schema = row["nspname"] if isinstance(row, dict) else row[0]
    return sql.SQL("{}.vector").format(sql.Identifier(schema)).as_string(connection)


def register_vector_type(connection: psycopg.Connection[Any]) -> bool:
    """Register pgvector's adapters for ``vector`` on a connection; False when the extension is not installed.

    The type is looked up in whichever schema holds the extension (``public`` by default), so it is found
    whatever the connection's search_path is. Runs catalog queries in the connection's current transaction.
    """
    row = connection.execute(_VECTOR_SCHEMA).fetchone()
    if row is None:
        return False
    register_vector_info(connection, TypeInfo.fetch(connection, _vector_name(connection, row)))
    return True


async def register_vector_type_async(connection: psycopg.AsyncConnection[Any]) -> bool:
    """The async twin of :func:`register_vector_type`."""
    row = await (await connection.execute(_VECTOR_SCHEMA)).fetchone()
    if row is None:
        return False
    register_vector_info(connection, await TypeInfo.fetch(connection, _vector_name(connection, row)))
    return True


def configure(connection: psycopg.Connection[Row]) -> None:
    """New pool connections learn pgvector's ``vector`` type (when the extension is there and readable)."""
    try:
        register_vector_type(connection)
    except psycopg.Error:
        pass  # e.g. no permission to read the catalog: registered lazily instead, or the call reports the error
    finally:
        connection.rollback()  # the pool wants an idle connection back


async def configure_async(connection: psycopg.AsyncConnection[Row]) -> None:
    """The async twin of :func:`configure`."""
    try:
        await register_vector_type_async(connection)
    except psycopg.Error:
        pass
    finally:
        await connection.rollback()


# --- executors -------------------------------------------------------------------------------------------------

def _send_rest(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> PQGen[None]:
    """Send what a pipelined statement left in libpq's output buffer, reading the server's answers meanwhile
    (psycopg's ``send``, as its pipeline uses before a fetch). In pipeline mode the connection does not block: a
    statement larger than the socket's buffers (arguments of megabytes) is sent in parts, each when the socket can
    take it, and ``Pipeline.sync()`` sends one part before it waits for the answer, which the server, still
    reading the statement, never gives: the call would hang, and its connection with it."""
    sending: PQGen[None] = psycopg_generators.send(connection.pgconn)
    return sending


def execute(connection: psycopg.Connection[Row], call: Call[T], pipeline: psycopg.Pipeline | None = None) -> T:
    """Run ``call`` in the connection's current transaction. In a block's ``pipeline`` the call ends with a Sync
    (where its results would otherwise be asked for with a Flush: the same round trip), so that between calls the
    server sees the transaction as idle in it, which is what it is: the login's
    ``idle_in_transaction_session_timeout`` applies, and pg_stat_activity shows it so. Without a Sync the
    server would take the block for one statement still running, for as long as the block lasts.

    The statement is sent whole before the Sync (:func:`_send_rest`): psycopg's pipeline sync would otherwise wait
    for the answer to a statement larger than the socket's buffers that it had only begun to send."""
    if pipeline is not None:  # a call after one that failed or was interrupted: the server would refuse it
        _refuse_aborted(connection)
    _with_times(connection)
    try:
        if call.vectors and not _has_vector(connection):
            register_vector_type(connection)
        cursor = connection.execute(call.statement, call.params, binary=call.binary)
        if pipeline is not None:
            connection.wait(_send_rest(connection))
            pipeline.sync()
        found = cursor.fetchall()
    except psycopg.Error as error:
        raise from_database_error(error) from error
    return call.decode(found)


async def execute_async(connection: psycopg.AsyncConnection[Row], call: Call[T],
                        pipeline: psycopg.AsyncPipeline | None = None) -> T:
    """The async twin of :func:`execute`."""
    if pipeline is not None:
        _refuse_aborted(connection)
    _with_times(connection)
    try:
        if call.vectors and not _has_vector(connection):
            await register_vector_type_async(connection)
        cursor = await connection.execute(call.statement, call.params, binary=call.binary)
        if pipeline is not None:
            await connection.wait(_send_rest(connection))
            await pipeline.sync()
        found = await cursor.fetchall()
    except psycopg.Error as error:
        raise from_database_error(error) from error
    return call.decode(found)


@contextmanager
def _taking(pool: ConnectionPool[Any] | AsyncConnectionPool[Any]) -> Iterator[None]:
    """Taking a connection from ``pool``: one that cannot reach the server in time raises ConnectionFailed, a
    closed one (or an async one not opened yet) StateError, instead of the pool's own errors."""
    try:
        yield
    except PoolTimeout as error:
        raise ConnectionFailed(f"cannot connect: no connection to the server within {pool.timeout:g} s "
                               f"({error})") from error
    except PoolClosed as error:
        if "not open" in str(error):
            raise StateError("this AsyncSubstrate is not open yet: use `async with AsyncSubstrate(...)` or "
                             "`await substrate.open()` first") from error
        raise StateError("this substrate is closed: its calls need a new Substrate(...)") from error


def _to_check(pool: ConnectionPool[Any] | AsyncConnectionPool[Any], attempt: int,
              connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether a connection just taken from ``pool`` (its ``attempt``-th) needs a round trip before it is used:
    the server sent it something while it was idle (:func:`_spoke_while_idle`), and the pool may still hand out
    another. When it fails the round trip, it is closed and given back (:func:`_replacing`)."""
    return attempt < pool.max_size and _spoke_while_idle(connection)


def _replacing(pool: ConnectionPool[Any] | AsyncConnectionPool[Any]) -> None:
    logger.info("pool %r: the server ended an idle connection, which is replaced", pool.name)


def _spoke_while_idle(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether the server sent something to (or closed) ``connection`` while it sat idle in the pool, which it does
    when it ends the session (a restart, ``pg_terminate_backend``, ``idle_session_timeout``: a FATAL message, then
    end of file). One look at the socket, no round trip; true also for a notice or a notification, so what it says
    is confirmed by a round trip (:func:`pooled`)."""
    if connection.closed:
        return True
    try:
        descriptor = connection.fileno()
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(descriptor, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([descriptor], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


@contextmanager
def pooled(pool: ConnectionPool[psycopg.Connection[RowT]]) -> Iterator[psycopg.Connection[RowT]]:
    """A pooled connection; a pool that cannot reach the server raises ConnectionFailed, not PoolTimeout.

    A connection the server ended while it sat in the pool is not handed out: it is closed and given back (the pool
    replaces it) and another one taken, at most once per connection the pool may hold. Telling costs a look at the
    socket (:func:`_spoke_while_idle`), and a round trip only when the server did send something."""
    for attempt in range(pool.max_size + 1):
        with _taking(pool):
            connection = pool.getconn()
        if not _to_check(pool, attempt, connection):
            break
        try:
            ConnectionPool.check_connection(connection)
        except psycopg.Error:
            _replacing(pool)
            connection.close()
            pool.putconn(connection)
            continue
        break
    try:
        yield connection
    finally:
        pool.putconn(connection)


@asynccontextmanager
async def pooled_async(pool: AsyncConnectionPool[psycopg.AsyncConnection[RowT]]
                       ) -> AsyncIterator[psycopg.AsyncConnection[RowT]]:
    """The async twin of :func:`pooled`."""
    for attempt in range(pool.max_size + 1):
        with _taking(pool):
            connection = await pool.getconn()
        if not _to_check(pool, attempt, connection):
            break
        try:
            await AsyncConnectionPool.check_connection(connection)
        except psycopg.Error:
            _replacing(pool)
            await connection.close()
            await pool.putconn(connection)
            continue
        break
    try:
        yield connection
    finally:
        await pool.putconn(connection)


class Pipeline:
    """``connection.pipeline()`` (sync or async), raising the error raised in the block. psycopg closes a pipeline
    with a Sync, which fails after an error (PipelineAborted); with the block's error already on its way out, psycopg
    logs that failure as a warning, which an application then prints next to its own report of the error. The
    pipeline is closed as if the block had ended, and the block's error goes on."""

    def __init__(self, connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
        self._pipeline: Any = connection.pipeline()

    def __enter__(self) -> Any:
        return self._pipeline.__enter__()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        with _closing_error_of(error):
            self._pipeline.__exit__(None, None, None)

    async def __aenter__(self) -> Any:
        return await self._pipeline.__aenter__()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        with _closing_error_of(error):
            await self._pipeline.__aexit__(None, None, None)


@contextmanager
def _closing_error_of(error: BaseException | None) -> Iterator[None]:
    """The error of closing a pipeline raised, unless the block's ``error`` is being raised already."""
    try:
        yield
    except psycopg.Error:
        if error is None:
            raise


def _refuse_aborted(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    """Raise :class:`TransactionAborted` for a block whose transaction a failed or interrupted call aborted:
    PostgreSQL answers the COMMIT of such a transaction with a rollback, which psycopg does not report, so a block
    that caught the call's error and ended normally would pass for committed with none of its writes kept; and it
    refuses every later statement with a bare "current transaction is aborted", which a call is spared by raising
    this before anything is sent."""
    if connection.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
        raise TransactionAborted("a call of this block failed or was interrupted, which aborted its transaction: "
                                 "nothing of this block was committed (a block is one transaction; per_call=True "
                                 "runs each call in its own)")


@contextmanager
def transaction_in_pipeline(connection: psycopg.Connection[RowT]) -> Iterator[psycopg.Pipeline]:
    """A transaction whose BEGIN (which psycopg sends before a transaction's first statement) travels in pipeline
    mode with the block's first statements; committed at the end of the block, rolled back after an error, which is
    raised as it was (:class:`Pipeline`). psycopg's ``connection.transaction()`` would nest pipelines of its own,
    whose closing logs a warning for an error the block raises. For a connection not in autocommit mode. Yields
    the pipeline, which each call of the block syncs (:func:`execute`)."""
    if connection.autocommit:
        raise ValueError("transaction_in_pipeline needs a connection that is not in autocommit mode")
    try:
        with Pipeline(connection) as pipeline:
            yield pipeline
        _refuse_aborted(connection)
        connection.commit()
    except BaseException:
        # The error is what the block reports; a connection that cannot even roll back is left to the pool, which
        # discards a broken one.
        with contextlib.suppress(psycopg.Error):
            if not connection.closed:
                connection.rollback()
        raise


@asynccontextmanager
async def transaction_in_pipeline_async(connection: psycopg.AsyncConnection[RowT]
                                        ) -> AsyncIterator[psycopg.AsyncPipeline]:
    """The async twin of :func:`transaction_in_pipeline`."""
    if connection.autocommit:
        raise ValueError("transaction_in_pipeline needs a connection that is not in autocommit mode")
    try:
        async with Pipeline(connection) as pipeline:
            yield pipeline
        _refuse_aborted(connection)
        await connection.commit()
    except BaseException:
        with contextlib.suppress(psycopg.Error):
            if not connection.closed:
                await connection.rollback()
        raise


@contextmanager
def _one_sync(connection: psycopg.Connection[RowT]) -> Iterator[None]:
    """A pipeline closed by one Sync, in autocommit mode: the statements sent inside form one transaction, which
    the Sync commits (or rolls back after an error), with no BEGIN or COMMIT to send and wait for. The
    connection's autocommit setting is put back afterwards; on a connection already in autocommit mode (the
    adapters' pools make them so) nothing is switched, each switch being a call into psycopg's wait loop."""
    switched = not connection.autocommit
    if switched:
        connection.autocommit = True
    try:
        with Pipeline(connection):
            yield
    except BaseException:  # a database error, or an interruption (Ctrl-C) psycopg cancelled on the server
        _forget_prepared(connection)
        raise
    finally:
        if switched and not connection.closed:
            connection.autocommit = False


# After a statement of a pipeline fails, the server skips the rest of it up to its Sync, and with it the Parse of
# any statement psycopg was preparing there (it prepares a statement the sixth time it runs it). psycopg takes
# that statement for prepared all the same: every later run of it on the connection would fail with "prepared
# statement does not exist". A run interrupted meanwhile (a cancelled task, a timeout, Ctrl-C: psycopg cancels the
# running statement on the server, which fails it the same way) leaves the same gap. psycopg forgets its prepared
# statements, and deallocates them on the server, when it rolls a transaction back; a pipeline of one Sync commits
# or rolls back on the server alone, so after a failed or interrupted one a transaction is opened and rolled back
# for that (tests/foundation/test_per_call_transaction.py).

def _forget_prepared(connection: psycopg.Connection[Any]) -> None:
    """Forget the statements psycopg prepared on ``connection`` (idle, in autocommit mode, after a failed or
    interrupted pipeline); a connection that fails meanwhile is left to the pool, which discards a broken one."""
    with contextlib.suppress(psycopg.Error):
        with connection.transaction(force_rollback=True):
            pass


async def _forget_prepared_async(connection: psycopg.AsyncConnection[Any]) -> None:
    """The async twin of :func:`_forget_prepared`."""
    with contextlib.suppress(psycopg.Error):
        async with connection.transaction(force_rollback=True):
            pass


@asynccontextmanager
async def _one_sync_async(connection: psycopg.AsyncConnection[RowT]) -> AsyncIterator[None]:
    """The async twin of :func:`_one_sync`."""
    switched = not connection.autocommit
    if switched:
        await connection.set_autocommit(True)
    try:
        async with Pipeline(connection):
            yield
    except BaseException:  # also a cancelled task or a timeout, which psycopg cancelled on the server
        await _forget_prepared_async(connection)
        raise
    finally:
        if switched and not connection.closed:
            await connection.set_autocommit(False)




def rows_in_context(pool: ConnectionPool[psycopg.Connection[RowT]], context: Call[None],
                    calls: Sequence[Call[Any]]) -> list[list[RowT]]:
    """The rows of each call, all in one transaction with the context ``context`` sets: the context and the
    calls travel as one pipeline closed by one Sync (one round trip), which commits them together or, after an
    error, keeps none of them; the connection goes back to the pool before this returns, its prepared
    statements forgotten after a database error (:func:`_one_sync`). A database error is raised as psycopg
    raises it; a pool that cannot hand out a connection in time raises ConnectionFailed."""
    with pooled(pool) as connection:
        _with_times(connection)
        if any(call.vectors for call in calls) and not _has_vector(connection):
            register_vector_type(connection)
            connection.commit()
        with _one_sync(connection):
            connection.execute(context.statement, context.params)
            cursors = [connection.execute(call.statement, call.params, binary=call.binary) for call in calls]
        return [cursor.fetchall() for cursor in cursors]


async def rows_in_context_async(pool: AsyncConnectionPool[psycopg.AsyncConnection[RowT]], context: Call[None],
                                calls: Sequence[Call[Any]]) -> list[list[RowT]]:
    """The async twin of :func:`rows_in_context`."""
    async with pooled_async(pool) as connection:
        _with_times(connection)
        if any(call.vectors for call in calls) and not _has_vector(connection):
            await register_vector_type_async(connection)
            await connection.commit()
        async with _one_sync_async(connection):
            await connection.execute(context.statement, context.params)
            cursors = [await connection.execute(call.statement, call.params, binary=call.binary) for call in calls]
        return [await cursor.fetchall() for cursor in cursors]


def execute_in_context(pool: ConnectionPool[psycopg.Connection[Row]], context: Call[None], call: Call[T]) -> T:
    """Run ``call`` in a transaction of its own (:func:`rows_in_context`); database errors become memsub
    errors."""
    try:
        found = rows_in_context(pool, context, [call])
    except psycopg.Error as error:
        raise from_database_error(error) from error
    return call.decode(found[0])


async def execute_in_context_async(pool: AsyncConnectionPool[psycopg.AsyncConnection[Row]], context: Call[None],
                                   call: Call[T]) -> T:
    """The async twin of :func:`execute_in_context`."""
    try:
        found = await rows_in_context_async(pool, context, [call])
    except psycopg.Error as error:
        raise from_database_error(error) from error
    return call.decode(found[0])


# --- sessions --------------------------------------------------------------------------------------------------

ConnectionT = TypeVar("ConnectionT")
PoolT = TypeVar("PoolT")
PipelineT = TypeVar("PipelineT")


class _Session(Generic[ConnectionT, PoolT, PipelineT]):
    """Runs calls either in the transaction of its ``with`` block (``connection``, and the block's ``pipeline``,
    which each call syncs) or, per call, in a short transaction of its own (``pool`` and ``context``). Unusable
    once its block has ended."""

    def __init__(self, connection: ConnectionT | None = None, *, pool: PoolT | None = None,
                 context: Call[None] | None = None, pipeline: PipelineT | None = None) -> None:
        self._connection = connection
        self._pool = pool
        self._context = context
        self._pipeline = pipeline
        self._open = True

    @property
    def per_call(self) -> bool:
        """True when each call runs in a transaction of its own."""
        return self._connection is None

    @property
    def connection(self) -> ConnectionT:
        """The connection of the block's transaction (not in per-call mode)."""
        self._check_open()
        if self._connection is None:
            raise SessionClosed("a per-call session holds no connection: each call runs in a transaction of its own")
        return self._connection

    def _check_open(self) -> None:
        if not self._open:
            raise SessionClosed("this session's block has ended: open a new one with substrate.tenant(...)")

    def _close(self) -> None:
        self._open = False
        self._connection = None
        self._pool = None
        self._pipeline = None

    def _per_call(self) -> tuple[PoolT, Call[None]]:
        assert self._pool is not None and self._context is not None
        return self._pool, self._context


SessionOf = TypeVar("SessionOf", bound=_Session[Any, Any, Any])


@contextmanager
def ending(session: SessionOf) -> Iterator[SessionOf]:
    """``session`` for a block (sync or async) after which it is unusable."""
    try:
        yield session
    finally:
        session._close()


class SyncSession(_Session[psycopg.Connection[Row], ConnectionPool[psycopg.Connection[Row]], psycopg.Pipeline]):
    """A session on a sync connection or pool. A call holds the session's lock from its check to its end, and the
    block's end takes it before anything else: a call another thread started runs whole in the block's
    transaction, or raises SessionClosed, never on the connection once it is back in the pool."""

    def __init__(self, connection: psycopg.Connection[Row] | None = None, *,
                 pool: ConnectionPool[psycopg.Connection[Row]] | None = None, context: Call[None] | None = None,
                 pipeline: psycopg.Pipeline | None = None) -> None:
        super().__init__(connection, pool=pool, context=context, pipeline=pipeline)
        self._lock = threading.RLock()

    def _close(self) -> None:
        with self._lock:
            super()._close()

    def _run(self, call: Call[T]) -> T:
        with self._lock:
            self._check_open()
            if self._connection is not None:
                return execute(self._connection, call, self._pipeline)
            pool, context = self._per_call()
        return execute_in_context(pool, context, call)  # holds no connection of the session's: not under its lock

    def _drive(self, steps: Steps[T]) -> T:
        try:
            call = next(steps)
            while True:
                call = steps.send(self._run(call))
        except StopIteration as done:
            return cast(T, done.value)


class AsyncSession(_Session[psycopg.AsyncConnection[Row], AsyncConnectionPool[psycopg.AsyncConnection[Row]],
                           psycopg.AsyncPipeline]):
    """A session on an async connection or pool."""

    async def _run(self, call: Call[T]) -> T:
        self._check_open()
        if self._connection is not None:
            return await execute_async(self._connection, call, self._pipeline)
        return await execute_in_context_async(*self._per_call(), call)

    async def _drive(self, steps: Steps[T]) -> T:
        try:
            call = next(steps)
            while True:
                call = steps.send(await self._run(call))
        except StopIteration as done:
            return cast(T, done.value)


# --- areas: one namespace per memory area, the same on both sessions ------------------------------------------

SessionT = TypeVar("SessionT", bound="SyncSession | AsyncSession")


class Area(Generic[SessionT]):
    """One memory area's calls, the namespace a session exposes for it (``session.memory``, ``session.graph``).

    An area module declares each call once, as a :class:`Method` of its area class; the sync session's namespace
    runs the calls directly and the async session's awaits them (the area class is generic in the session kind).
    A namespace runs its calls through its session, so it is unusable once the session's block has ended."""

    __slots__ = ("_session",)

    def __init__(self, session: SessionT) -> None:
        self._session = session

    @classmethod
    def methods(cls) -> dict[str, Method[..., Any]]:
        """The declared calls of this area by method name."""
        found: dict[str, Method[..., Any]] = {}
        for klass in reversed(cls.__mro__):
            found.update({name: value for name, value in vars(klass).items() if isinstance(value, Method)})
        return found


class Method(Generic[P, T]):
    """A namespace (or session) method that runs the call ``builder`` declares; a builder that is a generator
    (:data:`Steps`) is driven call by call. Read on a sync session or its areas it is a plain method, on an async
    one a coroutine method."""

    def __init__(self, builder: Callable[P, Call[T]] | Callable[P, Steps[T]]) -> None:
        self.builder: Callable[..., Any] = builder
        self.steps = inspect.isgeneratorfunction(builder)
        self.name = builder.__name__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Method[P, T]: ...

    @overload
    def __get__(self, instance: Area[SyncSession] | SyncSession, owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(self, instance: Area[AsyncSession] | AsyncSession,
                owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, instance: Any, owner: type[Any]) -> Any:
        if instance is None:
            return self
        session: SyncSession | AsyncSession = instance._session if isinstance(instance, Area) else instance
        builder = self.builder
        if isinstance(session, AsyncSession):
            drive_async = session._drive if self.steps else session._run

            async def awaited(*args: Any, **kwargs: Any) -> Any:
                return await drive_async(builder(*args, **kwargs))
            bound: Callable[..., Any] = awaited
        else:
            drive = session._drive if self.steps else session._run

            def direct(*args: Any, **kwargs: Any) -> Any:
                return drive(builder(*args, **kwargs))
            bound = direct
        functools.update_wrapper(bound, builder)
        bound.__name__ = self.name
        bound.__qualname__ = f"{owner.__name__}.{self.name}"
        if isinstance(instance, Area) and hasattr(instance, "__dict__"):
            instance.__dict__[self.name] = bound  # bound once per namespace: later reads skip this descriptor
        return bound


@overload
def method(builder: Callable[P, Call[T]]) -> Method[P, T]: ...


@overload
def method(builder: Callable[P, Steps[T]]) -> Method[P, T]: ...


def method(builder: Callable[P, Call[T]] | Callable[P, Steps[T]]) -> Method[P, T]:
    """Bind a call declaration (or a generator of calls) as a method of an area or a session::

        class MemoryArea(Area[SessionT]):
            write = method(memory_write)       # session.memory.write(...) runs memsub.memory_write
    """
    return Method(builder)


class _Namespace:
    """The descriptor behind :func:`namespace`: the area bound to the session, made once per session."""

    def __init__(self, area: type[Area[Any]]) -> None:
        self.area = area
        self.name = area.__name__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type[Any]) -> Any:
        if instance is None:
            return self.area
        bound = self.area(instance)
        instance.__dict__[self.name] = bound
        return bound


def namespace(area: type[Area[Any]]) -> Any:
    """Attach an area to the sessions as a namespace; the attribute's annotation gives its type::

        class Namespaces(Generic[SessionT]):
            memory: MemoryArea[SessionT] = namespace(MemoryArea)

    Read on a session class it is the area class, on a session the area bound to that session."""
    return _Namespace(area)


def vector_dimension() -> Call[int]:
    """The vector dimension of this installation (every embedder used with it must produce it)."""
    return function("vector_dimension", {}, scalar(int))
