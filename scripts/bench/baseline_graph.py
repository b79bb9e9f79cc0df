"""A graph of dcode's shape with none of dcode in it: what a server costs a step for any graph.

``TurnStart`` once, then ``StepStart``, ``model`` and ``tools`` a step, as dcode's graph makes
them (``dcode.agent.middleware.sequence``): the same supersteps and checkpoints. Its model is
the same ``ChatOpenAI`` streaming from the scripted model server (``DCODE_SERVE_BASE_URL``,
which ``dcode serve`` and the bench set), with tools of the same names that do nothing. The
bench (``served.py --baseline``) serves it beside dcode's graph on the same server and runs it
in process too, so that the served-minus-embedded overhead of the two can be compared.
"""

# Any: LangGraph's state and compiled graphs are untyped here

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph

BASE_URL_ENV = "DCODE_SERVE_BASE_URL"
NODES = ("TurnStart", "StepStart", "model", "tools")


@tool
def write_file(file_path: str, content: str) -> str:
    """Write a file (here: nothing is written)."""
    return "ok"


@tool
def read_file(file_path: str) -> str:
    """Read a file (here: nothing is read)."""
    return "ok"


@tool
def edit_file(file_path: str, old_string: str, new_string: str) -> str:
    """Edit a file (here: nothing is edited)."""
    return "ok"


def build(base_url: str, checkpointer: Any = None) -> Any:
    """The graph, its model answering from ``base_url``."""
    llm = ChatOpenAI(
        model="test-model", base_url=base_url, api_key="k", streaming=True, stream_usage=True
    ).bind_tools([write_file, read_file, edit_file])

    async def nothing(state: MessagesState) -> dict[str, Any]:
        return {}

    async def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await llm.ainvoke(state["messages"])]}

    async def tools(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        calls = last.tool_calls if isinstance(last, AIMessage) else []
        return {
            "messages": [ToolMessage("ok", tool_call_id=c["id"], name=c["name"]) for c in calls]
        }

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("TurnStart", nothing)
    builder.add_node("StepStart", nothing)
    builder.add_node("model", model)
    builder.add_node("tools", tools)
    builder.add_edge(START, "TurnStart")
    builder.add_edge("TurnStart", "StepStart")
    builder.add_edge("StepStart", "model")
    builder.add_conditional_edges("model", route, ["tools", END])
    builder.add_edge("tools", "StepStart")
    return builder.compile(checkpointer=checkpointer)


async def graph() -> Any:
    """The served graph (a factory: the server's environment names the model's address)."""
    return build(os.environ[BASE_URL_ENV])
