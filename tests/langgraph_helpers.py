"""A compiled one-node LangGraph graph the checkpointer tests run through a saver."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph


class Steps(TypedDict):
    steps: Annotated[list[str], operator.add]


def thinking_graph(saver: Any) -> Any:
    """One "think" node appending ``think-<steps so far>`` to the state, checkpointed by ``saver``."""
    builder = StateGraph(Steps)
    builder.add_node("think", lambda state: {"steps": [f"think-{len(state['steps'])}"]})
    builder.add_edge(START, "think")
    builder.add_edge("think", END)
    return builder.compile(checkpointer=saver)
