"""The LangGraph checkpointer (memsub.integrations.langgraph_checkpoint) against the embedded server.

The async saver is run through LangGraph's own conformance suite (``langgraph-checkpoint-conformance``), every
capability; the sync saver runs a real compiled graph. Both act as an ordinary app login, so row-level security
is what keeps two tenants' threads apart.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, TypedDict, cast

import psycopg
import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.graph import END, START, StateGraph

from langgraph_helpers import thinking_graph
from memsub.errors import LocalValidationError
from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.langgraph_checkpoint import AsyncMemsubSaver, MemsubSaver

from helpers import assert_refused, run_doc_example
from refusal_helpers import row_counts


def test_async_saver_passes_langgraph_conformance_suite(db: Any) -> None:
    tenant = uuid.uuid4()

    @checkpointer_test(name="AsyncMemsubSaver")
    async def memsub_saver() -> AsyncIterator[AsyncMemsubSaver]:
        saver = await AsyncMemsubSaver.from_dsn(db.dsn("app"), tenant_id=tenant)
        try:
            yield saver
        finally:
            await saver.close()

    report = asyncio.run(validate(memsub_saver))
    failures = {name: [f"{f}" for f in result.failures]
                for name, result in report.results.items() if result.passed is not True}
    assert failures == {}, failures
    assert all(result.detected for result in report.results.values()), report.results
    passed = sum(result.tests_passed for result in report.results.values())
    print(f"conformance: {passed} passed over {len(report.results)} capabilities")
    assert passed > 50


def test_sync_saver_keeps_graph_state_per_thread_and_tenant(db: Any) -> None:
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    pool = sync_pool(db.dsn("app"))
    try:
        graph_a = thinking_graph(MemsubSaver(pool, TenantContext(tenant_a)))
        graph_b = thinking_graph(MemsubSaver(pool, TenantContext(tenant_b)))
        thread = {"configurable": {"thread_id": "conversation-1"}}
        graph_a.invoke({"steps": ["start"]}, thread)
        state = graph_a.invoke({"steps": ["again"]}, thread)
        assert state["steps"] == ["start", "think-1", "again", "think-3"]
        history = list(graph_a.get_state_history(thread))
        assert len(history) >= 4
        parents = [h.parent_config["configurable"]["checkpoint_id"] for h in history if h.parent_config]
        ids = {h.config["configurable"]["checkpoint_id"] for h in history}
        assert set(parents) <= ids  # every parent of the chain is stored

        # Tenant B uses the same thread id and sees nothing of tenant A's, and cannot delete it.
        assert graph_b.get_state(thread).values == {}
        MemsubSaver(pool, TenantContext(tenant_b)).delete_thread("conversation-1")
        assert graph_a.get_state(thread).values["steps"][-1] == "think-3"
    finally:
        pool.close()


def test_checkpoint_rows_obey_row_level_security(db: Any) -> None:
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    pool = sync_pool(db.dsn("app"))
    try:
        thinking_graph(MemsubSaver(pool, TenantContext(tenant_a))).invoke(
            {"steps": []}, {"configurable": {"thread_id": "t"}})
    finally:
        pool.close()
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant_b)])
        rows = conn.execute("select count(*) from memsub.langgraph_checkpoint_list(p_thread_id => 't')").fetchone()
        assert rows == (0,)
        conn.commit()  # a transaction acts for one tenant
        conn.execute("select memsub.set_context(%s)", [str(tenant_a)])
        rows = conn.execute("select count(*) from memsub.langgraph_checkpoint_list(p_thread_id => 't')").fetchone()
        assert rows is not None and rows[0] > 0
    with db.connect() as conn:  # the superuser sees the tenant column is what isolates them
        owners = conn.execute("select distinct tenant_id from memsub.langgraph_checkpoints").fetchall()
        assert owners == [(tenant_a,)]


def test_bad_arguments_name_the_field_and_write_nothing(db: Any) -> None:

    tenant = uuid.uuid4()
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        assert_refused(conn, [
            ("select memsub.langgraph_checkpoint_put('', '', 'c1', null, 'msgpack', '\\x00', '{}')", "thread_id"),
            ("select memsub.langgraph_checkpoint_put('t', '', 'c1', null, 'msgpack', '\\x00', '[1]')", "metadata"),
            ("select memsub.langgraph_checkpoint_put_writes('t', '', 'c1', 'task', '', '{0,1}', '{a}', '{x}', "
             "'{\\\\x00}')", "channels"),
            ("select memsub.langgraph_thread_prune('{t}', 'everything')", "strategy"),
        ])
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.langgraph_checkpoints").fetchone() == (0,)
        assert conn.execute("select count(*) from memsub.langgraph_checkpoint_writes").fetchone() == (0,)


CHECKPOINT_TABLES = ("langgraph_checkpoints", "langgraph_checkpoint_writes")


def _refused(db: Any, action: Callable[[], object], field: str, sqlstate: str,
             error: type[Exception] = LocalValidationError) -> None:
    before = row_counts(db, CHECKPOINT_TABLES)
    with pytest.raises(error) as refused:
        action()
    assert field in str(refused.value)
    if isinstance(refused.value, LocalValidationError):
        assert (refused.value.field, refused.value.sqlstate) == (field, sqlstate)
    assert row_counts(db, CHECKPOINT_TABLES) == before


def test_metadata_keeps_its_backslashes_and_loses_only_nul_characters(db: Any) -> None:
    # A backslash followed by "u0000" is ordinary text: it was once taken for JSON's NUL escape and cut out of
    # the serialized metadata, which corrupted the value or made it invalid JSON.
    metadata = {"source": "input", "step": 1, "path": "C:\\u0000x", "escaped": "a\\\\u0000b", "ends": "z\\u0000",
                "nul": "x\x00y", "nested": {"deep": ["p\x00q", "r\\u0000s"]}}
    with MemsubSaver.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4()) as saver:
        stored = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty_checkpoint(),
                           cast(CheckpointMetadata, metadata), {})
        found = saver.get_tuple(stored)
        assert found is not None
        assert found.metadata == {**metadata, "nul": "xy", "nested": {"deep": ["pq", "r\\u0000s"]}}
        assert [t.metadata["path"] for t in saver.list(None, filter={"path": "C:\\u0000x"})] == ["C:\\u0000x"]


@pytest.mark.parametrize(("metadata", "field", "sqlstate", "error"), [
    ({"note": "\ud800"}, "metadata.note", "22021", LocalValidationError),
    ({"deep": {"\udfff": 1}}, "metadata.deep", "22021", LocalValidationError),
    ({"score": float("nan")}, "metadata.score", "", TypeError),
    ({"when": object()}, "metadata.when", "", TypeError),
])
def test_metadata_that_is_not_json_is_refused_by_name(db: Any, metadata: dict[str, Any], field: str,
                                                       sqlstate: str, error: type[Exception]) -> None:
    with MemsubSaver.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4()) as saver:
        _refused(db, lambda: saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
                                       empty_checkpoint(), cast(CheckpointMetadata, metadata), {}),
                 field, sqlstate, error)
        _refused(db, lambda: list(saver.list(None, filter=metadata)), field.replace("metadata", "filter"),
                 sqlstate, error)


def test_uuid_and_integer_thread_ids_are_their_text(db: Any) -> None:
    thread = uuid.uuid4()
    with MemsubSaver.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4()) as saver:
        saver.put({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
        saver.put({"configurable": {"thread_id": 7, "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
        assert saver.get_tuple({"configurable": {"thread_id": str(thread)}}) is not None
        assert saver.get_tuple({"configurable": {"thread_id": "7"}}) is not None
        assert sorted(t.config["configurable"]["thread_id"] for t in saver.list(None)) == sorted([str(thread), "7"])
        saver.delete_thread(thread)  # type: ignore[arg-type] - LangGraph passes what the config held
        assert saver.get_tuple({"configurable": {"thread_id": str(thread)}}) is None


@pytest.mark.parametrize("thread_id", [["a"], ("a", "b"), 1.5, True, b"t", {"a": 1}])
def test_a_thread_id_that_is_not_an_identifier_is_refused_by_name(db: Any, thread_id: Any) -> None:
    # A list was stored as the array's text ('{a}'); a number that is not an integer, or bytes, failed as
    # "function does not exist".
    with MemsubSaver.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4()) as saver:
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        _refused(db, lambda: saver.put(config, empty_checkpoint(), {}, {}), "thread_id", "22023")  # type: ignore[arg-type]
        _refused(db, lambda: saver.get_tuple(config), "thread_id", "22023")  # type: ignore[arg-type]
        _refused(db, lambda: saver.copy_thread("t", thread_id), "target_thread_id", "22023")


def test_one_string_for_a_list_of_ids_is_refused_not_split(db: Any) -> None:
    with MemsubSaver.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4()) as saver:
        saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
        _refused(db, lambda: saver.prune("t"), "thread_ids", "22023")
        _refused(db, lambda: saver.delete_for_runs("run-1"), "run_ids", "22023")
        _refused(db, lambda: saver.prune(["t", 1.5]), "thread_ids[1]", "22023")  # type: ignore[list-item]
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None


def test_integrations_doc_example_runs_as_written(db: Any, capsys: Any) -> None:
    run_doc_example("LangGraph checkpointer", db.dsn("app"))
    assert "{'steps': ['hello', 'thought']}" in capsys.readouterr().out


def _extend(state: list[str] | None, writes: list[list[str]]) -> list[str]:
    return list(state or []) + [step for write in writes for step in write]


class DeltaSteps(TypedDict):
    steps: Annotated[list[str], DeltaChannel(_extend, list)]


def test_keep_latest_refuses_threads_that_use_a_delta_channel_and_prunes_nothing(db: Any) -> None:
    """A DeltaChannel keeps only its changes in most checkpoints and rebuilds its value from older ones: keeping
    the latest checkpoint alone would empty it. LangGraph's PostgresSaver refuses such a thread with
    NotImplementedError; so does the memsub saver, before deleting anything. "delete" still removes the thread."""
    builder = StateGraph(DeltaSteps)
    builder.add_node("think", lambda state: {"steps": ["thought"]})
    builder.add_edge(START, "think")
    builder.add_edge("think", END)
    with MemsubSaver.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4()) as saver:
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        for turn in range(3):
            graph.invoke({"steps": [f"hello{turn}"]}, config)
        before = graph.get_state(config).values
        count = len(list(saver.list(config)))
        with pytest.raises(NotImplementedError, match="DeltaChannel"):
            saver.prune(["t"])
        assert graph.get_state(config).values == before and len(list(saver.list(config))) == count
        assert before["steps"][:2] == ["hello0", "thought"]
        saver.prune(["t"], strategy="delete")
        assert list(saver.list(config)) == []


ORG_X = "0000000a-0000-0000-0000-00000000000a"


def test_a_thread_is_changed_only_from_the_organization_context_that_wrote_it(db: Any) -> None:
    """A thread id is one thread of the tenant, written from one organization context (or the tenant-wide one).
    From another context a put, a write, a prune or a delete of it is refused naming thread_id (42501), never a raw
    row-level security message, and never an overwrite or a delete of the other context's checkpoints."""
    tenant = uuid.uuid4()
    put = ("select memsub.langgraph_checkpoint_put(%s, '', %s, null, 'json', '\\x01', '{}')")
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s, %s)", [str(tenant), ORG_X])
        conn.execute(put, ["of-x", "c1"])
        conn.commit()
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        conn.execute(put, ["tenant-wide", "c1"])
        conn.commit()
        for context, statement, params in [
                ([str(tenant)], put, ["of-x", "c1"]),
                ([str(tenant)], put, ["of-x", "c2"]),
                ([str(tenant), ORG_X], put, ["tenant-wide", "c1"]),
                ([str(tenant), ORG_X], "select memsub.langgraph_thread_delete('{tenant-wide}')", []),
                ([str(tenant), ORG_X], "select memsub.langgraph_thread_prune('{tenant-wide}', 'keep_latest')", []),
                ([str(tenant), ORG_X], "select memsub.langgraph_thread_copy('of-x', 'tenant-wide')", []),
                ([str(tenant), ORG_X], "select memsub.langgraph_checkpoint_put_writes('tenant-wide', '', 'c1', "
                                       "'task', '', '{0}', '{ch}', '{json}', array['\\x01'::bytea])", [])]:
            conn.execute(f"select memsub.set_context({', '.join(['%s'] * len(context))})", context)
            try:
                conn.execute(statement, params)
            except psycopg.Error as error:
                assert (error.sqlstate, error.diag.column_name) == ("42501", "thread_id"), (statement, error)
                assert "row-level security" not in str(error)
            else:
                raise AssertionError(f"accepted from another context: {statement} {params}")
            conn.rollback()
    with db.connect() as conn:
        kept = conn.execute("select thread_id, org_id::text, checkpoint from memsub.langgraph_checkpoints "
                            "order by thread_id").fetchall()
    assert kept == [("of-x", ORG_X, b"\x01"), ("tenant-wide", None, b"\x01")]


def test_an_agent_session_is_changed_only_from_the_organization_context_that_wrote_it(db: Any) -> None:
    """The OpenAI Agents session items follow the same rule, for reads as well (a session's history is read
    only where the conversation goes on): an organization may not read, add to, pop or clear the tenant-wide
    items (42501 naming session_id); they stay whole."""
    tenant = uuid.uuid4()
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        conn.execute("""select memsub.agent_session_add_items('s', '[{"n": 1}, {"n": 2}]')""")
        conn.commit()
        for statement in ("select memsub.agent_session_get_items('s')",
                          """select memsub.agent_session_add_items('s', '[{"n": 3}]')""",
                          "select memsub.agent_session_pop_item('s')", "select memsub.agent_session_clear('s')"):
            conn.execute("select memsub.set_context(%s, %s)", [str(tenant), ORG_X])
            try:
                conn.execute(statement)
            except psycopg.Error as error:
                assert (error.sqlstate, error.diag.column_name) == ("42501", "session_id"), (statement, error)
            else:
                raise AssertionError(f"accepted from another context: {statement}")
            conn.rollback()
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.agent_session_items").fetchone() == (2,)


LONG_ID = "x" * 513


@pytest.mark.parametrize(("statement", "params", "field"), [
    ("select memsub.langgraph_checkpoint_put(%s, '', 'c', null, 'json', '\\x01', '{}')", [LONG_ID], "thread_id"),
    ("select memsub.langgraph_checkpoint_put('t', '', %s, null, 'json', '\\x01', '{}')", [LONG_ID], "checkpoint_id"),
    ("select memsub.langgraph_checkpoint_put('t', '', 'c', null, 'json', '\\x01', %s)",
     ['{"run_id": "' + LONG_ID + '"}'], "metadata.run_id"),
    ("select memsub.langgraph_checkpoint_put_writes('t', '', 'c', %s, '', '{0}', '{ch}', '{json}', "
     "array['\\x01'::bytea])", [LONG_ID], "task_id"),
    ("select memsub.agent_session_add_items(%s, '[{}]')", [LONG_ID], "session_id"),
    ("select * from memsub.adk_session_create(%s, 'u')", [LONG_ID], "app_name"),
    ("select * from memsub.adk_session_create('a', 'u', %s)", [LONG_ID], "session_id"),
    ("select memsub.adk_memory_add('a', 'u', 's', %s)",
     ['[{"event_id": "' + LONG_ID + '", "content": {}, "text": "t"}]'], "memories[0].event_id"),
])
def test_an_adapter_identifier_over_max_id_bytes_is_refused_naming_it(db: Any, statement: str, params: list[Any],
                                                                       field: str) -> None:
    """The adapters key their rows by these ids, and a B-tree entry holds about 2.7 kB: a longer id failed with a
    raw 'index row size' error naming nothing. Each is held against max_id_bytes (512 by default): 54000 naming
    it, nothing written."""
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(uuid.uuid4())])
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(statement, params)
        assert (refused.value.sqlstate, refused.value.diag.column_name) == ("54000", field)
        assert "max_id_bytes" in (refused.value.diag.message_detail or "")


def test_an_agent_session_item_over_max_json_bytes_is_refused_naming_it(db: Any) -> None:
    """As the ADK and session functions hold their JSON to max_json_bytes, each item of a session is held to it
    (54000 naming items[i]); nothing of the batch is written."""
    with db.connect() as conn:
        conn.execute("insert into memsub.limits (name, value) values ('max_json_bytes', 100)")
        conn.commit()
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(uuid.uuid4())])
        with pytest.raises(psycopg.Error) as refused:
            conn.execute("select memsub.agent_session_add_items('s', %s)",
                         ['[{"n": 1}, {"text": "' + "x" * 200 + '"}]'])
        assert (refused.value.sqlstate, refused.value.diag.column_name) == ("54000", "items[1]")
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.agent_session_items").fetchone() == (0,)


@pytest.mark.parametrize("same_checkpoint", [True, False], ids=["same checkpoint", "another checkpoint"])
@pytest.mark.parametrize("first_org", [True, False], ids=["organization first", "tenant-wide first"])
def test_two_contexts_writing_a_new_thread_at_once(db: Any, first_org: bool, same_checkpoint: bool) -> None:
    """The second of two concurrent first writes of a thread, from another context, waits for the first and is
    then refused by name (42501, thread_id): it neither writes the thread's rows in a second context nor overwrites
    the first's checkpoint (an organization sees a tenant-wide row), nor meets the row-level security policy (a
    tenant-wide context does not see an organization's row)."""
    from helpers import started_call

    tenant, org = uuid.uuid4(), uuid.uuid4()
    first_context, second_context = ((org, None) if first_org else (None, org))
    put = "select memsub.langgraph_checkpoint_put('t', '', %s, null, 'msgpack', %s, '{}')"
    with db.connect("app") as first, db.connect("app") as second:
        first.execute("select memsub.set_context(%s, %s)", [tenant, first_context])
        first.execute(put, ["c1", b"first"])
        second.execute("select memsub.set_context(%s, %s)", [tenant, second_context])
        second.execute("set local lock_timeout = '10s'")
        writing = started_call(db, second, lambda: second.execute(
            put, ["c1" if same_checkpoint else "c2", b"second"]))
        first.commit()
        writing.join()
        second.commit() if writing.error is None else second.rollback()
    refused = writing.error
    assert isinstance(refused, psycopg.errors.InsufficientPrivilege), refused
    assert refused.diag.column_name == "thread_id" and "row-level security" not in str(refused)
    with db.connect() as conn:
        assert conn.execute("select checkpoint_id, checkpoint, org_id from memsub.langgraph_checkpoints "
                            "where tenant_id = %s", [tenant]).fetchall() == [("c1", b"first", first_context)]


def test_list_orders_checkpoints_sharing_an_id_by_thread_and_namespace(db: Any) -> None:
    # copy_thread gives the copy the same checkpoint ids, and a subgraph's namespace may hold the same id as
    # its parent's: a list over threads or namespaces meets ties on the id, and a limit or a page must not pick
    # one of them at random. Ties come by thread, then namespace, whatever order the rows were written in.
    pool = sync_pool(db.dsn("app"))
    try:
        saver = MemsubSaver(pool, TenantContext(uuid.uuid4()))
        checkpoint = empty_checkpoint()
        metadata = cast(CheckpointMetadata, {"source": "input", "step": 0})
        for thread_id, namespace in (("t-z", "sub"), ("t-z", ""), ("t-m", "")):
            saver.put({"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace}},
                      checkpoint, metadata, {})
        saver.copy_thread("t-z", "t-a")

        def keys(config: dict[str, Any] | None, limit: int | None = None) -> list[tuple[str, str]]:
            return [(t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"])
                    for t in saver.list(cast(Any, config), limit=limit)]

        every = [("t-a", ""), ("t-a", "sub"), ("t-m", ""), ("t-z", ""), ("t-z", "sub")]
        assert keys(None) == every
        assert [keys(None, limit=n) for n in (1, 2, 5)] == [every[:1], every[:2], every]
        assert keys({"configurable": {"thread_id": "t-z"}}) == [("t-z", ""), ("t-z", "sub")]
    finally:
        pool.close()
