-- memsub 2.37.0: the format checks of memory keys, session names, document hashes and limit names keep their rules
-- without long counted repetitions. PostgreSQL's regular-expression engine makes a state for each repetition a
-- count asks for, so [^:]{0,255} cost about 8 µs a match and [A-Za-z0-9_.-]{1,128} about 5 µs, where the same
-- class repeated by + or * and a length test cost under 1 µs. The check constraints run on every row written:
-- each memory_write checked its key this way, and each write of a session row its three names.

alter table memsub.memory_entries
    drop constraint memory_entries_key_format,
    add constraint memory_entries_key_format check (key ~ '^[^:[:space:]][^:]*$' and length(key) <= 256);

alter table memsub.sessions
    drop constraint sessions_id_format,
    drop constraint sessions_project_id_format,
    drop constraint sessions_app_name_format,
    add constraint sessions_id_format check (id ~ '^[A-Za-z0-9_.-]+$' and length(id) <= 128),
    add constraint sessions_project_id_format check (project_id ~ '^[A-Za-z0-9_.-]+$' and length(project_id) <= 128),
    add constraint sessions_app_name_format check (app_name ~ '^[A-Za-z0-9_.-]+$' and length(app_name) <= 128);

alter table memsub.document_index
    drop constraint document_index_hash_format,
    add constraint document_index_hash_format check (hash ~ '^[0-9a-f]+$' and length(hash) = 64);

alter table memsub.limits
    drop constraint limits_name_format,
    add constraint limits_name_format check (name ~ '^[a-z][a-z0-9_]*$' and length(name) <= 63);
