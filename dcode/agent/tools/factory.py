"""Turning a typed ``run`` coroutine into a LangChain tool with dcode's error behaviour."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel

from dcode.agent.tools.errors import explain

# Plain text, or content blocks (a later media-aware read_file returns images this way).
ToolOutput = str | list[dict[str, Any]]

ArgsT = TypeVar("ArgsT", bound=BaseModel)


def make_tool(
    *,
    name: str,
    description: str,
    args_schema: type[ArgsT],
    run: Callable[[ArgsT], Awaitable[ToolOutput]],
    display: Callable[[str], str],
) -> StructuredTool:
    """A tool whose every failure comes back as an error ``ToolMessage``, never a crash.

    Arguments are validated by LangChain against ``args_schema`` and validated again here into
    the model instance, so ``run`` gets typed fields with defaults applied.
    """

    async def invoke(**kwargs: Any) -> ToolOutput:
        args = args_schema.model_validate(kwargs)
        try:
            return await run(args)
        except ToolException:
            raise
        except Exception as exc:
            raise ToolException(explain(name, exc, display)) from exc

    return StructuredTool.from_function(
        coroutine=invoke,
        name=name,
        description=description,
        args_schema=args_schema,
        handle_tool_error=True,
    )
