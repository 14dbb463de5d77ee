"""The LangGraph checkpointer (memsub.integrations.langgraph_checkpoint) against the embedded server.

The async saver is run through LangGraph's own conformance suite (``langgraph-checkpoint-conformance``), every
capability; the sync saver runs a real compiled graph. Both act as an ordinary app login, so row-level security
is what keeps two tenants' threads apart.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.graph import END, START, StateGraph

from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.langgraph_checkpoint import AsyncMemsubSaver, MemsubSaver

from helpers import assert_refused, run_doc_example


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


class Counter(TypedDict):
    steps: Annotated[list[str], operator.add]


def _graph(saver: MemsubSaver) -> Any:
    builder = StateGraph(Counter)
    builder.add_node("think", lambda state: {"steps": [f"think-{len(state['steps'])}"]})
    builder.add_edge(START, "think")
    builder.add_edge("think", END)
    return builder.compile(checkpointer=saver)


def test_sync_saver_keeps_graph_state_per_thread_and_tenant(db: Any) -> None:
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    pool = sync_pool(db.dsn("app"))
    try:
        graph_a = _graph(MemsubSaver(pool, TenantContext(tenant_a)))
        graph_b = _graph(MemsubSaver(pool, TenantContext(tenant_b)))
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
        _graph(MemsubSaver(pool, TenantContext(tenant_a))).invoke(
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


def test_integrations_doc_example_runs_as_written(db: Any, capsys: Any) -> None:
    run_doc_example("LangGraph checkpointer", db.dsn("app"))
    assert "{'steps': ['hello', 'thought']}" in capsys.readouterr().out
