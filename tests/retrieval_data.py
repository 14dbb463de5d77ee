"""Synthetic retrieval data, built inside the server with fixed seeds (shared by the tests and bench/retrieval.py).

Vectors are clustered (a few dozen random centres plus noise), like real embeddings and unlike uniform noise,
on which no approximate index has meaningful recall. Packets are spread over one big tenant (``big_share`` of
the rows), one small tenant (``small_share``) and ``other_tenants`` tenants sharing the rest. Every packet has
one embedding per embedding type and a short text made of cluster words and random words.

memory_embeddings is partitioned by tenant (16 hash partitions of tenant_id, one HNSW graph per partition and
type): the small tenant's id is one that hashes to the big tenant's partition, so its walk is filtered in a graph
that is almost all the big tenant's, the case in which a plain HNSW scan returns too few rows.

Rows are written as the superuser with plain INSERT ... SELECT (row-level security does not apply to it);
everything is then read as the application role.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, get_args

import psycopg

from memsub.search import EmbeddingType

BIG = uuid.UUID("b1000000-0000-0000-0000-000000000001")
SMALL = uuid.UUID("5a000000-0000-0000-0000-000000000030")  # in BIG's partition of memory_embeddings
TYPES = get_args(EmbeddingType)


@dataclass(frozen=True)
class Spec:
    packets: int
    dimension: int = 384
    big_share: float = 0.5
    small_share: float = 0.005
    other_tenants: int = 20
    clusters: int = 40
    latent: int = 8
    spread: float = 0.3
    noise: float = 0.02
    seed: float = 0.42
    types: tuple[str, ...] = TYPES
    # Optional tenant classes (tenant, share of the packets); the rest goes to the big tenant.
    classes: tuple[tuple[uuid.UUID, float], ...] = ()
    # Embedding types whose vectors are uniform random directions (no neighbourhood structure) instead.
    uniform_types: tuple[str, ...] = ()


# The test data set: 4,000 packets x 5 embedding types = 20,000 embeddings of 384 dimensions; the big tenant
# holds 50 % of them, the small one 0.5 % (20 per type).
RETRIEVAL_SPEC = Spec(packets=4000)


def tenant_of(position: int, spec: Spec) -> str:
    """SQL expression of the tenant of packet number ``position`` (a column name)."""
    if spec.classes:
        cases, bound = [], 0
        for tenant, share in spec.classes:
            bound += max(1, round(share * 10000))
            cases.append(f"when {position} % 10000 < {bound} then '{tenant}'::uuid")
        return f"case {' '.join(cases)} else '{BIG}'::uuid end"
    big = int(spec.packets * spec.big_share)
    small = max(1, int(spec.packets * spec.small_share))
    return (f"case when {position} % 1000 < {int(spec.big_share * 1000)} then '{BIG}'::uuid "
            f"when {position} % 1000 < {int((spec.big_share + spec.small_share) * 1000)} then '{SMALL}'::uuid "
            f"else ('00000000-0000-0000-0000-' || lpad((({position} % {spec.other_tenants}) + 1)::text, 12, '0'))"
            "::uuid end"
            f" /* big ~{big}, small ~{small} */")


def create_mixture(conn: psycopg.Connection[Any], spec: Spec) -> None:
    """The temporary tables ``centres`` and ``projection`` of the clustered vectors (the same for the same seed).

    Vectors live near a low-dimensional manifold, as real embeddings do: a latent point (cluster centre plus
    spread) in `latent` dimensions, spread over all dimensions by a fixed random projection, plus a little
    isotropic noise. (Isotropic noise alone makes every neighbour equidistant, which no index can rank.)
    """
    conn.execute("select setseed(%s)", [spec.seed])
    conn.execute(f"""
        create temporary table centres as
        select c, array(select (random() * 2 - 1)::real + 0 * c from generate_series(1, {spec.latent})) as v
          from generate_series(1, {spec.clusters}) c""")
    conn.execute(f"""
        create temporary table projection as
        select array(select ((random() + 0.5) * sign(random() - 0.5))::real
                       from generate_series(1, {spec.dimension})) as a""")


def vector_sql(spec: Spec, embedding_type: str, row: str) -> str:
    """SQL of one vector of the type for the row ``row`` (with a column n), in a query with mixture_joins.

    Uniform: normally distributed coordinates (Box-Muller), i.e. uniformly distributed directions. Clustered:
    the latent point l spread over every dimension by the projection, plus a little noise. (Each ``+ 0 * ...``
    ties a subquery to its row, so it is drawn again for every row.)"""
    if embedding_type in spec.uniform_types:
        return (f"l2_normalize(array(select sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) + 0 * {row}.n"
                " + 0 * u.a from unnest(pr.a) u(a))::vector)")
    return (f"array(select u.a * l.v[1 + (u.o % {spec.latent})] + {spec.noise} * (random() * 2 - 1) + 0 * {row}.n"
            " from unnest(pr.a) with ordinality u(a, o))::vector")


def mixture_joins(spec: Spec, row: str) -> str:
    """The joins vector_sql reads for the row ``row`` (with columns n and cluster): its cluster's centre, the
    projection and a latent point near the centre (l)."""
    return (f"join centres c on c.c = {row}.cluster cross join projection pr"
            f" cross join lateral (select array(select c.v[i] + {spec.spread} * (random() * 2 - 1) + 0 * {row}.n"
            f" from generate_series(1, {spec.latent}) i) as v) l")


def build(conn: psycopg.Connection[Any], spec: Spec) -> None:
    """Fill packet_store and memory_embeddings (superuser connection; commits).

    The HNSW indexes are dropped and rebuilt around the load: a bulk build is many times faster than
    inserting row by row into the graphs. Their definitions are read from the catalog, so they come back as
    the migrations made them (and with the build parameters set on them): each type's partitioned index, then
    its index on every partition of memory_embeddings, attached to it.
    """
    indexes = conn.execute(
        "select c.relname, pg_get_indexdef(c.oid), obj_description(c.oid, 'pg_class'), parent.relname "
        "from pg_index x join pg_class c on c.oid = x.indexrelid join pg_am am on am.oid = c.relam "
        "join pg_class t on t.oid = x.indrelid "
        "left join pg_inherits h on h.inhrelid = c.oid left join pg_class parent on parent.oid = h.inhparent "
        "where am.amname = 'hnsw' and t.relnamespace = 'memsub'::regnamespace "
        "and (t.relname = 'memory_embeddings' or t.relispartition and t.relname like 'memory_embeddings_p%') "
        "order by parent.relname nulls first, c.relname").fetchall()
    for name, _, _, parent in indexes:
        if parent is None:
            conn.execute(f"drop index memsub.{name}")  # and its partitions' indexes
    conn.execute("set maintenance_work_mem = '256MB'")
    conn.execute("set max_parallel_maintenance_workers = 0")  # the cores are shared
    create_mixture(conn, spec)
    conn.execute(f"""
        insert into memsub.packet_store (packet_id, packet_type, envelope, "timestamp", tags, thread_id,
                                         importance_score, tenant_id, scope, content_hash)
        select ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid,
               case when i % 3 = 0 then 'memory_write' else 'event' end,
               jsonb_build_object('payload', 'synthetic ' || i),
               now() - (i % 365) * interval '1 day',
               case when i % 10 = 0 then array['rare', 'common'] else array['common'] end,
               ('10000000-0000-4000-8000-' || lpad((i % 50)::text, 12, '0'))::uuid,
               ((i * 7919) % 100) / 100.0,
               {tenant_of('i', spec)},
               'shared',
               md5(i::text)
          from generate_series(1, {spec.packets}) i""")
    for number, embedding_type in enumerate(spec.types):
        conn.execute(f"""
            insert into memsub.memory_embeddings (packet_id, embedding_type, vector, chunk_index, chunk_text,
                                                  tenant_id, scope)
            select p.packet_id, '{embedding_type}',
                   {vector_sql(spec, embedding_type, "p")},
                   0,
                   'cluster' || p.cluster || ' topic' || (p.cluster % 7) || ' word' || (random() * 300)::int
                   || ' word' || (random() * 300)::int || ' item' || p.n,
                   p.tenant_id, 'shared'
              from (select s.packet_id, s.tenant_id,
                           ('x' || substr(s.packet_id::text, 25))::bit(48)::bigint as n,
                           1 + (hashint8(('x' || substr(s.packet_id::text, 25))::bit(48)::bigint + {number})
                                & 2147483647) % {spec.clusters} as cluster
                      from memsub.packet_store s) p
              {mixture_joins(spec, "p")}""")
    conn.execute("drop table projection")
    conn.execute("drop table centres")
    for name, definition, comment, parent in indexes:
        conn.execute(definition)
        if parent is not None:
            conn.execute(psycopg.sql.SQL("alter index {} attach partition {}").format(
                psycopg.sql.Identifier("memsub", parent), psycopg.sql.Identifier("memsub", name)))
        conn.execute(psycopg.sql.SQL("comment on index memsub.{} is {}").format(
            psycopg.sql.Identifier(name), psycopg.sql.Literal(comment)))
    conn.execute("analyze memsub.packet_store")
    conn.execute("analyze memsub.memory_embeddings")
    conn.commit()


def query_vector(conn: psycopg.Connection[Any], spec: Spec, number: int, embedding_type: str = "content") -> str:
    """Text of a query vector near one stored vector of the type (deterministic in ``number``)."""
    packet = f"00000000-0000-4000-8000-{(number * 37 % spec.packets) + 1:012d}"
    row = conn.execute("select vector::text from memsub.memory_embeddings where packet_id = %s and embedding_type = %s",
                       [packet, embedding_type]).fetchone()
    assert row is not None
    base = [float(x) for x in str(row[0]).strip("[]").split(",")]
    shifted = [x + (0.05 if (i + number) % 3 == 0 else -0.05) for i, x in enumerate(base)]
    return "[" + ",".join(f"{x:.5f}" for x in shifted) + "]"


def fresh_queries(conn: psycopg.Connection[Any], spec: Spec, count: int, embedding_type: str = "content",
                  seed: float = 0.17) -> list[str]:
    """Texts of ``count`` new vectors drawn the way the type's stored vectors were (deterministic in ``seed``):
    queries like the data that are not in it. Clustered: a new point of a random cluster; uniform: a random
    direction."""
    create_mixture(conn, spec)
    conn.execute("select setseed(%s)", [seed])
    rows = conn.execute(f"""
        select {vector_sql(spec, embedding_type, "q")}::text
          from (select n, 1 + floor(random() * {spec.clusters})::int as cluster
                  from generate_series(1, {count}) n) q
          {mixture_joins(spec, "q")}
         order by q.n""").fetchall()
    conn.execute("drop table projection")
    conn.execute("drop table centres")
    return [r[0] for r in rows]
