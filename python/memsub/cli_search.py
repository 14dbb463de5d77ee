"""``memsub search`` and ``memsub graph``: retrieval from the command line.

``memsub search`` embeds the query text with an embedder (``--embedder``; it always says on stderr which one
it uses) and calls memsub.semantic_search, or memsub.hybrid_search, which also matches the words of the text.
The embedder must be the one that embedded the stored texts, and its dimension that of the installation.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, get_args

import click

from memsub.cli_common import Target, emit_json_lines, json_lines_option, print_table, tenant_options
from memsub.embedding import EMBEDDER_SPEC_HELP, describe_embedder, embed_one, resolve_embedder
from memsub.errors import InvalidInput
from memsub.graph import Direction
from memsub.maintain import parse_interval
from memsub.models import parse_time
from memsub.search import EmbeddingType, RankBy, SearchMode

EMBEDDING_TYPES = list(get_args(EmbeddingType))


def _clip(text: str | None, width: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


SEMANTIC_ONLY = ("thread_id", "tags", "packet_type", "since", "until", "min_importance", "rank_by", "method",
                 "ef_search", "max_scan_tuples")
HYBRID_ONLY = ("vector_weight", "text_weight", "rrf_k", "candidates", "importance_weight", "recency_weight",
               "half_life")
_SEMANTIC = "semantic only: "
_HYBRID = "hybrid only: "


def _option_name(field: str) -> str:
    return {"thread_id": "--thread", "tags": "--tag"}.get(field, "--" + field.replace("_", "-"))


@click.command("search")
@click.argument("query")
@tenant_options
@click.option("--mode", type=click.Choice(["semantic", "hybrid"]), default="semantic", show_default=True,
              help="semantic: nearest vectors; hybrid: vectors and full text fused by reciprocal rank fusion.")
@click.option("--k", "k", default=10, show_default=True, help="Rows to return.")
@click.option("--type", "embedding_type", type=click.Choice(EMBEDDING_TYPES), default="content",
              show_default=True, help="Embedding space to search.")
@click.option("--embedder", envvar="MEMSUB_EMBEDDER", default=None,
              help=f"How to embed QUERY: {EMBEDDER_SPEC_HELP}. Default: minilm when memsub[embed] is installed, "
                   "else hashing.")
@click.option("--record", "record_access", is_flag=True,
              help="Log each result in memory_access_log (its access id can then get feedback).")
@click.option("--agent-id", "agent_id", default=None, help="The agent recorded with each access (with --record).")
@click.option("--with-packets", "with_packets", is_flag=True,
              help="Return each hit's packet with it, read in the same statement (shown with --json).")
@click.option("--thread", "thread_id", type=click.UUID, default=None, help=_SEMANTIC + "packets of this thread.")
@click.option("--tag", "tags", multiple=True, help=_SEMANTIC + "packets carrying this tag (repeatable: all of them).")
@click.option("--packet-type", default=None, help=_SEMANTIC + "packets of this type.")
@click.option("--since", default=None, help=_SEMANTIC + "packets timestamped at or after this ISO 8601 time.")
@click.option("--until", default=None, help=_SEMANTIC + "packets timestamped before this ISO 8601 time.")
@click.option("--min-importance", type=float, default=None, help=_SEMANTIC + "packets at least this important.")
@click.option("--rank-by", type=click.Choice(get_args(RankBy)), default=None,
              help=_SEMANTIC + "rank by distance (default) or by the combined score of distance, importance and "
                               "recency.")
@click.option("--method", type=click.Choice(get_args(SearchMode)), default=None,
              help=_SEMANTIC + "exact scan or HNSW walk; auto (default) chooses by cost and measured recall.")
@click.option("--ef-search", type=int, default=None,
              help=_SEMANTIC + "HNSW candidate list size, 1 to 1000 (default derived from k and the tenant).")
@click.option("--max-scan-tuples", type=int, default=None,
              help=_SEMANTIC + "bound of the iterative HNSW scan (default 20000).")
@click.option("--vector-weight", type=float, default=None, help=_HYBRID + "weight of the vector rank (default 1).")
@click.option("--text-weight", type=float, default=None, help=_HYBRID + "weight of the text rank (default 1).")
@click.option("--rrf-k", type=int, default=None, help=_HYBRID + "reciprocal rank fusion constant (default 60).")
@click.option("--candidates", type=int, default=None, help=_HYBRID + "candidates per leg (default max(50, 4k)).")
@click.option("--importance-weight", type=float, default=None,
              help=_HYBRID + "boost by the packet's importance (default 0).")
@click.option("--recency-weight", type=float, default=None,
              help=_HYBRID + "boost by how recently the packet was written or used (default 0).")
@click.option("--half-life", default=None, metavar="INTERVAL",
              help=_HYBRID + "time in which the recency boost halves: 30s, 15m, 1h, 7d (default 30d).")
@json_lines_option
def search_command(query: str, target: Target, mode: str, k: int, embedding_type: str,
                   embedder: str | None, record_access: bool, agent_id: str | None, with_packets: bool,
                   as_json: bool, **tuning: Any) -> None:
    """Search the tenant's memory for QUERY, by meaning (semantic) or by meaning and words (hybrid).

    Unset options take the stored function's defaults (docs/retrieval.md)."""
    if not query.strip():
        raise InvalidInput("QUERY must not be blank", field="query")
    other = HYBRID_ONLY if mode == "semantic" else SEMANTIC_ONLY
    for field in other:
        if tuning[field] not in (None, ()):
            other_mode = "hybrid" if mode == "semantic" else "semantic"
            raise InvalidInput(f"{_option_name(field)} applies to --mode {other_mode} only", field=field)
    tuning["since"] = _timestamp(tuning["since"], "since")
    tuning["until"] = _timestamp(tuning["until"], "until")
    if tuning["half_life"] is not None:
        tuning["half_life"] = timedelta(seconds=parse_interval(tuning["half_life"], "half_life"))
    rows: list[Any] = []
    with target.session() as session:
        chosen = resolve_embedder(embedder, session.vector_dimension())
        how = "chosen" if embedder else "default"
        click.echo(f"memsub: query embedded by {describe_embedder(chosen)} [{how}]", err=True)
        vector = embed_one(chosen, query)
        if mode == "semantic":
            given = {name: tuning[name] for name in SEMANTIC_ONLY if tuning[name] not in (None, ())}
            if "method" in given:
                given["mode"] = given.pop("method")
            rows = session.search.semantic(vector, k, embedding_type=embedding_type,  # type: ignore[arg-type]
                                           record_access=record_access, query_text=query, agent_id=agent_id,
                                           with_packets=with_packets, **given)
        else:
            given = {name: tuning[name] for name in HYBRID_ONLY if tuning[name] is not None}
            rows = session.search.hybrid(query, vector, k, embedding_type=embedding_type,  # type: ignore[arg-type]
                                         record_access=record_access, agent_id=agent_id,
                                         with_packets=with_packets, **given)
    if as_json:
        emit_json_lines(rows)
        return
    shown: list[Any] = list(rows)
    if mode == "semantic":
        print_table(["#", "distance", "importance", "method", "packet", "text"],
                [[str(n), _number(r.distance), _number(r.importance_score, 2), r.method, str(r.packet_id),
                  _clip(r.chunk_text, 60)] for n, r in enumerate(shown, 1)])
    else:
        print_table(["#", "rrf score", "vector rank", "text rank", "distance", "packet", "text"],
                [[str(n), _number(r.score, 5), str(r.vector_rank or "-"), str(r.text_rank or "-"),
                  _number(r.distance), str(r.packet_id), _clip(r.chunk_text, 60)] for n, r in enumerate(shown, 1)])
    click.echo(f"{len(rows)} result(s)", err=True)


_AS_OF_HELP = "Read the graph as it was at this ISO 8601 time (default now; no offset: UTC)."


def _timestamp(text: str | None, field: str = "as_of") -> datetime | None:
    if text is None:
        return None
    try:
        return parse_time(text)
    except ValueError as error:
        raise InvalidInput(f"{_option_name(field)} {text!r} is not an ISO 8601 time", field=field) from error


@click.group("graph")
def graph_group() -> None:
    """Walk the knowledge graph (entity_relationships and knowledge_facts)."""


@graph_group.command("traverse")
@click.argument("entity")
@tenant_options
@click.option("--depth", "max_depth", default=3, show_default=True,
              help="Maximum hops, 1 up to the max_depth limit (10 unless raised).")
@click.option("--rel", "relationship_types", multiple=True, help="Only this relationship type (repeatable).")
@click.option("--direction", type=click.Choice(get_args(Direction)), default="outgoing",
              show_default=True)
@click.option("--min-confidence", type=float, default=None, help="Skip edges below this confidence.")
@click.option("--limit", type=int, default=None, help="At most this many entities (default 1000).")
@click.option("--as-of", "as_of", default=None, help=_AS_OF_HELP)
@json_lines_option
def graph_traverse(entity: str, target: Target, max_depth: int,
                   relationship_types: tuple[str, ...], direction: str, min_confidence: float | None,
                   limit: int | None, as_of: str | None, as_json: bool) -> None:
    """Entities reachable from ENTITY through the edges valid now (or --as-of), each once with its most confident
    shortest path (memsub.traverse_graph)."""
    when = _timestamp(as_of)
    with target.session() as session:
        paths = session.graph.traverse(entity, max_depth, relationship_types=relationship_types or None,
                                       min_confidence=min_confidence, direction=direction,  # type: ignore[arg-type]
                                       limit=limit, as_of=when)
    if as_json:
        emit_json_lines(paths)
        return
    print_table(["depth", "entity", "confidence", "path"],
                [[str(p.depth), p.entity, _number(p.path_confidence, 3),
                  p.path[0] + "".join(f" -{rel}-> {node}" for rel, node in zip(p.relationship_path, p.path[1:],
                                                                                strict=True))]
                 for p in paths])


@graph_group.command("neighbourhood")
@click.argument("entity")
@tenant_options
@click.option("--min-confidence", type=float, default=None)
@click.option("--as-of", "as_of", default=None, help=_AS_OF_HELP)
@json_lines_option
def graph_neighbourhood(entity: str, target: Target, min_confidence: float | None,
                        as_of: str | None, as_json: bool) -> None:
    """ENTITY's relationships in both directions valid now (or --as-of) and the facts about it
    (memsub.entity_neighbourhood)."""
    when = _timestamp(as_of)
    with target.session() as session:
        items = session.graph.entity_neighbourhood(entity, min_confidence=min_confidence, as_of=when)
    if as_json:
        emit_json_lines(items)
        return
    print_table(["kind", "direction", "relationship", "other / object", "confidence", "mentions"],
                [[i.kind, i.direction, i.relationship_type,
                  (i.other_entity or "") if i.kind == "relationship" else _clip(str(i.object), 40),
                  _number(i.confidence, 3), str(i.mention_count)] for i in items])
