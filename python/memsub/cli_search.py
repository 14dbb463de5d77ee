"""``memsub search`` and ``memsub graph``: retrieval from the command line.

``memsub search`` embeds the query text with an embedder (``--embedder``; it always says on stderr which one
it uses) and calls memsub.semantic_search, or memsub.hybrid_search, which also matches the words of the text.
The embedder must be the one that embedded the stored texts, and its dimension that of the installation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from pydantic import BaseModel

from memsub.cli import _fail_error, _tenant_options, _TenantCall
from memsub.embedding import EMBEDDER_NAMES, default_embedder_name, describe_embedder, make_embedder
from memsub.errors import MemsubError

EMBEDDING_TYPES = ["content", "context", "entity", "summary", "reasoning"]


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _clip(text: str | None, width: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _json_lines(rows: Sequence[BaseModel]) -> None:
    for row in rows:
        click.echo(row.model_dump_json())


@click.command("search")
@click.argument("query")
@_tenant_options
@click.option("--mode", type=click.Choice(["semantic", "hybrid"]), default="semantic", show_default=True,
              help="semantic: nearest vectors; hybrid: vectors and full text fused by reciprocal rank fusion.")
@click.option("--k", "k", default=10, show_default=True, help="Rows to return.")
@click.option("--type", "embedding_type", type=click.Choice(EMBEDDING_TYPES), default="content",
              show_default=True, help="Embedding space to search.")
@click.option("--embedder", type=click.Choice(EMBEDDER_NAMES), envvar="MEMSUB_EMBEDDER", default=None,
              help="How to embed QUERY (or MEMSUB_EMBEDDER). Default: minilm when memsub[embed] is installed, "
                   "else hashing.")
@click.option("--record", "record_access", is_flag=True,
              help="Log each result in memory_access_log (its access id can then get feedback).")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one result per line.")
def search_command(query: str, dsn: str | None, tenant_id: str, org_id: str | None, user_id: str | None,
                   session_id: str | None, roles: tuple[str, ...], mode: str, k: int, embedding_type: str,
                   embedder: str | None, record_access: bool, as_json: bool) -> None:
    """Search the tenant's memory for QUERY, by meaning (semantic) or by meaning and words (hybrid)."""
    name = embedder or default_embedder_name()
    rows: list[Any] = []
    try:
        with _TenantCall(dsn, tenant_id, org_id, user_id, session_id, roles) as memory:
            dimension = int(memory.fetch("select memsub.vector_dimension() as d")[0]["d"])
            try:
                chosen = make_embedder(name, dimension)
            except (ValueError, RuntimeError) as error:
                raise click.ClickException(str(error)) from error
            how = "chosen" if embedder else "default"
            click.echo(f"memsub: query embedded by {describe_embedder(chosen)} [{how}]", err=True)
            vector = chosen.embed([query])[0]
            if mode == "semantic":
                rows = memory.search(vector, k, embedding_type=embedding_type,  # type: ignore[arg-type]
                                     record_access=record_access, query_text=query)
            else:
                rows = memory.hybrid_search(query, vector, k, embedding_type=embedding_type,  # type: ignore[arg-type]
                                            record_access=record_access)
    except MemsubError as error:
        _fail_error(error)
    if as_json:
        _json_lines(rows)
        return
    if mode == "semantic":
        _table(["#", "distance", "importance", "method", "packet", "text"],
               [[str(n), _number(r.distance), _number(r.importance_score, 2), r.method, str(r.packet_id),
                 _clip(r.chunk_text, 60)] for n, r in enumerate(rows, 1)])
    else:
        _table(["#", "rrf score", "vector rank", "text rank", "distance", "packet", "text"],
               [[str(n), _number(r.score, 5), str(r.vector_rank or "-"), str(r.text_rank or "-"),
                 _number(r.distance), str(r.packet_id), _clip(r.chunk_text, 60)] for n, r in enumerate(rows, 1)])
    click.echo(f"{len(rows)} result(s)", err=True)


@click.group("graph")
def graph_group() -> None:
    """Walk the knowledge graph (entity_relationships and knowledge_facts)."""


@graph_group.command("traverse")
@click.argument("entity")
@_tenant_options
@click.option("--depth", "max_depth", default=3, show_default=True, help="Maximum hops (1-10).")
@click.option("--rel", "relationship_types", multiple=True, help="Only this relationship type (repeatable).")
@click.option("--direction", type=click.Choice(["outgoing", "incoming", "both"]), default="outgoing",
              show_default=True)
@click.option("--min-confidence", type=float, default=None, help="Skip edges below this confidence.")
@click.option("--limit", type=int, default=None, help="At most this many entities (default 1000).")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one path per line.")
def graph_traverse(entity: str, dsn: str | None, tenant_id: str, org_id: str | None, user_id: str | None,
                   session_id: str | None, roles: tuple[str, ...], max_depth: int,
                   relationship_types: tuple[str, ...], direction: str, min_confidence: float | None,
                   limit: int | None, as_json: bool) -> None:
    """Entities reachable from ENTITY, each once with its most confident shortest path (memsub.traverse_graph)."""
    try:
        with _TenantCall(dsn, tenant_id, org_id, user_id, session_id, roles) as memory:
            paths = memory.traverse(entity, max_depth, relationship_types=relationship_types or None,
                                    min_confidence=min_confidence, direction=direction,  # type: ignore[arg-type]
                                    limit=limit)
    except MemsubError as error:
        _fail_error(error)
    if as_json:
        _json_lines(paths)
        return
    _table(["depth", "entity", "confidence", "path"],
           [[str(p.depth), p.entity, _number(p.path_confidence, 3),
             p.path[0] + "".join(f" -{rel}-> {node}" for rel, node in zip(p.relationship_path, p.path[1:],
                                                                           strict=True))]
            for p in paths])


@graph_group.command("neighbourhood")
@click.argument("entity")
@_tenant_options
@click.option("--min-confidence", type=float, default=None)
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one row per line.")
def graph_neighbourhood(entity: str, dsn: str | None, tenant_id: str, org_id: str | None, user_id: str | None,
                        session_id: str | None, roles: tuple[str, ...], min_confidence: float | None,
                        as_json: bool) -> None:
    """ENTITY's relationships in both directions and the facts about it (memsub.entity_neighbourhood)."""
    try:
        with _TenantCall(dsn, tenant_id, org_id, user_id, session_id, roles) as memory:
            items = memory.neighbourhood(entity, min_confidence=min_confidence)
    except MemsubError as error:
        _fail_error(error)
    if as_json:
        _json_lines(items)
        return
    _table(["kind", "direction", "relationship", "other / object", "confidence", "mentions"],
           [[i.kind, i.direction, i.relationship_type,
             (i.other_entity or "") if i.kind == "relationship" else _clip(str(i.object), 40),
             _number(i.confidence, 3), str(i.mention_count)] for i in items])
