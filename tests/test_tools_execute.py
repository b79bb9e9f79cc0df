"""execute through the real LangChain tool interface."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from dcode.agent.backends import ExecResult, LocalBackend
from dcode.agent.tools import build_tools
from dcode.agent.tools.execute import format_result


@pytest.fixture
def execute(tmp_path: Path) -> BaseTool:
    return next(t for t in build_tools(LocalBackend(tmp_path)) if t.name == "execute")


async def call(tool: BaseTool, **args: Any) -> ToolMessage:
    message = await tool.ainvoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    return message


async def test_output_and_exit_code_line(execute: BaseTool) -> None:
    message = await call(execute, command="echo hello; echo oops >&2")
    assert message.status == "success"
    assert message.content == "hello\noops\n[exit code: 0]"


async def test_nonzero_exit_is_reported_not_raised(execute: BaseTool) -> None:
    message = await call(execute, command="false")
    assert message.status == "success"
    assert message.content == "(no output)\n[exit code: 1]"


async def test_timeout_note(execute: BaseTool) -> None:
    started = time.monotonic()
    message = await call(execute, command="sleep 30", timeout=1)
    assert time.monotonic() - started < 2
    text = str(message.content)
    assert "timed out after 1 s" in text
    assert text.splitlines()[-1].startswith("[exit code: ")


async def test_stdin_closed_through_tool(execute: BaseTool) -> None:
    started = time.monotonic()
    message = await call(execute, command="read x && echo got || echo eof", timeout=10)
    assert time.monotonic() - started < 2
    assert message.content == "eof\n[exit code: 0]"


async def test_empty_command_is_an_error(execute: BaseTool) -> None:
    message = await call(execute, command="   ")
    assert message.status == "error" and "empty" in str(message.content)


async def test_timeout_above_max_is_rejected_by_schema(execute: BaseTool) -> None:
    with pytest.raises(ValueError, match="600"):
        await call(execute, command="true", timeout=601)


def test_format_result_truncated_output_keeps_marker() -> None:
    result = ExecResult(
        output="a\n\n... [5 chars truncated] ...\n\nb\n", exit_code=0, truncated=True
    )
    assert format_result(result, 120) == "a\n\n... [5 chars truncated] ...\n\nb\n[exit code: 0]"
