"""``memsub ingest PATH...``: store Markdown and text files as versioned documents with chunks and vectors."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from memsub import documents
from memsub.cli_common import Target, emit_json_lines, tenant_options
from memsub.embedding import EMBEDDER_SPEC_HELP, Embedder, resolve_embedder
from memsub.errors import MemsubError
from memsub.exit_codes import CHECK_FAILED

SUFFIXES = tuple(sorted(documents.SUFFIX_MIME))


def _files(paths: tuple[Path, ...]) -> Iterator[Path]:
    """The files named, and the files with a known suffix under the directories named, in a stable order."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
        else:
            yield path


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@tenant_options
@click.option("--embedder", "embedder_spec", envvar="MEMSUB_EMBEDDER", default=None,
              help=f"How to embed the chunks: {EMBEDDER_SPEC_HELP}. Without one, chunks are stored and "
                   "full-text indexed but not embedded.")
@click.option("--max-chars", default=documents.DEFAULT_MAX_CHARS, show_default=True,
              help="Longest chunk, in characters.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one result per file.")
def ingest_command(paths: tuple[Path, ...], target: Target, embedder_spec: str | None, max_chars: int,
                   as_json: bool) -> None:
    """Ingest Markdown and text files (directories: every .md/.markdown/.txt/.text file below them).

    Each file is one transaction: unchanged files are left alone, changed files get a new version.
    """
    files = list(_files(paths))
    counts = {"created": 0, "new_version": 0, "unchanged": 0, "failed": 0}
    results: list[dict[str, Any]] = []
    embedder: Embedder | None = None
    with target.substrate() as substrate:
        if embedder_spec:
            with substrate.tenant(target.tenant_id, **target.context()) as session:
                embedder = resolve_embedder(embedder_spec, session.vector_dimension())
        with click.progressbar(files, label="ingesting", file=sys.stderr, show_pos=True,
                               item_show_func=lambda p: p.name if p else None) as bar:
            for path in bar:
                try:
                    with substrate.tenant(target.tenant_id, **target.context()) as session:
                        result = session.documents.ingest_file(path, embedder=embedder, max_chars=max_chars)
                except MemsubError as error:
                    counts["failed"] += 1
                    results.append({"path": str(path), "status": "failed", "error": str(error),
                                    "field": error.field})
                    continue
                counts[result.status] += 1
                results.append({"path": str(path), "status": result.status, "version": result.version,
                                "chunk_count": result.chunk_count, "embedded_count": result.embedded_count})
    if as_json:
        emit_json_lines(results)
    else:
        for item in results:
            if item["status"] == "failed":
                field = f" [field {item['field']}]" if item["field"] else ""
                click.echo(f"{item['path']}: failed: {item['error']}{field}")
            else:
                click.echo(f"{item['path']}: {item['status']} (version {item['version']}, {item['chunk_count']} "
                           f"chunks, {item['embedded_count']} embedded)")
    click.echo(f"{counts['created']} created, {counts['new_version']} new version(s), "
               f"{counts['unchanged']} unchanged, {counts['failed']} failed", err=as_json)
    if counts["failed"]:
        sys.exit(CHECK_FAILED)
