-- memsub 2.7.0: locks that only memsub's own roles can take.
--
-- Work that must not run twice at once (a view refresh, a tenant's importance learning, consolidation and
-- memory maintenance, a document path, one fact or relationship key) used advisory locks. Any login can take
-- any advisory-lock key, even one without a single memsub grant, and so could stall or silently skip memsub's
-- maintenance. A row lock on this table instead needs privileges on it, which only memsub_owner holds; the
-- definer function memsub.take_maintenance_lock() is how the other owner roles reach it. One row per task and
-- key hash, created on first use.

create table memsub.maintenance_lock (
    task     text   not null,
    lock_key bigint not null,
    constraint maintenance_lock_pkey primary key (task, lock_key)
);
comment on table memsub.maintenance_lock is
    'One row per serialized task and key: the transaction that holds a row lock on it runs the task '
    '(memsub.take_maintenance_lock). Holds no data; rows may be deleted when nothing runs.';
comment on column memsub.maintenance_lock.task is
    'What is serialized, e.g. refresh_memory_view, learn_importance, document_ingest.';
comment on column memsub.maintenance_lock.lock_key is
    'hashtextextended of the key within the task (a view name, a tenant id, a tenant and document path ...).';
