"""Turning a tool's spec and a typed ``run`` coroutine into a LangChain tool with dcode's error
behaviour.

A tool that reports while it runs (a shell command's output) is made with ``make_call_tool``:
its ``run`` also gets the ``CallSite``, the call's id and where the run's events go, taken
from the tool runtime LangGraph's tool node hands the tool (as MCP tools get theirs)."""

# Any: StructuredTool hands a call's arguments over as **kwargs; each run takes its own model

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.tools import InjectedToolArg, StructuredTool, ToolException
from pydantic import BaseModel

from dcode.agent.events import Event
from dcode.agent.run_context import MissingRunContext, require_run_context
from dcode.agent.tools.diffs import DiffRecord
from dcode.agent.tools.errors import explain
from dcode.agent.tools.result import Block, ToolResult
from dcode.agent.tools.result_message import message_fields
from dcode.agent.tools.spec import ToolSpec

# Plain text, or content blocks. The tool node keeps a list only when every block's type is
# one langchain's tool layer knows (text, image, file, ...): an ``audio`` block turns the whole
# result into a JSON string, so media go as those types (``dcode.media.file_attachment``).
# A tool that records more than its content (a write's diff) returns a ``ToolResult``.
ToolOutput = str | list[Block]


def _nowhere(event: Event) -> None:
    """Where a call's events go outside a graph run (a tool called directly): nowhere."""


@dataclass(frozen=True, slots=True)
class CallSite:
    """The call a tool runs for: its id, and how to put an event on the run's stream tagged
    with the agent that made the call. Outside a graph run the events go nowhere."""

    call_id: str = ""
    emit: Callable[[Event], None] = _nowhere
    agent: tuple[str, ...] = ()

    @classmethod
    def of(cls, runtime: ToolRuntime | None) -> CallSite:
        """From the runtime the tool node injects (its ``context`` is the run's ``RunContext``)."""
        if runtime is None or not runtime.tool_call_id:
            return cls()
        try:
            context = require_run_context(runtime.context)
        except MissingRunContext:
            return cls()
        return cls(runtime.tool_call_id, context.emit, context.agent)

    @property
    def live(self) -> bool:
        """Whether anyone can hear this call's events."""
        return self.emit is not _nowhere


RunWithCall = Callable[[Any, CallSite], Awaitable[ToolOutput | ToolResult]]


def make_tool(
    spec: ToolSpec,
    *,
    description: str,
    run: Callable[[Any], Awaitable[ToolOutput | ToolResult]],
    display: Callable[[str], str],
) -> StructuredTool:
    """The tool ``spec`` describes, whose every failure comes back as an error ``ToolMessage``,
    never a crash.

    Arguments are validated by LangChain against the spec's argument model and validated again
    here into the model instance, so ``run`` gets typed fields with defaults applied.
    """

    async def without_call(args: Any, _call: CallSite) -> ToolOutput | ToolResult:
        return await run(args)

    return make_call_tool(spec, description=description, run=without_call, display=display)


def make_call_tool(
    spec: ToolSpec, *, description: str, run: RunWithCall, display: Callable[[str], str]
) -> StructuredTool:
    """As ``make_tool``, for a ``run`` that also takes the ``CallSite`` (to report progress)."""
    args_schema = spec.args
    if args_schema is None:
        raise ValueError(f"{spec.name}: its spec has no argument model to build the tool from")

    # Marked injected, so that the tool node hands it in and the model never sees it.
    async def invoke(
        runtime: Annotated[ToolRuntime | None, InjectedToolArg()] = None, **kwargs: Any
    ) -> tuple[str | list[str | Block], DiffRecord | None]:
        args: BaseModel = args_schema.model_validate(kwargs)
        try:
            output = await run(args, CallSite.of(runtime))
        except ToolException:
            raise
        except Exception as exc:
            raise ToolException(explain(spec.name, exc, display)) from exc
        # The tool node makes the message from the content and the artifact.
        fields = message_fields(output if isinstance(output, ToolResult) else ToolResult.of(output))
        return fields["content"], fields["artifact"]

    return StructuredTool.from_function(
        coroutine=invoke,
        name=spec.name,
        description=description,
        args_schema=args_schema,
        handle_tool_error=True,
        response_format="content_and_artifact",
    )
