-- memsub 2.50.0: the tasks, agents and checkpoints of a deleted session stay its user's. They were read where
-- their session was (its user, a context naming it, admins); deleting the session set their session_id to NULL
-- (the foreign keys' ON DELETE SET NULL), and a row without a session was the whole organization's, so another
-- user of the organization read a task's payload, result and error, an agent's metadata and a checkpoint's
-- state that had been private to the session's user. memsub.session_delete (sql/710_sessions.sql) now writes the
-- session's user into deleted_session_user_id of each such row before it deletes the session, and the policies
-- (sql/720_tasks.sql, sql/730_checkpoints.sql) keep a row that has one for that user and admins.
-- Rows whose session was deleted before this release cannot be told from rows that never had a session (nothing
-- kept the session's id or user), so they stay as they are.
-- "if not exists": the migration may run again over a database that has the columns.

alter table memsub.tasks add column if not exists deleted_session_user_id uuid;
alter table memsub.agents add column if not exists deleted_session_user_id uuid;
alter table memsub.checkpoints add column if not exists deleted_session_user_id uuid;

comment on column memsub.tasks.deleted_session_user_id is
    'User of the session the task was in when memsub.session_delete deleted that session (NULL otherwise): the '
    'task stays readable by that user and admins only, as it was while the session existed.';
comment on column memsub.agents.deleted_session_user_id is
    'User of the session the agent was in when memsub.session_delete deleted that session (NULL otherwise): the '
    'agent stays readable by that user and admins only, as it was while the session existed.';
comment on column memsub.checkpoints.deleted_session_user_id is
    'User of the checkpoint''s session when memsub.session_delete deleted that session (NULL otherwise): the '
    'checkpoint (its task state) stays readable by that user and admins only, as it was while the session existed.';
