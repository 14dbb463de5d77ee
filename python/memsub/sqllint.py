"""SQL lint for memsub's own SQL (``python -m memsub.sqllint sql migrations``).

Statements are split with sqlglot's PostgreSQL tokenizer (dollar-quoted bodies stay whole). Rules:

- every function declares its volatility, ``security invoker|definer`` and ``set search_path``; every
  procedure its security mode and ``search_path`` (except a procedure that commits, which PostgreSQL does not
  allow a SET clause: it must then be ``security invoker``);
- every ``search_path`` ends with ``pg_temp``: PostgreSQL searches the temporary schema first for table and type
  names unless it is named, so a login could otherwise shadow ``uuid`` with a domain whose check runs its code;
- every table, column, view (and each of its output columns), function and procedure created in the memsub
  schema has a ``comment on``;
- nothing is granted to PUBLIC.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlglot import Token, TokenType
from sqlglot.dialects.postgres import Postgres

VOLATILITY = {"immutable", "stable", "volatile"}
TABLE_CONSTRAINT_WORDS = {"constraint", "primary", "unique", "foreign", "check", "exclude", "like"}


@dataclass(frozen=True)
class Statement:
    path: Path
    line: int
    tokens: tuple[Token, ...]

    @property
    def words(self) -> list[str]:
        return [t.text.lower() for t in self.tokens]


@dataclass(frozen=True)
class Problem:
    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def split_statements(path: Path) -> Iterator[Statement]:
    tokens = Postgres().tokenize(path.read_text(encoding="utf-8"))
    current: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                yield Statement(path, current[0].line, tuple(current))
            current = []
        else:
            current.append(token)
    if current:
        yield Statement(path, current[0].line, tuple(current))


def _qualified_name(words: Sequence[str], start: int) -> str | None:
    """``memsub . name`` at ``start`` -> ``name``; None for objects outside the memsub schema."""
    if start + 2 < len(words) and words[start] == "memsub" and words[start + 1] == ".":
        return words[start + 2].strip('"')
    return None


def _table_columns(statement: Statement, open_index: int) -> list[str]:
    """Column names of ``create table name ( ... )`` whose opening parenthesis is at ``open_index``."""
    columns: list[str] = []
    depth = 0
    expect_name = True
    for token in statement.tokens[open_index:]:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            if depth == 1:
                expect_name = True
                continue
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                break
        elif token.token_type == TokenType.COMMA and depth == 1:
            expect_name = True
            continue
        if depth == 1 and expect_name:
            word = token.text.lower().strip('"')
            if word not in TABLE_CONSTRAINT_WORDS:
                columns.append(word)
            expect_name = False
    return columns


def _view_columns(statement: Statement) -> list[str]:
    """Output column names of ``create [materialized] view name ... as [with ...] select <list> from ...``: the
    alias of each item of the top-level select list, or its last name (``t.column``); ``*`` is skipped."""
    items: list[list[Token]] = []
    depth = 0
    in_list = False
    for token in statement.tokens:
        word = token.text.lower()
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        if depth != 0:
            if in_list:
                items[-1].append(token)
            continue
        if not in_list:
            if word == "select":
                in_list, items = True, [[]]
            continue
        if word in {"from", "union", "where", "with"}:
            break
        if token.token_type == TokenType.COMMA:
            items.append([])
        elif token.token_type != TokenType.R_PAREN:
            items[-1].append(token)
    columns: list[str] = []
    for item in items:
        words = [t for t in item if t.token_type not in (TokenType.L_PAREN, TokenType.R_PAREN)]
        if not words or words[-1].token_type == TokenType.STAR:
            continue
        columns.append(words[-1].text.lower().strip('"'))
    return columns


def lint(paths: Sequence[Path]) -> list[Problem]:
    problems: list[Problem] = []
    needs_comment: dict[str, tuple[Path, int]] = {}
    commented: set[str] = set()
    files = sorted(f for p in paths for f in (sorted(p.glob("*.sql")) if p.is_dir() else [p]))
    for file in files:
        for statement in split_statements(file):
            words = statement.words
            if not words:
                continue
            problems += _check_statement(statement, words, needs_comment, commented)
    for key, (path, line) in sorted(needs_comment.items()):
        if key not in commented:
            problems.append(Problem(path, line, f"{key} has no comment on"))
    return problems


def _search_path(header: Sequence[str]) -> list[str] | None:
    """The schemas of a ``set search_path = a, b`` clause in a routine header, or None when there is none."""
    for i in range(len(header) - 1):
        if header[i] == "set" and header[i + 1] == "search_path":
            schemas: list[str] = []
            for word in header[i + 2:]:
                if word in {"=", "to", ","}:
                    continue
                if not re.fullmatch(r'"?[a-z_][a-z0-9_$]*"?', word) or word in {"as", "language", "set", "security",
                                                                                "immutable", "stable", "volatile"}:
                    break
                schemas.append(word.strip('"'))
            return schemas
    return None


def _check_statement(statement: Statement, words: list[str], needs_comment: dict[str, tuple[Path, int]],
                     commented: set[str]) -> list[Problem]:
    problems: list[Problem] = []
    where = (statement.path, statement.line)
    if words[0] == "create":
        index = 1
        if words[index:index + 2] == ["or", "replace"]:
            index += 2
        kind = words[index] if index < len(words) else ""
        if kind == "materialized" and index + 1 < len(words) and words[index + 1] == "view":
            kind, index = "materialized view", index + 1
        name = _qualified_name(words, index + 1)
        if kind in {"function", "procedure"} and name:
            header = words[: next((i for i, t in enumerate(statement.tokens)
                                   if t.token_type == TokenType.HEREDOC_STRING), len(words))]
            if kind == "function" and not VOLATILITY & set(header):
                problems.append(Problem(*where, f"function memsub.{name} does not declare its volatility"))
            if not any(header[i] == "security" and header[i + 1] in {"invoker", "definer"}
                       for i in range(len(header) - 1)):
                problems.append(Problem(*where, f"{kind} memsub.{name} does not declare security invoker|definer"))
            body = next((t.text.lower() for t in statement.tokens if t.token_type == TokenType.HEREDOC_STRING), "")
            # PostgreSQL refuses transaction control in a procedure with a SET clause: a procedure that
            # commits schema-qualifies its names instead of pinning search_path.
            commits = kind == "procedure" and re.search(r"\bcommit\b", body) is not None
            path = _search_path(header)
            if commits:
                # Without a SET clause the caller's search_path applies, with pg_temp searched first: that is
                # only harmless while the procedure runs with the caller's own rights.
                if "definer" in header:
                    problems.append(Problem(*where, f"{kind} memsub.{name} commits, so it must be security invoker"))
            elif path is None:
                problems.append(Problem(*where, f"{kind} memsub.{name} does not set search_path"))
            elif path[-1:] != ["pg_temp"]:
                problems.append(Problem(*where, f"{kind} memsub.{name}: search_path must end with pg_temp "
                                                f"(got {', '.join(path)}); otherwise pg_temp is searched first "
                                                "and any login can shadow a type or table the function uses"))
            needs_comment.setdefault(f"{kind} memsub.{name}", where)
        elif kind == "table" and name:
            needs_comment.setdefault(f"table memsub.{name}", where)
            open_index = words.index("(") if "(" in words else None
            if open_index is not None:
                for column in _table_columns(statement, open_index):
                    needs_comment.setdefault(f"column memsub.{name}.{column}", where)
        elif kind in {"view", "materialized view"} and name:
            needs_comment.setdefault(f"{kind} memsub.{name}", where)
            for column in _view_columns(statement):
                needs_comment.setdefault(f"column memsub.{name}.{column}", where)
    elif words[0] == "alter" and len(words) > 4 and words[1] == "table":
        name = _qualified_name(words, 2)
        if name:
            for i, word in enumerate(words[:-2]):
                if word == "add" and words[i + 1] == "column":
                    # "add column if not exists <name>" (a re-runnable migration) names the column three words on.
                    at = i + 5 if words[i + 2: i + 5] == ["if", "not", "exists"] else i + 2
                    if at < len(words):
                        needs_comment.setdefault(f"column memsub.{name}.{words[at].strip(chr(34))}", where)
    elif words[:2] == ["comment", "on"] and len(words) > 3:
        kind = words[2]
        index = 3
        if kind == "materialized":
            kind, index = "materialized view", 4
        name = _qualified_name(words, index)
        if name:
            if kind == "column" and index + 4 < len(words) and words[index + 3] == ".":
                commented.add(f"column memsub.{name}.{words[index + 4].strip(chr(34))}")
            else:
                commented.add(f"{kind} memsub.{name}")
    elif words[0] == "grant" and "public" in words[words.index("to") + 1:] if "to" in words else False:
        problems.append(Problem(*where, "grant to PUBLIC: grant to memsub roles by name"))
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv) or ["sql", "migrations"]
    problems = lint([Path(a) for a in args])
    for problem in problems:
        print(problem)
    print(f"sqllint: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
