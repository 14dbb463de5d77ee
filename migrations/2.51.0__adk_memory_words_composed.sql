-- memsub 2.51.0: the words of an ADK memory are those of its text composed to Unicode NFC (memsub._adk_words,
-- sql/940_adk.sql). A combining accent is no letter, so a text that spelled "café" as e and U+0301 was stored with
-- the word "cafe": a query typed with one é missed it, and a query of "cafe" found it. The words of the memories
-- written before are taken again from their text; a text that is NFC already keeps the words it has. The
-- expression is the function's, spelled out: the repeatable SQL that replaces the function runs after the
-- migrations.

-- Row-level security is forced on the table (even its owner sees no row without a tenant context), so it is
-- disabled for this block and enabled again (forced or not, a table whose row-level security is disabled shows
-- its owner every row).
do $$
declare
    v_lifted boolean;
begin
    select c.relrowsecurity into v_lifted from pg_catalog.pg_class c
     where c.oid = 'memsub.adk_memories'::regclass;
    if v_lifted then
        alter table memsub.adk_memories disable row level security;
    end if;
    update memsub.adk_memories m
       set words = (select coalesce(array_agg(distinct lower(w[1])), '{}')
                      from regexp_matches(normalize(m.text, nfc), '([[:alnum:]]+)', 'g') w)
     where m.text is not nfc normalized;
    if v_lifted then
        alter table memsub.adk_memories enable row level security;
    end if;
end
$$;

comment on column memsub.adk_memories.words is
    'The distinct lower-case words of text composed to Unicode NFC (memsub._adk_words): what a keyword search '
    'matches.';
