"""A LangGraph checkpointer that keeps graph state in memsub, isolated per tenant by row-level security.

::

    from memsub.integrations.langgraph_checkpoint import MemsubSaver

    with MemsubSaver.from_dsn(dsn, tenant_id=tenant) as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

``AsyncMemsubSaver`` is the same over psycopg's async pool. Checkpoints live in ``memsub.langgraph_checkpoints``
and their pending writes in ``memsub.langgraph_checkpoint_writes``; every call is one stored function
(``sql/910_langgraph_checkpoints.sql``) in one transaction of the saver's tenant context.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any
from uuid import UUID

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg.types.json import Jsonb

from memsub import _calls
from memsub.connection import DEFAULT_PREPARE_THRESHOLD
from memsub.errors import ImmutableError, LocalValidationError
from memsub.integrations._context import (
    Row,
    TenantContext,
    async_call,
    async_pool,
    call,
    row_count,
    sync_pool,
)

PUT = ("select memsub.langgraph_checkpoint_put(p_thread_id => %s, p_checkpoint_ns => %s, p_checkpoint_id => %s, "
       "p_parent_checkpoint_id => %s, p_checkpoint_type => %s, p_checkpoint => %s, p_metadata => %s)")
PUT_WRITES = ("select memsub.langgraph_checkpoint_put_writes(p_thread_id => %s, p_checkpoint_ns => %s, "
              "p_checkpoint_id => %s, p_task_id => %s, p_task_path => %s, p_idx => %s, p_channels => %s, "
              "p_value_types => %s, p_values => %s, p_replace => %s)")
# The reads name the columns of memsub.langgraph_checkpoint_row: a prepared `select *` fails once on each pooled
# connection after an upgrade that changes the result (docs/operations.md, "Upgrading while applications run").
LIST = ("select thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, metadata, "
        "write_task_ids, write_task_paths, write_idx, write_channels, write_value_types, write_values "
        "from memsub.langgraph_checkpoint_list(p_thread_id => %s, p_checkpoint_ns => %s, p_checkpoint_id => %s, "
        "p_filter => %s, p_before => %s, p_limit => %s)")
GET = ("select thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, metadata, "
       "write_task_ids, write_task_paths, write_idx, write_channels, write_value_types, write_values "
       "from memsub.langgraph_checkpoint_get(p_thread_id => %s, p_checkpoint_ns => %s, p_checkpoint_id => %s)")
DELETE_THREADS = "select memsub.langgraph_thread_delete(p_thread_ids => %s)"
DELETE_RUNS = "select memsub.langgraph_runs_delete(p_run_ids => %s)"
COPY_THREAD = "select memsub.langgraph_thread_copy(p_source_thread_id => %s, p_target_thread_id => %s)"
PRUNE = "select memsub.langgraph_thread_prune(p_thread_ids => %s, p_strategy => %s)"


class _Codec(BaseCheckpointSaver[str]):
    """What the sync and async savers share: their pool and tenant context, arguments of the stored functions and
    decoding of their rows."""

    def __init__(self, pool: Any, context: TenantContext, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.pool = pool
        self.context = context

    def _put_args(self, config: RunnableConfig, checkpoint: Checkpoint,
                  metadata: CheckpointMetadata) -> tuple[list[Any], RunnableConfig]:
        configurable = config["configurable"]
        thread_id = _identifier(configurable["thread_id"], "thread_id")
        checkpoint_ns = _identifier(configurable.get("checkpoint_ns", ""), "checkpoint_ns")
        value_type, value = self.serde.dumps_typed(checkpoint)
        serializable = get_serializable_checkpoint_metadata(config, metadata)
        args = [thread_id, checkpoint_ns, checkpoint["id"],
                _identifier(configurable.get("checkpoint_id"), "parent_checkpoint_id"), value_type, value,
                _metadata_jsonb(serializable, "metadata")]
        next_config: RunnableConfig = {"configurable": {
            "thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint["id"]}}
        return args, next_config

    def _writes_args(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                     task_path: str) -> list[Any]:
        configurable = config["configurable"]
        encoded = [self.serde.dumps_typed(value) for _, value in writes]
        return [_identifier(configurable["thread_id"], "thread_id"),
                _identifier(configurable.get("checkpoint_ns", ""), "checkpoint_ns"),
                _identifier(configurable["checkpoint_id"], "checkpoint_id"), task_id, task_path,
                [WRITES_IDX_MAP.get(channel, idx) for idx, (channel, _) in enumerate(writes)],
                [channel for channel, _ in writes], [t for t, _ in encoded], [v for _, v in encoded],
                all(channel in WRITES_IDX_MAP for channel, _ in writes)]

    @staticmethod
    def _list_args(config: RunnableConfig | None, filter: dict[str, Any] | None, before: RunnableConfig | None,
                   limit: int | None) -> list[Any]:
        configurable = (config or {}).get("configurable", {})
        return [_identifier(configurable.get("thread_id"), "thread_id"),
                _identifier(configurable.get("checkpoint_ns"), "checkpoint_ns"),
                _identifier(get_checkpoint_id(config), "checkpoint_id") if config else None,
                _metadata_jsonb(filter, "filter") if filter else None,
                _identifier(get_checkpoint_id(before), "before") if before else None, row_count(limit)]

    @staticmethod
    def _get_args(config: RunnableConfig) -> list[Any]:
        configurable = config["configurable"]
        return [_identifier(configurable["thread_id"], "thread_id"),
                _identifier(configurable.get("checkpoint_ns", ""), "checkpoint_ns"),
                _identifier(get_checkpoint_id(config), "checkpoint_id")]

    def _tuple(self, row: Row) -> CheckpointTuple:
        thread_id, checkpoint_ns = row["thread_id"], row["checkpoint_ns"]
        writes = sorted(
            zip(row["write_task_ids"] or [], row["write_channels"] or [], row["write_value_types"] or [],
                row["write_values"] or [], row["write_task_paths"] or [], row["write_idx"] or [], strict=True),
            key=lambda w: writes_sort_key(w[4], w[0], w[5]))
        parent = row["parent_checkpoint_id"]
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                     "checkpoint_id": row["checkpoint_id"]}},
            checkpoint=self.serde.loads_typed((row["checkpoint_type"], bytes(row["checkpoint"]))),
            metadata=row["metadata"],
            parent_config=({"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                             "checkpoint_id": parent}} if parent else None),
            pending_writes=[(task_id, channel, self.serde.loads_typed((value_type, bytes(value))))
                            for task_id, channel, value_type, value, _, _ in writes],
        )


def _identifier(value: Any, field_name: str) -> str | None:
    """A thread, namespace, checkpoint or run identifier as text: a string as it is, a UUID or an integer in its
    usual text form (a LangGraph config may hold any of them). None stays None, for the stored function to refuse
    or to read as "any". Anything else is refused by name (LocalValidationError, 22023): a list was stored as the
    text of an array."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, UUID) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    raise LocalValidationError(f"field {field_name}: a string, UUID or integer identifier, not a "
                               f"{type(value).__name__}", sqlstate="22023", field=field_name)


def _not_prunable(error: ImmutableError) -> NotImplementedError:
    """keep_latest refused for a thread that uses a DeltaChannel (SQLSTATE 0A000): the error LangGraph's own
    PostgresSaver raises for it, with the server's message."""
    return NotImplementedError(str(error))


def _identifiers(values: Sequence[Any], field_name: str) -> list[str | None]:
    """A list of identifiers (:func:`_identifier`); one string is refused, not split into its characters."""
    return [_identifier(value, f"{field_name}[{index}]")
            for index, value in enumerate(_calls.items(values, field_name))]


def _without_nul(value: Any) -> Any:
    """``value`` with the NUL character taken out of every string and key, as LangGraph does for the metadata's
    top-level strings: PostgreSQL's jsonb cannot hold it."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(item) for item in value]
    return value


def _metadata_jsonb(value: Any, field_name: str) -> Jsonb:
    """Checkpoint metadata (or a filter on it) as a jsonb parameter, without NUL characters; a value that is not
    JSON raises TypeError, and a string that is not Unicode text LocalValidationError, naming the path inside
    ``field_name`` (``metadata.note``)."""
    return _calls.strict_jsonb(_without_nul(value), field_name)


class MemsubSaver(_Codec):
    """LangGraph ``BaseCheckpointSaver`` over memsub's stored functions (synchronous)."""

    @classmethod
    def from_dsn(cls, dsn: str, *, tenant_id: Any, org_id: Any = None, user_id: Any = None,
                 serde: SerializerProtocol | None = None,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> MemsubSaver:
        """A saver with its own pool; ``prepare_threshold`` is the client's (None: prepare nothing, behind a
        transaction-mode connection pooler), a bad one ConfigurationError before any connection."""
        return cls(sync_pool(dsn, prepare_threshold=prepare_threshold), TenantContext(tenant_id, org_id, user_id),
                   serde=serde)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> MemsubSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, query: str, args: Sequence[Any]) -> list[Row]:
        return call(self.pool, self.context, query, args)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        rows = self._rows(GET, self._get_args(config))
        return self._tuple(rows[0]) if rows else None

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        for row in self._rows(LIST, self._list_args(config, filter, before, limit)):
            yield self._tuple(row)

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        args, next_config = self._put_args(config, checkpoint, metadata)
        self._rows(PUT, args)
        return next_config

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        self._rows(PUT_WRITES, self._writes_args(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._rows(DELETE_THREADS, [[_identifier(thread_id, "thread_id")]])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._rows(DELETE_RUNS, [_identifiers(run_ids, "run_ids")])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._rows(COPY_THREAD, [_identifier(source_thread_id, "source_thread_id"),
                                 _identifier(target_thread_id, "target_thread_id")])

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        try:
            self._rows(PRUNE, [_identifiers(thread_ids, "thread_ids"), strategy])
        except ImmutableError as error:
            raise _not_prunable(error) from error


class AsyncMemsubSaver(_Codec):
    """LangGraph ``BaseCheckpointSaver`` over memsub's stored functions, on psycopg's async pool."""

    @classmethod
    async def from_dsn(cls, dsn: str, *, tenant_id: Any, org_id: Any = None, user_id: Any = None,
                       serde: SerializerProtocol | None = None,
                       prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> AsyncMemsubSaver:
        """As :meth:`MemsubSaver.from_dsn`, on an async pool."""
        pool = async_pool(dsn, prepare_threshold=prepare_threshold)
        await pool.open()
        return cls(pool, TenantContext(tenant_id, org_id, user_id), serde=serde)

    async def close(self) -> None:
        await self.pool.close()

    async def __aenter__(self) -> AsyncMemsubSaver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _rows(self, query: str, args: Sequence[Any]) -> list[Row]:
        return await async_call(self.pool, self.context, query, args)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        rows = await self._rows(GET, self._get_args(config))
        return self._tuple(rows[0]) if rows else None

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        for row in await self._rows(LIST, self._list_args(config, filter, before, limit)):
            yield self._tuple(row)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        args, next_config = self._put_args(config, checkpoint, metadata)
        await self._rows(PUT, args)
        return next_config

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await self._rows(PUT_WRITES, self._writes_args(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._rows(DELETE_THREADS, [[_identifier(thread_id, "thread_id")]])

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._rows(DELETE_RUNS, [_identifiers(run_ids, "run_ids")])

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._rows(COPY_THREAD, [_identifier(source_thread_id, "source_thread_id"),
                                       _identifier(target_thread_id, "target_thread_id")])

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        try:
            await self._rows(PRUNE, [_identifiers(thread_ids, "thread_ids"), strategy])
        except ImmutableError as error:
            raise _not_prunable(error) from error
