"""The tool set as the model and LangGraph see it: names, argument schemas and error status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel

from dcode.agent.backends import Listing, LocalBackend
from dcode.agent.tools import build_tools

CONTRACT = {
    "ls": {"path"},
    "read_file": {"file_path", "offset", "limit", "pages"},
    "write_file": {"file_path", "content"},
    "edit_file": {"file_path", "old_string", "new_string", "replace_all"},
    "glob": {"pattern", "path"},
    "grep": {"pattern", "path", "glob"},
    "web_fetch": {"url", "max_chars"},
    "execute": {"command", "timeout", "outside_sandbox"},
}

REQUIRED = {
    "ls": set(),
    "read_file": {"file_path"},
    "write_file": {"file_path", "content"},
    "edit_file": {"file_path", "old_string", "new_string"},
    "glob": {"pattern"},
    "grep": {"pattern"},
    "web_fetch": {"url"},
    "execute": {"command"},
}


def test_names_and_arguments(tmp_path: Path) -> None:
    tools = build_tools(LocalBackend(tmp_path))
    assert [tool.name for tool in tools] == list(CONTRACT)
    for tool in tools:
        assert isinstance(tool, StructuredTool)
        schema = tool.tool_call_schema
        assert isinstance(schema, type) and issubclass(schema, BaseModel)
        json_schema = schema.model_json_schema()
        assert set(json_schema["properties"]) == CONTRACT[tool.name], tool.name
        assert set(json_schema.get("required", [])) == REQUIRED[tool.name], tool.name
        assert all(prop.get("description") for prop in json_schema["properties"].values())
        assert 80 < len(tool.description) < 1500, tool.name
        assert tool.handle_tool_error is True


def test_defaults(tmp_path: Path) -> None:
    tools = {tool.name: tool for tool in build_tools(LocalBackend(tmp_path))}
    read_props = tools["read_file"].args
    # limit's default depends on the kind: 2000 lines of text, 100 s of video (the description says so)
    assert read_props["offset"]["default"] == 0 and read_props["limit"].get("default") is None
    assert (
        "default 2000" in read_props["limit"]["description"]
        and "default 100" in read_props["limit"]["description"]
    )
    assert tools["execute"].args["timeout"]["default"] == 120
    assert tools["edit_file"].args["replace_all"]["default"] is False
    assert tools["glob"].args["path"]["default"] == "."
    assert tools["web_fetch"].args["max_chars"]["default"] == 50_000
    assert (
        tools["web_fetch"].args["max_chars"]["minimum"],
        tools["web_fetch"].args["max_chars"]["maximum"],
    ) == (1, 200_000)


def _graph(tools: list[BaseTool]) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


async def test_tool_node_reports_errors_with_status(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\nsame\n")
    app = _graph(build_tools(LocalBackend(tmp_path)))
    calls = [
        {"name": "read_file", "args": {"file_path": "a.txt"}, "id": "ok"},
        {"name": "read_file", "args": {"file_path": "missing"}, "id": "missing"},
        {
            "name": "edit_file",
            "args": {"file_path": "a.txt", "old_string": "same", "new_string": "x"},
            "id": "ambiguous",
        },
        {"name": "edit_file", "args": {"file_path": "a.txt"}, "id": "bad_args"},
        {"name": "execute", "args": {"command": "exit 4"}, "id": "shell"},
    ]
    result = await app.ainvoke({"messages": [AIMessage(content="", tool_calls=calls)]})
    messages = {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}
    assert messages["ok"].status == "success"
    assert messages["missing"].status == "error"
    assert messages["ambiguous"].status == "error"
    assert "occurs 2 times" in str(messages["ambiguous"].content)
    assert messages["bad_args"].status == "error"
    assert "old_string" in str(messages["bad_args"].content)
    assert messages["shell"].status == "success"
    assert str(messages["shell"].content).endswith("[exit code: 4]")


async def test_unexpected_exceptions_become_error_messages(tmp_path: Path) -> None:
    class Broken(LocalBackend):
        async def ls(self, path: str = ".", *, max_entries: int = 1000) -> Listing:
            raise RuntimeError("disk on fire")

    ls = build_tools(Broken(tmp_path))[0]
    message = await ls.ainvoke({"type": "tool_call", "id": "x", "name": "ls", "args": {}})
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    assert message.content == "ls: unexpected RuntimeError: disk on fire"
