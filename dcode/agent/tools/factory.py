"""Turning a tool's spec and a typed ``run`` coroutine into a LangChain tool with dcode's error
behaviour."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel

from dcode.agent.tools.errors import explain
from dcode.agent.tools.spec import ToolSpec

# Plain text, or content blocks. The tool node keeps a list only when every block's type is
# one langchain's tool layer knows (text, image, file, ...): an ``audio`` block turns the whole
# result into a JSON string, so media go as those types (``dcode.media.file_attachment``).
ToolOutput = str | list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class WithArtifact:
    """A result plus what the tool records beside it: saved with the tool message, never sent
    to the model (a write's diff)."""

    output: ToolOutput
    artifact: object


def make_tool(
    spec: ToolSpec,
    *,
    description: str,
    run: Callable[[Any], Awaitable[ToolOutput | WithArtifact]],
    display: Callable[[str], str],
) -> StructuredTool:
    """The tool ``spec`` describes, whose every failure comes back as an error ``ToolMessage``,
    never a crash.

    Arguments are validated by LangChain against the spec's argument model and validated again
    here into the model instance, so ``run`` gets typed fields with defaults applied.
    """
    args_schema = spec.args
    if args_schema is None:
        raise ValueError(f"{spec.name}: its spec has no argument model to build the tool from")

    async def invoke(**kwargs: Any) -> tuple[ToolOutput, object]:
        args: BaseModel = args_schema.model_validate(kwargs)
        try:
            result = await run(args)
        except ToolException:
            raise
        except Exception as exc:
            raise ToolException(explain(spec.name, exc, display)) from exc
        if isinstance(result, WithArtifact):
            return result.output, result.artifact
        return result, None

    return StructuredTool.from_function(
        coroutine=invoke,
        name=spec.name,
        description=description,
        args_schema=args_schema,
        handle_tool_error=True,
        response_format="content_and_artifact",
    )
