"""The typed event stream from the session runner to its consumers.

The TUI and the headless runner both render these and nothing else, so the core never has to
know which one is listening. A saved thread replays as the same events
(``dcode.agent.saved_thread.replay``), so a resumed transcript is drawn from them too. Every
event is a frozen dataclass with a stable ``type`` tag, and ``to_json`` gives the shape that
``--output-format stream-json`` prints, one event per line.

Every event also carries ``agent``, the path of the agent it comes from: ``()`` for the
session's own agent, ``("task:2",)`` for the subagent its second ``task`` call started, and so
on down (``("task:2", "task:1")``). A consumer that draws one transcript routes by it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from enum import Enum, StrEnum
from typing import ClassVar

# Re-exported: a consumer of the events finds a finished call's result type here.
from dcode.agent.tools.result import ToolResult as ToolResult
from dcode.agent.tools.result import ToolStatus as ToolStatus
from dcode.media.frames import FrameStrip


class ApprovalKind(StrEnum):
    """What an approval is for; ``a`` ("for the rest of the session") approves one kind, or,
    for a tool dcode does not know, that tool."""

    EDIT = "edit"
    SHELL = "shell"
    FETCH = "fetch"
    """A web fetch (``ToolKind.NETWORK``)."""
    TOOL = "tool"
    """A tool dcode does not know (no spec describes what it does)."""
    PLAN = "plan"
    """A plan made in plan mode (``exit_plan_mode``; ``args["plan"]`` is its Markdown): approved
    to go on in ``edits`` or ``manual``, sent back with feedback, or rejected."""


def _plain_dict(items: list[tuple[str, object]]) -> dict[str, object]:
    """A dataclass's fields as JSON has them: an enum as its value. A checkpoint keeps an
    interrupt's value (an ``ApprovalRequested``), and its serializer refuses to read back
    enums of modules it does not know."""
    return {key: value.value if isinstance(value, Enum) else value for key, value in items}


@dataclass(frozen=True, slots=True)
class Event:
    type: ClassVar[str] = "event"
    agent: tuple[str, ...] = field(default=(), kw_only=True)

    def to_json(self) -> dict[str, object]:
        data = asdict(self, dict_factory=_plain_dict)
        return {"type": self.type, **data, "agent": list(self.agent)}

    def from_agent(self, path: tuple[str, ...]) -> Event:
        """This event as coming from the agent at ``path``; an event a deeper agent already
        tagged keeps its own path."""
        return self if self.agent else replace(self, agent=path)


@dataclass(frozen=True, slots=True)
class McpServerState:
    """One MCP server as a session starts: ``status`` is its state (``connected``, ``failed``,
    ``needs login``), ``error`` the one line saying why it is not connected."""

    name: str
    status: str
    error: str = ""


@dataclass(frozen=True, slots=True)
class SessionInit(Event):
    """What a headless run starts with, before its turn (``stream-json``'s first line): the
    session, the model, the directory, the approval mode, every tool the model is given and
    each MCP server's state once all of them have connected or failed. A script reads here
    that a server it relies on did not start, before any answer comes."""

    type: ClassVar[str] = "init"
    session_id: str
    model: str
    cwd: str
    approve: str
    tools: tuple[str, ...]
    mcp_servers: tuple[McpServerState, ...] = ()
    version: str = ""


@dataclass(frozen=True, slots=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn_started"
    session_id: str
    prompt: str


@dataclass(frozen=True, slots=True)
class UserMessage(Event):
    """A message from the user in a saved thread (a prompt or a ``!cmd`` note), as a replay
    gives it; live, ``TurnStarted`` carries the prompt."""

    type: ClassVar[str] = "user_message"
    text: str
    videos: tuple[FrameStrip, ...] = ()
    """The sampled video windows the message carries (their blocks are not in ``text``)."""
    files: tuple[str, ...] = ()
    """A line for each file attached with ``@path`` (``main.py (120 lines)``; not in ``text``)."""


@dataclass(frozen=True, slots=True)
class ShellCommandRan(Event):
    """A command the user ran themselves (the TUI's ``!cmd``), whose output the thread keeps
    for the model, as a replay gives it; live, the TUI runs and draws it."""

    type: ClassVar[str] = "shell_command"
    command: str
    output: str
    exit_code: int


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    """A piece of assistant text, in arrival order."""

    type: ClassVar[str] = "text_delta"
    text: str
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class ReasoningDelta(Event):
    type: ClassVar[str] = "reasoning_delta"
    text: str
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class ModelStreamEnded(Event):
    """The model has sent the last piece of its response; ``assistant_message`` follows once
    the step is recorded. A screen can show the complete text now instead of waiting."""

    type: ClassVar[str] = "model_stream_ended"


@dataclass(frozen=True, slots=True)
class AssistantMessageFinished(Event):
    """One model response is complete; ``text`` is its whole visible text and ``reasoning``
    its whole reasoning. ``interrupted`` marks the partial answer an interrupt kept, which only
    a replay meets: live, ``TurnFinished(interrupted=True)`` says so."""

    type: ClassVar[str] = "assistant_message"
    message_id: str
    text: str
    tool_call_ids: tuple[str, ...] = ()
    reasoning: str = ""
    interrupted: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallStarted(Event):
    """The model has begun emitting a tool call; arguments may still be streaming."""

    type: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolArgsDelta(Event):
    type: ClassVar[str] = "tool_args_delta"
    call_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallRunning(Event):
    """Arguments are complete and the tool is about to run (or wait for approval)."""

    type: ClassVar[str] = "tool_call_running"
    call_id: str
    name: str
    args: dict[str, object]
    summary: str


@dataclass(frozen=True, slots=True)
class ToolProgress(Event):
    """A running tool's progress, as its MCP server reports it: ``progress`` of ``total``
    (None when the server does not know the total), and what it is doing."""

    type: ClassVar[str] = "tool_progress"
    call_id: str
    progress: float
    total: float | None = None
    message: str = ""

    @property
    def words(self) -> str:
        """``40% · indexing``, or ``3 · indexing`` without a total: one short line."""
        done = f"{min(self.progress / self.total, 1.0):.0%}" if self.total else f"{self.progress:g}"
        message = " ".join(self.message.split())[:60]
        return f"{done} · {message}" if message else done


@dataclass(frozen=True, slots=True)
class ToolOutputTail(Event):
    """What a running tool has printed so far (a shell command's output as it streams): its
    last lines, as a terminal would leave them, and how many lines there have been. Sent at
    most a few times a second, whatever the command prints; ``ToolCallFinished`` then carries
    the whole output."""

    type: ClassVar[str] = "tool_output"
    call_id: str
    tail: str
    lines: int = 0


@dataclass(frozen=True, slots=True)
class ToolCallFinished(Event):
    """A call's result is in the thread: ``result`` is what it holds (read back from its
    message, live and in a replay alike)."""

    type: ClassVar[str] = "tool_call_finished"
    call_id: str
    name: str
    result: ToolResult

    def to_json(self) -> dict[str, object]:
        """The result's fields side by side with the call's (``output`` is its text), as
        ``stream-json`` has always printed them; its content blocks are left out."""
        result = self.result
        return {
            "type": self.type,
            "agent": list(self.agent),
            "call_id": self.call_id,
            "name": self.name,
            "status": result.status,
            "preview": result.preview,
            "output": result.text,
            "diff": result.diff,
            "frames": asdict(result.frames) if result.frames is not None else None,
            "saved_to": result.saved_to,
        }


@dataclass(frozen=True, slots=True)
class ApprovalRequested(Event):
    type: ClassVar[str] = "approval_requested"
    call_id: str
    tool: str
    kind: ApprovalKind
    args: dict[str, object]
    summary: str
    reason: str
    diff: str = ""
    mcp_server: str = ""
    """For an MCP tool: its server (whose tools the user may approve all at once)…"""
    mcp_tool: str = ""
    """…and the tool as that server names it."""
    suggestion: str = ""
    """A rule that would allow calls like this one from now on (``Bash(npm test *)``); ``""``
    when there is none to offer."""
    every_time: bool = False
    """A yes covers this call alone, and nothing is offered "for the rest of the session": an
    ``ask`` rule, a protected file, a command to run outside the sandbox."""


@dataclass(frozen=True, slots=True)
class ApprovalResolved(Event):
    type: ClassVar[str] = "approval_resolved"
    call_id: str
    approved: bool
    feedback: str = ""


@dataclass(frozen=True, slots=True)
class UsageUpdated(Event):
    """Token figures the provider reported for a model response.

    ``context_tokens`` is what the last request occupied in the model's window.
    ``cached_tokens`` is the part of ``input_tokens`` the provider read from its prompt cache
    (0 when it reports none); the ``session_`` figures are the session's totals so far.
    ``estimated``: the provider sent no figures for this response, and these are dcode's
    estimate.
    """

    type: ClassVar[str] = "usage_updated"
    input_tokens: int
    output_tokens: int
    context_tokens: int
    max_input_tokens: int | None
    session_input_tokens: int = 0
    session_output_tokens: int = 0
    cached_tokens: int = 0
    session_cached_tokens: int = 0
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class Notice(Event):
    """Something the user should know that is not an error (a retry, a capability note)."""

    type: ClassVar[str] = "notice"
    message: str


@dataclass(frozen=True, slots=True)
class HookStarted(Event):
    """A hook's command started for ``event`` (Claude Code's name: ``PreToolUse``...)."""

    type: ClassVar[str] = "hook_started"
    event: str
    command: str
    source: str


@dataclass(frozen=True, slots=True)
class HookFinished(Event):
    """A hook's command ended: ``exit_code`` (-1 when it timed out or could not start), and
    ``outcome``, one line of what it did (``blocked: ...``, ``changed the input``; "" when it
    let things go on unchanged)."""

    type: ClassVar[str] = "hook_finished"
    event: str
    command: str
    exit_code: int
    outcome: str = ""
    duration_ms: int = 0


@dataclass(frozen=True, slots=True)
class BudgetWarning(Event):
    """The session's spend crossed ``level`` % (50, 80, 100) of a limit; said once per level
    (``dcode.agent.budget``). The figures are the session's so far and its limits (None: no
    limit of that kind)."""

    type: ClassVar[str] = "budget_warning"
    level: int
    message: str
    spent_usd: float = 0.0
    limit_usd: float | None = None
    spent_tokens: int = 0
    limit_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class CompactionStarted(Event):
    type: ClassVar[str] = "compaction_started"
    reason: str


@dataclass(frozen=True, slots=True)
class CompactionFinished(Event):
    """The older messages are summarized: the request went from ``tokens_before`` to
    ``tokens_after`` (the same counter both times), and the newest ``messages_kept`` messages
    are sent verbatim after the summary."""

    type: ClassVar[str] = "compaction_finished"
    messages_summarized: int
    tokens_before: int
    tokens_after: int
    archive_path: str | None = None
    messages_kept: int = 0


@dataclass(frozen=True, slots=True)
class CompactionRefused(Event):
    """A compaction that would not have made the request smaller: nothing was written, neither
    the thread's state nor the archive, and the conversation goes on as it was."""

    type: ClassVar[str] = "compaction_refused"
    messages_summarized: int
    tokens_before: int
    tokens_after: int
    reason: str


@dataclass(frozen=True, slots=True)
class SubagentStarted(Event):
    """A ``task`` call's subagent has begun: ``agent`` is its path, ``call_id`` the parent's
    call, ``thread_id`` the checkpointed thread it runs in (``SESSION/task/N``)."""

    type: ClassVar[str] = "subagent_started"
    call_id: str
    agent_type: str
    description: str
    thread_id: str


@dataclass(frozen=True, slots=True)
class SubagentFinished(Event):
    """A subagent has ended (``agent`` is its path): ``result`` is what its ``task`` call
    returns to the parent, ``error`` the one line when it failed. The token figures are its
    own and those of any subagents it started in turn."""

    type: ClassVar[str] = "subagent_finished"
    call_id: str
    status: ToolStatus
    result: str
    num_turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    duration_ms: int = 0
    error: str = ""


@dataclass(frozen=True, slots=True)
class AsyncTaskStatus(Event):
    """An async task's status as last seen (``dcode.agent.async_tasks``): told by the tool
    call that started, checked, updated, cancelled or listed it (``call_id``), or by the
    session's poller while the task runs (``call_id`` ""). ``status`` is the remote run's
    (``pending``, ``running``, ``success``, ``error``, ``interrupted``, ``timeout``) or
    ``cancelled``; ``error`` the one line when its server could not be asked."""

    type: ClassVar[str] = "async_task_status"
    task_id: str
    agent_name: str
    """The ``[[async_agents]]`` entry it runs on (the call's ``subagent_type``)."""
    status: str
    description: str = ""
    run_id: str = ""
    """The run on the task's thread this status is of (an update starts another)."""
    created_at: str = ""
    """When the task was started (UTC, ``2026-01-31T12:00:00Z``)."""
    call_id: str = ""
    error: str = ""


@dataclass(frozen=True, slots=True)
class ErrorEvent(Event):
    """A failure, already reduced to one line a user can act on."""

    type: ClassVar[str] = "error"
    message: str
    kind: str = "error"


@dataclass(frozen=True, slots=True)
class TurnFinished(Event):
    """The last event of every turn, whatever happened: ok, interrupted or an error."""

    type: ClassVar[str] = "turn_finished"
    session_id: str
    result: str
    is_error: bool
    num_turns: int
    input_tokens: int
    output_tokens: int
    duration_ms: int
    interrupted: bool = False
    error: str = ""
    cached_tokens: int = 0
    """The part of ``input_tokens`` the provider read from its prompt cache."""
    budget_exceeded: bool = False
    """The turn ended at the session's budget (``error`` says which limit)."""
