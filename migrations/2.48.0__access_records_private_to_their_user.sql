-- memsub 2.48.0: a user's access records are read by that user alone. A record of a shared target was 'shared',
-- so every other user of the organization read the query text a user searched with (the same words that found
-- the user's private packets too), and who read what and when. Recording now gives every record of a context
-- with a user the scope 'l-private' (sql/220_access_log.sql, sql/310_semantic_search.sql); the records written
-- before go here. A record without a user (a service's context) stays as it is.

-- Row-level security is forced on the table (even its owner sees no row without a tenant context), so it is
-- disabled for this block and enabled again (forced or not, a table whose row-level security is disabled shows
-- its owner every row).
do $$
declare
    v_lifted boolean;
begin
    select c.relrowsecurity into v_lifted from pg_catalog.pg_class c
     where c.oid = 'memsub.memory_access_log'::regclass;
    if v_lifted then
        alter table memsub.memory_access_log disable row level security;
    end if;
    update memsub.memory_access_log l set scope = 'l-private' where l.scope = 'shared' and l.user_id is not null;
    if v_lifted then
        alter table memsub.memory_access_log enable row level security;
    end if;
end
$$;

comment on column memsub.memory_access_log.scope is
    'Who may read the record (the user policy, as on packets): l-private, its accessor alone, for every record of '
    'a context with a user (its query and what it read are its own); for a context without a user, shared when '
    'the target is shared (facts and reflections always are) and l-private when the target is a cursor or '
    'l-private packet or embedding.';
