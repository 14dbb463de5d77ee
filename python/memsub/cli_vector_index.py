"""``memsub vector-index``: the HNSW build parameters of each embedding type's index, and rebuilding with others."""

from __future__ import annotations

import dataclasses

import click

from memsub.cli_common import dsn_option, emit_json, json_lines_option, primary_dsn, print_table, reachable_dsn
from memsub.connection import connect
from memsub.vector_index import VectorIndexBuild, index_builds, rebuild_index

BUILD_COLUMNS = tuple(f.name for f in dataclasses.fields(VectorIndexBuild))


def _print(builds: list[VectorIndexBuild], as_json: bool) -> None:
    if as_json:
        for build in builds:
            emit_json(build.as_dict())
        return
    print_table(BUILD_COLUMNS, [[getattr(build, c) for c in BUILD_COLUMNS] for build in builds])


@click.group("vector-index")
def vector_index_group() -> None:
    """The HNSW index of each embedding type on memory_embeddings: its build parameters, and rebuilding it."""


@vector_index_group.command("show")
@dsn_option
@json_lines_option
def vector_index_show(dsn: str | None, as_json: bool) -> None:
    """Each embedding type's index: m, ef_construction, size in bytes, valid (memsub.vector_index_builds())."""
    with connect(reachable_dsn(dsn), autocommit=True) as conn:
        _print(index_builds(conn), as_json)


@vector_index_group.command("rebuild")
@click.option("--dsn", default=None,
              help="libpq connection string of the role that applies migrations (it owns the indexes).")
@click.option("--type", "embedding_type", required=True, help="The embedding type whose index is rebuilt.")
@click.option("--m", "m", type=int, required=True, help="Links per node of the graph (2-100; pgvector's default 16).")
@click.option("--ef-construction", type=int, required=True,
              help="Candidate list of each insert (4-1000, at least 2 * m; pgvector's default 64).")
@click.option("--maintenance-work-mem", default=None, metavar="SIZE",
              help="maintenance_work_mem for the rebuild (e.g. 2GB): the graph is built in memory while it fits.")
@json_lines_option
def vector_index_rebuild(dsn: str | None, embedding_type: str, m: int, ef_construction: int,
                         maintenance_work_mem: str | None, as_json: bool) -> None:
    """Rebuild an embedding type's HNSW index with these build parameters, without blocking reads or writes.

    memsub.set_vector_index_build checks and records the parameters (22023 naming the field, nothing changed),
    then REINDEX INDEX CONCURRENTLY builds the new graph beside the old one and swaps them. Run memsub maintain
    --task tune_search afterwards: the recall it measured was the old graph's."""
    with connect(primary_dsn(dsn, "memsub vector-index rebuild"), autocommit=True) as conn:
        index_name, seconds = rebuild_index(conn, embedding_type, m, ef_construction, maintenance_work_mem)
        builds = index_builds(conn, embedding_type)
    _print(builds, as_json)
    if not as_json:
        click.echo(f"memsub: rebuilt {index_name} in {seconds:.1f} s; run `memsub maintain --task tune_search` "
                   "to measure the new graph's recall", err=True)
