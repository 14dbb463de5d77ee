"""The arguments of memsub's stored functions, as the catalog snapshot shipped in this package records them.

:func:`memsub._calls.function` checks a call against them when it is declared: an argument the function has no
default for, left out (given as None), an integer beyond what its parameter holds (``integer``: 32 bits), and a
value of another kind than its parameter's (a number for a text, a string that is no UUID for a uuid) are
refused by name before anything is sent. The server could only answer that no function of that name takes such
arguments (SQLSTATE 42883), naming none of them: psycopg sends a Python int beyond 32 bits as a ``bigint``, and
PostgreSQL does not narrow a ``bigint`` to an ``integer`` parameter when it chooses the function.

The snapshot (``catalog_snapshot.json``, :mod:`memsub.catalog_check`) is the catalog of a fresh installation of
the SQL this package ships, so it holds the functions this client calls. It is read once, at the first call.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

INTEGER_RANGES = {"smallint": (-(2**15), 2**15 - 1), "integer": (-(2**31), 2**31 - 1),
                  "bigint": (-(2**63), 2**63 - 1)}
"""The values each integer type holds."""


@dataclass(frozen=True)
class Signature:
    """What a call of one function must satisfy: the arguments it has no default for (their names without the
    ``p_`` prefix), and the declared type of each argument (``integer``, ``text[]``, ``uuid``...)."""

    required: tuple[str, ...]
    types: dict[str, str]


@functools.cache
def _arguments() -> dict[str, str]:
    """Each memsub function's name and its argument list as ``pg_get_function_arguments`` gives it."""
    # imported here, not with this module: ``python -m memsub.catalog_check`` must find it not yet imported
    from memsub.catalog_check import SNAPSHOT_PATH

    document = json.loads(SNAPSHOT_PATH.read_text(encoding="utf-8"))
    return {key.removeprefix("function memsub.").split("(", 1)[0]: entry["arguments"]
            for key, entry in document["objects"].items()
            if entry.get("kind") == "function" and key.startswith("function memsub.")}


@functools.cache
def signature(name: str) -> Signature | None:
    """The signature of ``memsub.<name>``, or None when the snapshot holds no function of that name."""
    arguments = _arguments().get(name)
    if arguments is None:
        return None
    required: set[str] = set()
    types: dict[str, str] = {}
    for declaration in split_arguments(arguments):
        words = declaration.split(" ", 1)
        if words[0] in ("OUT", "TABLE"):
            continue
        if words[0] in ("IN", "INOUT", "VARIADIC"):
            words = words[1].split(" ", 1)
        if len(words) < 2 or not words[0].startswith("p_"):
            continue
        argument = words[0].removeprefix("p_")
        kind, has_default, _ = words[1].partition(" DEFAULT ")
        if not has_default:
            required.add(argument)
        types[argument] = kind
    return Signature(tuple(sorted(required)), types)


def split_arguments(arguments: str) -> list[str]:
    """The declarations of an argument list: split at its commas outside quotes, brackets and parentheses
    (a default such as ``'{a,b}'::text[]`` or ``ARRAY['a', 'b']`` holds commas of its own)."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for index, character in enumerate(arguments):
        if quote:
            if character == quote:
                quote = ""
        elif character in "'\"":
            quote = character
        elif character in "([":
            depth += 1
        elif character in ")]":
            depth -= 1
        elif character == "," and depth == 0:
            parts.append(arguments[start:index].strip())
            start = index + 1
    if arguments[start:].strip():
        parts.append(arguments[start:].strip())
    return parts
