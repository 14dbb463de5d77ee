-- Area: operations. Seed: seed 000 "MULTI-TENANT IDENTITY" (every table is keyed by tenant_id first).
--
-- The planner's prior for tenant_id, until the first ANALYZE of a table.
--
-- A table nobody has analyzed yet has no statistics, and the planner then guesses that tenant_id = $1 matches
-- half a percent of an estimated ten pages of rows: under one row. Every index that begins with tenant_id then
-- costs as little as the primary key, and the planner takes the one with the fewest index conditions, finding a
-- row by its tenant alone and filtering the rest. PostgreSQL keeps such a plan for a statement that runs again
-- and again: the check of a foreign key, made by its trigger at every insert of a row that references another,
-- and each statement of a PL/pgSQL function, are planned once for all values after their fifth run. A new
-- installation's first connections would keep scanning the whole tenant at every write until autovacuum first
-- analyzes the table, a minute or more after the first rows. Measured (docs/benchmarks.md, "Plans made before
-- the first ANALYZE"): a single packet write read every earlier packet of its tenant to check the key of its
-- embedding.
--
-- The prior given here says what holds in a new installation, and what row-level security makes true of every
-- statement anyway: the rows a statement can see belong to one tenant (tenant_id has one distinct value). The
-- planner then expects a tenant's whole table behind tenant_id = $1 and uses the most selective index. The first
-- ANALYZE of the table (autovacuum's, or an operator's) replaces it with what it measures. Tables that were
-- analyzed, or that have statistics for tenant_id, are left alone, so applying sql/ again changes nothing.
--
-- pg_restore_attribute_stats exists from PostgreSQL 18 on. On an earlier server nothing is written and a NOTICE
-- says so: the plans made before the first ANALYZE stay as PostgreSQL makes them.

create or replace function memsub._seed_tenant_statistics() returns integer
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_seeded integer;
begin
    if pg_catalog.to_regprocedure('pg_catalog.pg_restore_attribute_stats("any")') is null then
        raise notice 'memsub: PostgreSQL % has no pg_restore_attribute_stats; tables keep the planner''s default '
                     'estimate for tenant_id until they are first analyzed', pg_catalog.current_setting('server_version');
        return 0;
    end if;
    select count(pg_catalog.pg_restore_attribute_stats(
               'schemaname', n.nspname::text, 'relname', c.relname::text, 'attname', 'tenant_id'::text,
               'inherited', false, 'null_frac', 0::real, 'avg_width', 16, 'n_distinct', 1::real))
      into v_seeded
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped
     where n.nspname = 'memsub'
       and c.relkind = 'r'  -- tables and the partitions of partitioned ones: what the planner scans
       and c.reltuples < 0  -- never analyzed nor vacuumed
       and not exists (select from pg_catalog.pg_stats s  -- pg_statistic itself is the superuser's only
                        where s.schemaname = n.nspname and s.tablename = c.relname
                          and s.attname = 'tenant_id' and not s.inherited);
    return v_seeded;
end
$$;
comment on function memsub._seed_tenant_statistics() is
    'Internal: gives every memsub table (and partition) that was never analyzed and has no statistics for '
    'tenant_id the planner prior "one distinct tenant_id", so that plans made before its first ANALYZE find rows '
    'by their whole key; returns how many tables it seeded. ANALYZE replaces the prior. Needs PostgreSQL 18 '
    '(pg_restore_attribute_stats); on an earlier server it writes nothing and raises a NOTICE. Run by the '
    'migrator with sql/; not granted to clients.';

select memsub._seed_tenant_statistics();
