"""Tool specs: one per tool the agent offers, the tools built from them, a default for the rest,
and a registry that loads without the LangChain stack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from langchain.agents.middleware import TodoListMiddleware
from langchain_openai import ChatOpenAI

from dcode.agent.backends import LocalBackend
from dcode.agent.compaction.summary import Compactor
from dcode.agent.graph import static_request
from dcode.agent.subagents.definitions import AgentCatalog
from dcode.agent.subagents.runs import Subagents
from dcode.agent.subagents.task_tool import make_task_tool
from dcode.agent.tools.spec import SPECS, WEB_FETCH, WRITE_TODOS, ToolKind, spec_for
from dcode.context.tokens.counter import TokenCounter

KINDS = {
    "ls": ToolKind.READ,
    "read_file": ToolKind.READ,
    "glob": ToolKind.READ,
    "grep": ToolKind.READ,
    "write_file": ToolKind.WRITE,
    "edit_file": ToolKind.WRITE,
    "execute": ToolKind.SHELL,
    "web_fetch": ToolKind.NETWORK,
    "write_todos": ToolKind.READ,
    "compact_conversation": ToolKind.READ,
    "task": ToolKind.READ,
}


def offered_tools(tmp_path: Path) -> list:
    model = ChatOpenAI(model="test-model", api_key="test", base_url="http://127.0.0.1:9/v1")
    task = make_task_tool(Subagents(AgentCatalog(), graph_for=lambda definition, nested: None))
    _, tools = static_request(
        LocalBackend(tmp_path),
        Compactor(model, 100_000, tmp_path / "history", counter=TokenCounter("test-model")),
        task,
    )
    return tools


def test_every_tool_the_model_is_offered_has_its_spec(tmp_path: Path) -> None:
    tools = offered_tools(tmp_path)
    assert sorted(tool.name for tool in tools) == sorted(SPECS)
    for tool in tools:
        spec = SPECS[tool.name]
        assert spec.kind is KINDS[tool.name], tool.name
        if spec.args is not None:
            # The model sees the spec's arguments, whatever the tool has injected besides.
            offered = tool.tool_call_schema.model_json_schema()["properties"]
            assert offered == spec.args.model_json_schema()["properties"], (
                f"{tool.name} is not built from its spec's argument model"
            )


def test_a_name_no_spec_knows_gets_kind_other() -> None:
    spec = spec_for("mcp__tracker__close_issue")
    assert spec.kind is ToolKind.OTHER and spec.name == "mcp__tracker__close_issue"
    assert (
        spec.summary({"id": 7, "reason": "done"}) == "mcp__tracker__close_issue id=7, reason=done"
    )
    assert spec.target_paths({"file_path": "a.txt"}) == []
    assert spec.diff({"file_path": "a.txt", "content": "x"}, None, "a.txt") == ""


def test_write_todos_is_langchains_tool() -> None:
    """The spec names the tool langchain's middleware adds, and summarizes its real arguments."""
    [tool] = TodoListMiddleware().tools
    assert tool.name == WRITE_TODOS.name
    todos = [
        {"content": "read the code", "status": "completed"},
        {"content": "write the test", "status": "in_progress"},
        {"content": "fix it", "status": "pending"},
    ]
    tool.args_schema.model_validate({"todos": todos})  # the shape the summary reads
    assert (
        WRITE_TODOS.summary({"todos": todos}) == "write_todos 3 items, 1 done · now: write the test"
    )
    assert WRITE_TODOS.summary({"todos": "junk"}) == "write_todos"


def test_target_paths_are_the_file_a_write_names() -> None:
    assert spec_for("write_file").target_paths({"file_path": "a/b.py", "content": ""}) == ["a/b.py"]
    assert spec_for("edit_file").target_paths({"file_path": "/abs/c.py"}) == ["/abs/c.py"]
    assert spec_for("edit_file").target_paths({}) == []
    assert spec_for("edit_file").target_paths({"file_path": 3}) == []
    assert spec_for("read_file").target_paths({"file_path": "a.py"}) == []
    assert spec_for("execute").target_paths({"command": "touch x"}) == []


def test_a_fetch_is_summarized_by_its_address() -> None:
    assert (
        WEB_FETCH.summary({"url": "https://docs.python.org/3/library/html.parser.html"})
        == "web_fetch https://docs.python.org/3/library/html.parser.html"
    )
    assert (
        WEB_FETCH.summary({"url": "https://example.org/search?q=secret#top"})
        == "web_fetch https://example.org/search…"
    )
    assert (
        WEB_FETCH.summary({"url": "ftp://x/" + "a" * 100}).endswith("…")
        and len(WEB_FETCH.summary({"url": "http://h/" + "a" * 100})) == 80
    )
    assert WEB_FETCH.summary({"url": "not a url"}) == "web_fetch not a url"


def test_a_fetch_is_summarized_as_it_would_be_fetched() -> None:
    assert (
        WEB_FETCH.summary({"url": "HTTP://Docs.Python.ORG.:80/a b?q=1#top"})
        == "web_fetch http://docs.python.org/a%20b…"
    )
    assert (
        WEB_FETCH.summary({"url": "http://2130706433:8000/admin"})
        == "web_fetch http://127.0.0.1:8000/admin"
    )
    assert (
        WEB_FETCH.summary({"url": "https://bücher.example/"})
        == "web_fetch https://xn--bcher-kva.example/"
    )
    assert (
        WEB_FETCH.summary({"url": "http://docs.python.org@evil.example/"})
        == "web_fetch http://docs.python.org@evil.example/"
    )  # refused: as written


def test_summaries_tolerate_junk() -> None:
    for name in SPECS:
        assert (
            spec_for(name)
            .summary({"file_path": 3, "todos": [1, None], "offset": "x"})
            .startswith(name)
        )


PROBE = """
import sys
import dcode.agent.approval, dcode.agent.tools.diffs
import dcode.agent.tools.spec, dcode.agent.tools.summary, dcode.tui.transcript.replay
heavy = {"langchain", "langchain_core", "langgraph", "openai"}
print(",".join(sorted({name.split(".")[0] for name in sys.modules} & heavy)))
"""


def test_specs_summaries_and_diffs_load_without_langchain() -> None:
    """A resumed transcript is painted with these while the engine is still importing."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
