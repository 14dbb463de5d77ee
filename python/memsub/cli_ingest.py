"""``memsub ingest PATH...``: store Markdown and text files as versioned documents with chunks and vectors."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memsub import documents
from memsub.cli_common import Target, emit_json, tenant_options
from memsub.embedding import EMBEDDER_SPEC_HELP, Embedder, resolve_embedder
from memsub.errors import ConnectionFailed, ContextError, MemsubError
from memsub.exit_codes import CHECK_FAILED

if TYPE_CHECKING:
    from memsub.client import Substrate


def _files(paths: tuple[Path, ...], unlisted: list[OSError]) -> Iterator[Path]:
    """The files named, and the Markdown and text files under the directories named, in a stable order. A PDF
    named on the command line is tried (and refused as that file's failure); one in a directory is left alone.
    A directory named, or below one named, that cannot be listed is added to ``unlisted`` (links to directories
    are not followed)."""
    for path in paths:
        if path.is_dir():
            found: list[Path] = []
            for folder, _, names in os.walk(path, onerror=unlisted.append):
                found += [Path(folder, name) for name in names]
            yield from sorted(p for p in found if p.is_file() and p.suffix.lower() in documents.TEXT_SUFFIXES)
        else:
            yield path


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@tenant_options
@click.option("--embedder", "embedder_spec", envvar="MEMSUB_EMBEDDER", default=None,
              help=f"How to embed the chunks: {EMBEDDER_SPEC_HELP}. Without one, chunks are stored and "
                   "full-text indexed but not embedded.")
@click.option("--max-chars", default=documents.DEFAULT_MAX_CHARS, show_default=True,
              type=click.IntRange(min=documents.MIN_MAX_CHARS), help="Longest chunk, in characters.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one result per file.")
def ingest_command(paths: tuple[Path, ...], target: Target, embedder_spec: str | None, max_chars: int,
                   as_json: bool) -> None:
    """Ingest Markdown and text files (directories: every .md/.markdown/.txt/.text file below them).

    A file named here must be one of those kinds too: a .pdf is reported failed, as memsub extracts no PDF text.
    Each file is one transaction: unchanged files are left alone, changed files get a new version. A file that
    cannot be read, embedded or stored is reported failed, with the reason, and the next file is ingested; the
    command then exits 1. Errors that concern every file (no privilege, no server) stop the run with their
    own exit code.
    """
    unlisted: list[OSError] = []
    files = list(_files(paths, unlisted))
    counts = {"created": 0, "new_version": 0, "unchanged": 0, "failed": 0}
    for error in unlisted:  # its files are not known, so none of them is ingested: the run fails
        counts["failed"] += 1
        _report({"path": _shown(str(error.filename)), "status": "failed",
                 "error": f"cannot list the directory: {error.strerror}", "field": None}, as_json)
    embedder: Embedder | None = None
    with target.substrate(writes="memsub ingest") as substrate:
        if embedder_spec:
            with substrate.tenant(target.tenant_id, **target.context()) as session:
                embedder = resolve_embedder(embedder_spec, session.vector_dimension())
        with click.progressbar(files, label="ingesting", file=sys.stderr, show_pos=True,
                               item_show_func=lambda p: _shown(p.name) if p else None) as bar:
            for path in bar:
                item = _ingest_one(substrate, target, path, embedder, max_chars)
                counts[item["status"]] += 1
                _report(item, as_json)
    click.echo(f"{counts['created']} created, {counts['new_version']} new version(s), "
               f"{counts['unchanged']} unchanged, {counts['failed']} failed", err=as_json)
    if counts["failed"]:
        sys.exit(CHECK_FAILED)


def _ingest_one(substrate: Substrate, target: Target, path: Path, embedder: Embedder | None,
                max_chars: int) -> dict[str, Any]:
    """One file in one transaction, as the line to report. Whatever goes wrong with this file (reading it, the
    embedder, storing it) is its failure; errors that concern every file (no privilege, no server) end the run."""
    shown = _shown(str(path))
    try:
        with substrate.tenant(target.tenant_id, **target.context()) as session:
            result = session.documents.ingest_file(path, embedder=embedder, max_chars=max_chars)
    except ConnectionFailed:
        raise
    except MemsubError as error:
        if isinstance(error, ContextError) and error.field != "file_path":  # no privilege: every file would fail
            raise
        return {"path": shown, "status": "failed", "error": _shown(_without_path(str(error), path)),
                "field": error.field}
    except Exception as error:  # reading the file, or the embedder, any object raising its own exceptions
        if isinstance(error, OSError) and error.filename is not None and error.strerror:
            reason = f"cannot read: {error.strerror}"
        else:
            reason = f"{type(error).__name__}: {error}"
        return {"path": shown, "status": "failed", "error": _shown(reason), "field": None}
    return {"path": shown, "status": result.status, "version": result.version,
            "chunk_count": result.chunk_count, "embedded_count": result.embedded_count}


def _without_path(message: str, path: Path) -> str:
    """A failure's reason without the file's name in front: the client's reasons name the file (``a.txt: not UTF-8
    text``) for a caller of ``ingest_file``, and the line reporting it already starts with that name."""
    return message.removeprefix(f"{path}: ")


def _report(item: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(item)
    elif item["status"] == "failed":
        field = f" [field {item['field']}]" if item["field"] else ""
        click.echo(f"{item['path']}: failed: {item['error']}{field}")
    else:
        click.echo(f"{item['path']}: {item['status']} (version {item['version']}, {item['chunk_count']} "
                   f"chunks, {item['embedded_count']} embedded)")


def _shown(text: str) -> str:
    """Text that prints on any UTF-8 output: the bytes of a file name that are not UTF-8 (which Python keeps as
    lone surrogates) as ``\\xNN`` escapes."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
