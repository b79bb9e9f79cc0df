"""Turning a tool's spec and a typed ``run`` coroutine into a LangChain tool with dcode's error
behaviour."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel

from dcode.agent.tools.errors import explain
from dcode.agent.tools.spec import ToolSpec

# Plain text, or content blocks (a later media-aware read_file returns images this way).
ToolOutput = str | list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class WithArtifact:
    """A result plus what the tool records beside it: saved with the tool message, never sent
    to the model (a write's diff)."""

    output: ToolOutput
    artifact: object


@dataclass(frozen=True, slots=True)
class _Blocks:
    """Content blocks carried past LangChain's check of a tool's output, which turns a list
    holding block types it does not know (``audio``, ``video``: dcode's file references) into
    a JSON string; ``_BlocksTool`` puts them back as the message's content."""

    content: list[dict[str, Any]]
    artifact: object


class _BlocksTool(StructuredTool):
    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        return _restored(await super().arun(*args, **kwargs))

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return _restored(super().run(*args, **kwargs))


def _restored(result: Any) -> Any:
    if isinstance(result, ToolMessage) and isinstance(result.artifact, _Blocks):
        result.content, result.artifact = result.artifact.content, result.artifact.artifact
    return result


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
        output, artifact = (result.output, result.artifact) if isinstance(result, WithArtifact) else (result, None)
        if isinstance(output, list):
            return output, _Blocks(output, artifact)
        return output, artifact

    return _BlocksTool.from_function(
        coroutine=invoke,
        name=spec.name,
        description=description,
        args_schema=args_schema,
        handle_tool_error=True,
        response_format="content_and_artifact",
    )
