"""Materialized-view refresh time on a populated database, with 0 % and 10 % of the source rows changed.

Populates packets, relationships, facts and reflections for several tenants (directly, as superuser: this
measures the refresh, not the writes), refreshes once to populate the views, then times
``CALL memsub.refresh_memory_views()`` (CONCURRENTLY) with nothing changed and after changing 10 % of the rows.

Usage: python bench/refresh.py [--packets 50000] [--tenants 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from _database import bench_database, describe

POPULATE = """
insert into memsub.packet_store (packet_id, packet_type, envelope, "timestamp", routing, tenant_id, importance_score,
                                 access_count)
select gen_random_uuid(), 'event', jsonb_build_object('payload', jsonb_build_object('i', i)),
       now() - (i % 40) * interval '1 day', jsonb_build_object('agent', 'agent-' || (i % 50)),
       ('00000000-0000-0000-0000-' || lpad(to_hex(i % %(tenants)s), 12, '0'))::uuid, (i % 100) / 100.0, i % 20
  from generate_series(1, %(packets)s) as i;
insert into memsub.entity_relationships (source_entity, relationship_type, target_entity, confidence, mention_count,
                                         tenant_id)
select 'e' || (i % 5000), 'rel' || (i % 7), 'E' || ((i * 31) % 5000), (i % 100) / 100.0, 1 + i % 9,
       ('00000000-0000-0000-0000-' || lpad(to_hex(i % %(tenants)s), 12, '0'))::uuid
  from generate_series(1, %(packets)s / 2) as i
on conflict (tenant_id, source_key, relationship_type, target_key) where upper_inf(valid_period) do nothing;
insert into memsub.knowledge_facts (subject, predicate, object, confidence, subject_normalized, object_normalized,
                                    supporting_packet_count, contradiction_count, tenant_id)
select 's' || i, 'p' || (i % 10), to_jsonb(i), (i % 100) / 100.0, 's' || i, i::text, 1 + i % 5, i % 4,
       ('00000000-0000-0000-0000-' || lpad(to_hex(i % %(tenants)s), 12, '0'))::uuid
  from generate_series(1, %(packets)s / 2) as i;
insert into memsub.reflection_store (reflection_type, content, tags, confidence, tenant_id)
select (array['lesson', 'pattern', 'failure', 'success', 'insight', 'improvement', 'false_constraint'])[1 + i % 7],
       'r' || i, array['t' || (i % 13), 'u' || (i % 5)], (i % 100) / 100.0,
       ('00000000-0000-0000-0000-' || lpad(to_hex(i % %(tenants)s), 12, '0'))::uuid
  from generate_series(1, %(packets)s / 5) as i;
"""

CHANGE_10_PERCENT = """
update memsub.packet_store set access_count = access_count + 1 where random() < 0.1;
update memsub.entity_relationships set mention_count = mention_count + 1 where random() < 0.1;
update memsub.knowledge_facts set supporting_packet_count = supporting_packet_count + 1 where random() < 0.1;
update memsub.reflection_store set confidence = 1 - confidence where random() < 0.1;
"""


def refresh(dsn: str) -> tuple[float, dict[str, float]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.monotonic()
        conn.execute("call memsub.refresh_memory_views()")
        total = time.monotonic() - started
        rows = conn.execute(
            "select view_name, duration_ms from memsub.memory_view_refresh_log where run_id = "
            "(select run_id from memsub.memory_view_refresh_log order by started_at desc limit 1)").fetchall()
    return total, dict(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=50_000)
    parser.add_argument("--tenants", type=int, default=10)
    args = parser.parse_args()
    with bench_database() as (superuser, _app):
        print(describe(superuser))
        with psycopg.connect(superuser, autocommit=True) as conn:
            conn.execute(POPULATE.replace("%(packets)s", str(args.packets)).replace("%(tenants)s", str(args.tenants)))
            conn.execute("analyze")
            sizes = {t: conn.execute(f"select count(*) from memsub.{t}").fetchone()[0]  # noqa: S608
                     for t in ("packet_store", "entity_relationships", "knowledge_facts", "reflection_store")}
        print(f"rows: {sizes}, tenants={args.tenants}")
        first, _ = refresh(superuser)
        print(f"first population (full):      {first * 1000:8.0f} ms")
        unchanged, per_view_0 = refresh(superuser)
        with psycopg.connect(superuser, autocommit=True) as conn:
            conn.execute(CHANGE_10_PERCENT)
        changed, per_view_10 = refresh(superuser)
        print(f"concurrent, 0 % changed:      {unchanged * 1000:8.0f} ms  {per_view_0}")
        print(f"concurrent, 10 % changed:     {changed * 1000:8.0f} ms  {per_view_10}")
        print(f"ratio 10 %/0 % = {changed / unchanged:.2f}; concurrent 0 %/full = {unchanged / first:.2f}")


if __name__ == "__main__":
    main()
