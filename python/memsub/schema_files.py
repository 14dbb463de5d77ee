"""Reads the shipped SQL: versioned migrations and re-runnable objects, with their checksums.

Versioned files are named ``MAJOR.MINOR.PATCH__description.sql`` and run once, in version order. Re-runnable
files (``sql/``) are applied in file-name order after the migrations and again whenever one of them changes.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

MIGRATION_NAME = re.compile(r"^(\d+)\.(\d+)\.(\d+)__([a-z0-9_]+)\.sql$")
REPEATABLE_NAME = re.compile(r"^\d{3}_[a-z0-9_]+\.sql$")

Version = tuple[int, int, int]


def parse_version(text: str) -> Version:
    """``"2.1.0"`` -> ``(2, 1, 0)``; raises ValueError naming the text otherwise."""
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", text.strip())
    if not match:
        raise ValueError(f"not a semantic version (MAJOR.MINOR.PATCH): {text!r}")
    return (int(match[1]), int(match[2]), int(match[3]))


def format_version(version: Version) -> str:
    return ".".join(str(part) for part in version)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$")


def split_statements(text: str) -> list[tuple[int, str]]:
    """The statements of a shipped SQL file, each with the line it starts on, split at the semicolons outside
    quotes, identifiers, comments and dollar-quoted bodies (``tests/operations/test_statement_split.py`` holds it
    equal to the SQL lint's tokenizer on every shipped file). Comments and blank text between statements are
    left out."""
    statements: list[tuple[int, str]] = []
    start: int | None = None
    position = 0
    length = len(text)
    while position < length:
        char = text[position]
        if char.isspace():
            position += 1
            continue
        if text.startswith("--", position):
            newline = text.find("\n", position)
            position = length if newline < 0 else newline + 1
            continue
        if text.startswith("/*", position):
            position = _block_comment_end(text, position)
            continue
        if start is None:
            start = position
        if char == ";":
            statements.append((text.count("\n", 0, start) + 1, text[start:position].strip()))
            start = None
            position += 1
        elif char in "'\"":
            escaped = char == "'" and position > 0 and text[position - 1] in "eE" \
                and (position < 2 or not (text[position - 2].isalnum() or text[position - 2] == "_"))
            position = _quoted_end(text, position, char, escaped)
        elif char == "$" and (tag := _DOLLAR_TAG.match(text, position)) \
                and (position == 0 or not (text[position - 1].isalnum() or text[position - 1] == "_")):
            close = text.find(tag.group(), tag.end())
            position = length if close < 0 else close + len(tag.group())
        else:
            position += 1
    if start is not None and text[start:].strip():
        statements.append((text.count("\n", 0, start) + 1, text[start:].strip()))
    return statements


def _block_comment_end(text: str, position: int) -> int:
    """Past the ``*/`` closing the comment opened at ``position`` (PostgreSQL nests block comments)."""
    depth = 0
    while position < len(text):
        if text.startswith("/*", position):
            depth += 1
            position += 2
        elif text.startswith("*/", position):
            depth -= 1
            position += 2
            if depth == 0:
                return position
        else:
            position += 1
    return position


def _quoted_end(text: str, position: int, quote: str, backslash_escapes: bool) -> int:
    """Past the quote closing the string or identifier opened at ``position`` (a doubled quote stays inside;
    in an E'' string a backslash escapes the next character)."""
    position += 1
    while position < len(text):
        char = text[position]
        if backslash_escapes and char == "\\":
            position += 2
        elif char == quote:
            if text.startswith(quote, position + 1):
                position += 2
            else:
                return position + 1
        else:
            position += 1
    return position


@dataclass(frozen=True)
class Migration:
    """One versioned, run-once migration file."""

    version: Version
    name: str
    path: Path
    sql: str
    sha256: str

    @property
    def version_text(self) -> str:
        return format_version(self.version)


@dataclass(frozen=True)
class DeclaredObject:
    """An object a re-runnable file creates: checked for presence by ``memsub verify``."""

    kind: str  # function | procedure | view | materialized view | trigger | policy
    name: str
    table: str | None = None

    def describe(self) -> str:
        return f"{self.kind} memsub.{self.name}" + (f" on memsub.{self.table}" if self.table else "")


@dataclass(frozen=True)
class Repeatable:
    """One re-runnable SQL file."""

    name: str
    path: Path
    sql: str
    sha256: str
    objects: tuple[DeclaredObject, ...]


def load_migrations(folder: Path) -> list[Migration]:
    migrations: list[Migration] = []
    seen: dict[Version, str] = {}
    for path in sorted(folder.glob("*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if not match:
            raise ValueError(f"migration file name must look like 1.2.3__description.sql: {path.name}")
        version = (int(match[1]), int(match[2]), int(match[3]))
        if version in seen:
            raise ValueError(f"two migrations share version {format_version(version)}: {seen[version]}, {path.name}")
        seen[version] = path.name
        text = path.read_text(encoding="utf-8")
        migrations.append(Migration(version, match[4], path, text, sha256_text(text)))
    return sorted(migrations, key=lambda m: m.version)


_ROUTINE = re.compile(r"create\s+(?:or\s+replace\s+)?(function|procedure)\s+memsub\.(\w+)\s*\(", re.I)
_VIEW = re.compile(r"create\s+(?:or\s+replace\s+)?(materialized\s+view|view)\s+(?:if\s+not\s+exists\s+)?memsub\.(\w+)",
                   re.I)
_TRIGGER = re.compile(r"create\s+(?:or\s+replace\s+)?trigger\s+(\w+)\b.*?\bon\s+memsub\.(\w+)", re.I | re.S)
_POLICY = re.compile(r"create\s+policy\s+(\w+)\s+on\s+memsub\.(\w+)", re.I)
_ROW_SECURITY = re.compile(
    r"call\s+memsub\._install_row_security\(\s*'memsub\.(\w+)'\s*,\s*array\[([^\]]*)\]", re.I)
_EXPIRY_POLICY = re.compile(r"call\s+memsub\._install_expiry_policy\(\s*'memsub\.(\w+)'", re.I)


def declared_objects(sql: str) -> tuple[DeclaredObject, ...]:
    """Objects a re-runnable file creates, found by the project's own SQL style (see docs/development.md)."""
    found: list[DeclaredObject] = []
    for match in _ROUTINE.finditer(sql):
        found.append(DeclaredObject(match[1].lower(), match[2]))
    for match in _VIEW.finditer(sql):
        found.append(DeclaredObject(" ".join(match[1].lower().split()), match[2]))
    for match in _TRIGGER.finditer(sql):
        found.append(DeclaredObject("trigger", match[1], match[2]))
    for match in _POLICY.finditer(sql):
        found.append(DeclaredObject("policy", match[1], match[2]))
    for match in _ROW_SECURITY.finditer(sql):
        layers = {part.strip().strip("'") for part in match[2].split(",")}
        names = ["tenant_isolation", "admin_override"]
        names += ["org_isolation"] if "org" in layers else []
        names += ["user_visibility"] if "user" in layers else []
        found.extend(DeclaredObject("policy", name, match[1]) for name in names)
    for match in _EXPIRY_POLICY.finditer(sql):
        found.append(DeclaredObject("policy", "not_expired", match[1]))
    unique: dict[tuple[str, str, str | None], DeclaredObject] = {}
    for obj in found:
        unique.setdefault((obj.kind, obj.name, obj.table), obj)
    return tuple(unique.values())


def load_repeatables(folder: Path) -> list[Repeatable]:
    repeatables: list[Repeatable] = []
    for path in sorted(folder.glob("*.sql")):
        if not REPEATABLE_NAME.match(path.name):
            raise ValueError(f"re-runnable file name must look like 010_area.sql: {path.name}")
        text = path.read_text(encoding="utf-8")
        repeatables.append(Repeatable(path.name, path, text, sha256_text(text), declared_objects(text)))
    return repeatables
