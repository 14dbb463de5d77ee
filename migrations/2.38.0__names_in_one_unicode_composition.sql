-- memsub 2.38.0: entity names match in whichever Unicode composition, and with whichever white space, they were
-- typed.
--
-- An accented letter reaches a database in two forms: one character (é, U+00E9, the composed form Unicode calls
-- NFC, which most keyboards produce) or a letter followed by a combining accent (e, U+0301: the decomposed form,
-- NFD, which macOS file names and some text extractors produce). Both look the same and mean the same. The matching
-- form of a name (memsub.normalize_text) kept whichever it was given, so "Zoë" typed one way and "Zoë" typed the
-- other were two entities: an edge, a fact or an alias written under one was not found, nor reinforced, under the
-- other. Likewise the no-break spaces of text copied from web pages (U+00A0, U+2007, U+202F) and the next-line
-- control (U+0085), which Unicode counts as white space and PostgreSQL's \s (the C library's classes) does not:
-- "Acme Corp" with a no-break space was another name. The matching form now composes the name to NFC and counts
-- those as white space too; the names themselves stay as they were written (trimmed, as memsub._require_text
-- stores them).
--
-- What holds a matching form is computed again: source_key / target_key (generated columns, so dropped and added
-- with the new expression, and the unique edge key, the exclusion constraint and the index over them made again),
-- relationship types, the subject, predicate and object keys of facts, the alias keys of entities, and the two
-- expression indexes of entities (name key, name words). Rows that the new form makes one are merged:
-- - windows of one edge that overlap become one window: the first row (by start, first seen, id) and its spelling
--   are kept, observations added up, confidence combined as independent evidence (1 - product of 1 - c),
--   evidence joined, the first packet kept, and it expires when its last observation does (never, if one never
--   does);
-- - facts with one key become the first asserted, with supporting, contradicting and access counts added up,
--   confidence combined the same way, and the same expiry rule. The contradictions the two forms counted against
--   each other stay in the sum: nothing recorded tells them apart from the others.
-- A fact's object matches as jsonb compares it, too: 1 and 1.0 are one number, at any depth (its key wrote the
-- number as given, so asserting 1.0 after 1 counted a contradiction).
-- The generated columns and the index spell the expression out, so that no later change of a function can leave
-- stored keys stale; the data moves below call memsub.normalize_text and memsub._normalize_json_value, created here
-- as sql/020_argument_checks.sql defines them (sql/ is applied after the migrations). A test keeps the spelled-out
-- forms equal to the function.
-- normalize() needs a UTF8 database, which the migrator's preflight checks before the first change.

create or replace function memsub.normalize_text(p_value text) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select lower(btrim(regexp_replace(normalize(p_value, nfc), '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g'))) $$;
comment on function memsub.normalize_text(text) is
    'Matching form of a name: composed to Unicode NFC (a letter and its combining accent as one character), each '
    'run of whitespace (spaces, tabs, line breaks, no-break spaces) made one space, trimmed, lower case.';

create or replace function memsub._json_numbers_trimmed(p_value jsonb) returns jsonb
language sql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select case jsonb_typeof(p_value)
               when 'number' then to_jsonb(trim_scale((p_value #>> '{}')::numeric))
               when 'object' then (select coalesce(jsonb_object_agg(e.key, memsub._json_numbers_trimmed(e.value)),
                                                   '{}')
                                     from jsonb_each(p_value) as e)
               when 'array' then (select coalesce(jsonb_agg(memsub._json_numbers_trimmed(a.value) order by a.n), '[]')
                                    from jsonb_array_elements(p_value) with ordinality as a(value, n))
               else p_value end
$$;
comment on function memsub._json_numbers_trimmed(jsonb) is
    'The JSON value with every number written without trailing zeros (1.0 as 1, 1.50 as 1.5), at any depth.';

create or replace function memsub._normalize_json_value(p_value jsonb) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select case when jsonb_typeof(p_value) = 'string' then memsub.normalize_text(p_value #>> '{}')
                else memsub._json_numbers_trimmed(p_value)::text end
$$;
comment on function memsub._normalize_json_value(jsonb) is
    'Matching form of a JSON value: strings as memsub.normalize_text, any other value as its canonical JSON text '
    'with every number written without trailing zeros (1 and 1.0 match, as jsonb compares them).';

-- The edge keys -----------------------------------------------------------------------------------------------

-- What stands on source_key / target_key (the exclusion constraint, the unique edge key, the incoming-edge index,
-- and mv_entity_graph with its index) goes with the columns and is made again afterwards from its own definition as
-- the catalog holds it (a test compares an upgraded database with a fresh one). The statements wait here.
create temporary table edge_key_dependents (
    position  integer generated always as identity,
    statement text not null
) on commit drop;
do $$
declare
    v_table constant regclass := 'memsub.entity_relationships';
    v_keys  constant smallint[] := array(select a.attnum from pg_catalog.pg_attribute a
                                          where a.attrelid = 'memsub.entity_relationships'::regclass
                                            and a.attname in ('source_key', 'target_key'));
    v_views regclass[] := array(select distinct r.ev_class::regclass
                                  from pg_catalog.pg_depend d
                                  join pg_catalog.pg_rewrite r on r.oid = d.objid
                                 where d.classid = 'pg_catalog.pg_rewrite'::regclass
                                   and d.refobjid = 'memsub.entity_relationships'::regclass
                                   and d.refobjsubid = any(v_keys));
begin
    if exists (select from pg_catalog.pg_class c where c.oid = any(v_views) and c.relkind <> 'm') then
        raise exception 'migration 2.38.0 makes materialized views again, and a plain view reads the edge keys';
    end if;
    insert into edge_key_dependents (statement)
    select format('alter table %s add constraint %I %s', v_table, c.conname, pg_catalog.pg_get_constraintdef(c.oid))
      from pg_catalog.pg_constraint c
     where c.conrelid = v_table and c.conkey && v_keys
     order by c.conname;
    insert into edge_key_dependents (statement)
    select s.statement
      from pg_catalog.pg_class c
     cross join lateral (values
               (format('create materialized view %s as %s with no data', c.oid::regclass,
                       rtrim(pg_catalog.pg_get_viewdef(c.oid), ';'))),
               (format('comment on materialized view %s is %L', c.oid::regclass,
                       pg_catalog.obj_description(c.oid, 'pg_class'))),
               (format('alter materialized view %s owner to %I', c.oid::regclass, c.relowner::regrole))) as s(statement)
     where c.oid = any(v_views)
     order by c.relname;
    -- The indexes of both, after the views: the table's that read a key (not the constraint's own), the views' all.
    insert into edge_key_dependents (statement)
    select s.statement
      from pg_catalog.pg_index i
     cross join lateral (values (pg_catalog.pg_get_indexdef(i.indexrelid)),
                                (format('comment on index %s is %L', i.indexrelid::regclass,
                                        pg_catalog.obj_description(i.indexrelid, 'pg_class')))) as s(statement)
     where (i.indrelid = v_table and i.indkey::smallint[] && v_keys
            and not exists (select from pg_catalog.pg_constraint c where c.conindid = i.indexrelid))
        or i.indrelid = any(v_views)
     order by i.indexrelid::regclass::text;
    for i in 1 .. coalesce(cardinality(v_views), 0) loop
        execute format('drop materialized view %s cascade', v_views[i]);  -- with the tenant_* view over it (sql/)
    end loop;
end
$$;

alter table memsub.entity_relationships
    drop column source_key,
    drop column target_key;
alter table memsub.entity_relationships
    add column source_key text generated always as (
        lower(btrim(regexp_replace(normalize(source_entity, nfc), '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g')))) stored,
    add column target_key text generated always as (
        lower(btrim(regexp_replace(normalize(target_entity, nfc), '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g')))) stored;
comment on column memsub.entity_relationships.source_key is
    'Matching form of source_entity (memsub.normalize_text: NFC, white space collapsed, lower case): edges and '
    'lookups compare these.';
comment on column memsub.entity_relationships.target_key is
    'Matching form of target_entity (memsub.normalize_text).';

-- Stored keys computed again, and rows made one merged. Row-level security is forced on the three tables (even
-- their owner sees no row without a tenant context), so it is lifted for this block and put back as it was.
do $$
declare
    v_tables   constant text[] := array['entity_relationships', 'knowledge_facts', 'world_model_entities'];
    v_table    text;
    v_security jsonb := '{}';
    v_edge     record;
    v_island   text[];       -- tenant and keys of the edge whose island is being merged
    v_keep     uuid;         -- the island's first row, which takes in the others
    v_reach    timestamptz;  -- where the island's windows end so far
    v_facts    record;
begin
    foreach v_table in array v_tables loop
        v_security := v_security || jsonb_build_object(v_table, (
            select jsonb_build_array(c.relrowsecurity, c.relforcerowsecurity)
              from pg_catalog.pg_class c where c.oid = format('memsub.%I', v_table)::regclass));
        execute format('alter table memsub.%I no force row level security', v_table);
        execute format('alter table memsub.%I disable row level security', v_table);
    end loop;

    update memsub.entity_relationships r
       set relationship_type = memsub.normalize_text(r.relationship_type)
     where r.relationship_type <> memsub.normalize_text(r.relationship_type);

    -- Edges: only keys held by more than one row can overlap (the old constraint kept each old key's windows
    -- apart). Walked in order of start; a window that starts before the reach of the current island joins it.
    for v_edge in
        select r.tenant_id, r.relationship_id, r.source_key, r.relationship_type, r.target_key, r.valid_period
          from memsub.entity_relationships r
         where (r.tenant_id, r.source_key, r.relationship_type, r.target_key) in (
                   select d.tenant_id, d.source_key, d.relationship_type, d.target_key
                     from memsub.entity_relationships d
                    group by d.tenant_id, d.source_key, d.relationship_type, d.target_key
                   having count(*) > 1)
         order by r.tenant_id, r.source_key, r.relationship_type, r.target_key, lower(r.valid_period), r.first_seen,
                  r.relationship_id
    loop
        if v_island = array[v_edge.tenant_id::text, v_edge.source_key, v_edge.relationship_type, v_edge.target_key]
           and lower(v_edge.valid_period) < v_reach then
            update memsub.entity_relationships k
               set valid_period = tstzrange(lower(k.valid_period),
                                            nullif(greatest(coalesce(upper(k.valid_period), 'infinity'),
                                                            coalesce(upper(o.valid_period), 'infinity')),
                                                   'infinity'),
                                            '[)'),
                   mention_count = k.mention_count + o.mention_count,
                   confidence = 1 - (1 - k.confidence) * (1 - o.confidence),
                   first_seen = least(k.first_seen, o.first_seen),
                   last_seen = greatest(k.last_seen, o.last_seen),
                   evidence = (select coalesce(jsonb_agg(distinct e), '[]')
                                 from jsonb_array_elements(k.evidence || o.evidence) as e),
                   source_packet = coalesce(k.source_packet, o.source_packet),
                   ttl = case when k.ttl is not null and o.ttl is not null then greatest(k.ttl, o.ttl) end
              from memsub.entity_relationships o
             where k.tenant_id = v_edge.tenant_id and k.relationship_id = v_keep
               and o.tenant_id = v_edge.tenant_id and o.relationship_id = v_edge.relationship_id;
            delete from memsub.entity_relationships o
             where o.tenant_id = v_edge.tenant_id and o.relationship_id = v_edge.relationship_id;
            v_reach := greatest(v_reach, coalesce(upper(v_edge.valid_period), 'infinity'));
        else
            v_island := array[v_edge.tenant_id::text, v_edge.source_key, v_edge.relationship_type, v_edge.target_key];
            v_keep := v_edge.relationship_id;
            v_reach := coalesce(upper(v_edge.valid_period), 'infinity');
        end if;
    end loop;

    -- Facts: the first asserted of each new key takes in the others, then every key is written in the new form.
    for v_facts in
        select f.tenant_id, array_agg(f.fact_id order by f.created_at, f.fact_id) as ids
          from memsub.knowledge_facts f
         group by f.tenant_id,
                  memsub.normalize_text(f.subject),
                  memsub.normalize_text(f.predicate),
                  memsub._normalize_json_value(f.object)
        having count(*) > 1
    loop
        update memsub.knowledge_facts k
           set supporting_packet_count = a.supporting, contradiction_count = a.contradictions,
               access_count = a.accesses, last_accessed = a.last_accessed, updated_at = a.updated_at,
               confidence = a.confidence, source_packet = coalesce(k.source_packet, a.source_packet), ttl = a.ttl
          from (select sum(o.supporting_packet_count)::integer as supporting,
                       sum(o.contradiction_count)::integer as contradictions,
                       sum(o.access_count)::integer as accesses,
                       max(o.last_accessed) as last_accessed, max(o.updated_at) as updated_at,
                       round((1 - exp(sum(ln(greatest(1 - o.confidence, 1e-300)))))::numeric, 12)::double precision
                           as confidence,
                       (array_agg(o.source_packet order by o.created_at, o.fact_id)
                            filter (where o.source_packet is not null))[1] as source_packet,
                       case when bool_and(o.ttl is not null) then max(o.ttl) end as ttl
                  from memsub.knowledge_facts o
                 where o.tenant_id = v_facts.tenant_id and o.fact_id = any(v_facts.ids)) a
         where k.tenant_id = v_facts.tenant_id and k.fact_id = v_facts.ids[1];
        delete from memsub.knowledge_facts o
         where o.tenant_id = v_facts.tenant_id and o.fact_id = any(v_facts.ids[2:]);
    end loop;
    update memsub.knowledge_facts f
       set subject_normalized = n.subject, predicate = n.predicate, object_normalized = n.object
      from (select s.tenant_id, s.fact_id,
                   memsub.normalize_text(s.subject) as subject,
                   memsub.normalize_text(s.predicate) as predicate,
                   memsub._normalize_json_value(s.object) as object
              from memsub.knowledge_facts s) n
     where f.tenant_id = n.tenant_id and f.fact_id = n.fact_id
       and (f.subject_normalized, f.predicate, f.object_normalized) is distinct from (n.subject, n.predicate, n.object);

    -- A blank alias (no-break spaces included) has an empty matching form, and no key.
    update memsub.world_model_entities w
       set alias_keys = array(select distinct k from unnest(w.aliases) as a, memsub.normalize_text(a) as k
                               where k <> '' order by 1)
     where cardinality(w.aliases) > 0;

    foreach v_table in array v_tables loop
        if (v_security -> v_table ->> 0)::boolean then
            execute format('alter table memsub.%I enable row level security', v_table);
        end if;
        if (v_security -> v_table ->> 1)::boolean then
            execute format('alter table memsub.%I force row level security', v_table);
        end if;
    end loop;
end
$$;

-- The merged edges have one window each again: what stood on their keys is made again.
do $$
declare
    v_statement text;
begin
    for v_statement in select d.statement from edge_key_dependents d order by d.position loop
        execute v_statement;
    end loop;
end
$$;

-- Entities: the name key and the name words ----------------------------------------------------------------------

drop index memsub.idx_world_model_entities_key;
create index idx_world_model_entities_key
    on memsub.world_model_entities (tenant_id,
                                    (lower(btrim(regexp_replace(normalize(entity_id, nfc), '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ',
                                                              'g')))));
comment on index memsub.idx_world_model_entities_key is
    'Finds an entity by the matching form of its name (memsub.normalize_text).';

create or replace function memsub._entity_name_words(p_entity_id text, p_aliases text[]) returns tsvector
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select pg_catalog.to_tsvector('simple'::regconfig,
                                  normalize(p_entity_id || ' ' || pg_catalog.array_to_string(p_aliases, ' '), nfc))
$$;
reindex index memsub.idx_world_model_entities_name_words;
