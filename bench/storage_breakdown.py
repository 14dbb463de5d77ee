"""Where the bytes of an embedded item are: memsub against LangGraph's store, relation by relation.

Usage: python bench/storage_breakdown.py [--items 1500] [--batch 100] [--dimension 384] [--json]

The data and the load are those of ``bench/write_path.py``'s batch phase (the same texts, vectors and envelopes:
``write_packets`` of ``--batch`` envelopes per call as a ``memsub_app`` login, ``store.batch`` of as many
``PutOp`` for LangGraph). Then, for packet_store + memory_embeddings and LangGraph's store + store_vectors, per
item: each table's heap (main fork; the free space and visibility maps apart), its TOAST (table and index), and
each index (btree, GIN, HNSW) with its fillfactor; each table's average row (``pg_column_size`` of the row and
of each column, the 24-byte tuple header and 4-byte line pointer apart).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from _database import bench_database, environment, environment_line, leaves
from peer_langgraph import ORG, TENANT, LangGraph, alternate, prepare_langgraph
from write_path import Items, envelope

TABLES = ["memsub.packet_store", "memsub.memory_embeddings", "langgraph.store", "langgraph.store_vectors"]


RELATIONS = """
        select c.relname, 'heap', pg_relation_size(c.oid, 'main'),
               pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm'), c.reloptions::text
          from pg_class c where c.oid = %(t)s::regclass and c.relkind = 'r'
        union all
        select %(t)s::regclass::text, 'heap', sum(pg_relation_size(c.oid, 'main')),
               sum(pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm')), min(c.reloptions::text)
          from pg_class c join leaves l on l.relid = c.oid where %(t)s::regclass::oid <> c.oid
        having count(*) > 0
        union all
        select 'toast', 'toast', sum(coalesce(pg_total_relation_size(c.reltoastrelid), 0)), 0, null
          from pg_class c join leaves l on l.relid = c.oid
        union all
        select coalesce(parent.relname, i.relname), min(am.amname), sum(pg_relation_size(i.oid)), 0,
               min(i.reloptions::text)
          from leaves l join pg_index x on x.indrelid = l.relid join pg_class i on i.oid = x.indexrelid
          join pg_am am on am.oid = i.relam
          left join pg_inherits h on h.inhrelid = i.oid left join pg_class parent on parent.oid = h.inhparent
         group by coalesce(parent.relname, i.relname)
        """
"""The heap, maps, TOAST and indexes of the leaves (with leaves ...) of a table, by name."""


def relations(conn: psycopg.Connection[Any], table: str, items: int) -> list[dict[str, Any]]:
    """The table's heap, maps, TOAST and indexes with their bytes per item (each a dict). A partitioned table
    (memsub.memory_embeddings) is the sum of its partitions: one heap, one TOAST, and each index as the sum of
    its partitions' parts, named after the partitioned index."""
    leaves_of_table = leaves("%(t)s::regclass")
    query = f"with leaves as (select l.relid from {leaves_of_table} l(relid))" + RELATIONS  # noqa: S608
    rows = conn.execute(query, {"t": table}).fetchall()
    return [{"relation": name, "kind": kind, "bytes": int(size), "maps": int(maps), "options": options,
             "per_item": (int(size) + int(maps)) / items} for name, kind, size, maps, options in rows]


def columns(conn: psycopg.Connection[Any], table: str) -> dict[str, Any]:
    """Average stored bytes of the row and of each column; the alignment padding is the row less the columns."""
    names = [str(r[0]) for r in conn.execute(
        "select attname from pg_attribute where attrelid = %s::regclass and attnum > 0 and not attisdropped "
        "order by attnum", [table]).fetchall()]
    parts = sql.SQL(", ").join(
        [sql.SQL("avg(pg_column_size(t.*))::float8")]
        + [sql.SQL("coalesce(avg(pg_column_size({})), 0)::float8").format(sql.Identifier(n)) for n in names])
    row = conn.execute(sql.SQL("select {} from {} t").format(parts, sql.SQL(table))).fetchone()
    assert row is not None
    per_column = dict(zip(names, [float(v) for v in row[1:]], strict=True))
    # pg_column_size(t.*) is the composite datum: a 24-byte header (heap tuples have 23 + null bitmap + padding)
    return {"row": float(row[0]), "columns": per_column, "padding": float(row[0]) - 24 - sum(per_column.values())}


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    items = Items(args.dimension, args.items)
    vectors, texts, ids, embed = items.vectors, items.texts, items.ids, items.embed

    results: dict[str, Any] = {}
    with bench_database(vector_dimension=args.dimension) as (superuser, app):
        results["environment"] = environment(superuser)
        log(environment_line(results["environment"]))
        lg = LangGraph(prepare_langgraph(superuser), {"dims": args.dimension, "embed": embed, "fields": ["text"]})
        lg.store.setup()
        ms = psycopg.connect(app, autocommit=True)
        from langgraph.store.base import PutOp

        batches = []
        for start in range(0, args.items, args.batch):
            span = range(start, min(args.items, start + args.batch))
            batches.append(([PutOp(("docs",), f"d{i}", {"text": texts[i], "kind": "fact"}) for i in span],
                            "[" + ",".join(envelope(ids[i], i, texts[i], vectors[i]) for i in span) + "]"))

        def memsub_batch(b: tuple[Any, str]) -> None:
            with ms.pipeline():
                ms.execute(b"select memsub.set_context(%s, %s)", [TENANT, ORG], prepare=True)
                ms.execute(b"select count(*) from memsub.write_packets(%s::jsonb)", [b[1]], prepare=True)

        log(f"loading {args.items:,} items, {args.batch} per call")
        alternate(batches, {"langgraph": lambda b: lg.store.batch(b[0]), "memsub": memsub_batch})
        lg.close()
        ms.close()
        with psycopg.connect(superuser, autocommit=True) as conn:
            for table in TABLES:
                results[table] = {"relations": relations(conn, table, args.items), **columns(conn, table)}
    results["total_per_item"] = {
        side: sum(r["per_item"] for t in TABLES if t.startswith(side) for r in results[t]["relations"])
        for side in ("memsub", "langgraph")}
    results["ratio"] = results["total_per_item"]["memsub"] / results["total_per_item"]["langgraph"]
    results["data"] = {"items": args.items, "batch": args.batch, "dimension": args.dimension}
    return results


def render(results: dict[str, Any]) -> str:
    lines = [environment_line(results["environment"]), "",
             f"{'relation':<44} {'kind':<6} {'B/item':>8}  options", "-" * 80]
    for table in TABLES:
        for r in results[table]["relations"]:
            lines.append(f"{r['relation']:<44} {r['kind']:<6} {r['per_item']:>8,.0f}  {r['options'] or ''}")
        t = results[table]
        widths = ", ".join(f"{k} {v:.0f}" for k, v in t["columns"].items() if v)
        lines.append(f"  {table} average row {t['row']:.0f} B (24 header, padding {t['padding']:.0f}): {widths}")
    total = results["total_per_item"]
    lines += ["", f"total per item: memsub {total['memsub']:,.0f} B, LangGraph {total['langgraph']:,.0f} B, "
                  f"ratio {results['ratio']:.3f}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if min(args.items, args.batch, args.dimension) < 1:
        parser.error("--items, --batch and --dimension must be positive")
    results = run(args, lambda m: print(m, file=sys.stderr, flush=True))
    print(json.dumps(results, indent=2) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
