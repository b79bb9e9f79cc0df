"""One ``ToolSpec`` per tool: everything the rest of dcode needs to know about a tool.

The approval policy asks a spec what a call can do (its kind, the paths it writes), the UI asks
it for a call's one-line summary, its diff and how its finished result shows, and the tools are
built from it (the name and the arguments live here once). A name no spec knows, such as an MCP
tool's, gets a default spec of kind ``other``: dcode cannot tell what such a call does, so it
asks before running it.

Nothing here imports LangChain: a resumed transcript is painted (with every call's summary)
while the engine is still loading.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from pydantic import BaseModel

from dcode.agent.async_tasks.words import show_task_result
from dcode.agent.tools import args as arguments
from dcode.agent.tools.describe import (
    Args,
    describe_async_list,
    describe_async_task,
    describe_edit,
    describe_execute,
    describe_fetch,
    describe_glob,
    describe_grep,
    describe_ls,
    describe_nothing,
    describe_pairs,
    describe_plan,
    describe_read,
    describe_resource,
    describe_task,
    describe_todos,
    describe_write,
)
from dcode.agent.tools.diff_text import edit_diff, write_diff
from dcode.agent.tools.editing import EditError
from dcode.agent.tools.result import preview_result

MAX_SUMMARY_CHARS = 80

Describe = Callable[[Args], str]
Preview = Callable[[Args, str | None, str], str]
"""``(args, the file's text before the call or None when there is no file, the path as shown)``
to a unified diff. It may raise when the call cannot apply; ``ToolSpec.diff`` turns that into
no diff."""
Targets = Callable[[Args], list[str]]
ShowResult = Callable[[str], str]
"""A result's text to the few lines its finished call shows."""


class ToolKind(StrEnum):
    """What a call can do outside the conversation; the approval modes key on it."""

    READ = "read"
    """Changes nothing outside the conversation: it reads, or updates only the agent's own
    state (its todo list, a compaction)."""
    WRITE = "write"
    """Changes files, at the paths ``ToolSpec.targets`` names."""
    SHELL = "shell"
    """Runs a program, which can do anything."""
    NETWORK = "network"
    """Reaches out over the network: what it asks for can carry what it has read."""
    OTHER = "other"
    """Unknown effects: a tool whose behaviour dcode does not know."""
    PLAN = "plan"
    """Puts a plan to the user (``exit_plan_mode``): it changes nothing itself, but in plan mode
    the user's answer decides what happens next, so it always asks there."""


def no_targets(args: Args) -> list[str]:
    return []


def never(args: Args) -> bool:
    return False


def asks_outside_sandbox(args: Args) -> bool:
    return args.get(arguments.OUTSIDE_SANDBOX) is True


def file_path_target(args: Args) -> list[str]:
    path = args.get("file_path")
    return [path] if isinstance(path, str) and path else []


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    kind: ToolKind
    args: type[BaseModel] | None = None
    """The argument model, for tools dcode builds; ``None`` when another library defines the
    schema (``write_todos``) or the model passes nothing (``compact_conversation``)."""
    describe: Describe = describe_pairs
    preview: Preview | None = None
    targets: Targets = no_targets
    unconfined: Callable[[Args], bool] = never
    """Whether a call asks to run outside the sandbox (a person approves that, every time)."""
    show_result: ShowResult = preview_result
    """What a finished call shows of its result (``ToolResult.preview``); by default its first
    lines and a count of the rest."""

    def summary(self, args: Args) -> str:
        """One line of at most ``MAX_SUMMARY_CHARS``: the name and what the call touches."""
        try:
            detail = self.describe(args)
        except Exception:  # noqa: BLE001 - a summary is cosmetic; partial args are normal
            detail = ""
        text = " ".join(f"{self.name} {detail}".split())
        return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"

    def diff(self, args: Args, before: str | None, shown: str) -> str:
        """The unified diff the call makes to a file whose text was ``before``; ``""`` for a
        tool without a preview, or a call that cannot apply."""
        if self.preview is None:
            return ""
        try:
            return self.preview(args, before, shown)
        except (EditError, KeyError, TypeError, ValueError):
            return ""

    def target_paths(self, args: Args) -> list[str]:
        """The paths a write would change, as the model wrote them (resolve them before
        judging them)."""
        return self.targets(args)


LS: Final = ToolSpec("ls", ToolKind.READ, arguments.LsArgs, describe=describe_ls)
READ_FILE: Final = ToolSpec(
    "read_file", ToolKind.READ, arguments.ReadFileArgs, describe=describe_read
)
WRITE_FILE: Final = ToolSpec(
    "write_file",
    ToolKind.WRITE,
    arguments.WriteFileArgs,
    describe=describe_write,
    preview=write_diff,
    targets=file_path_target,
)
EDIT_FILE: Final = ToolSpec(
    "edit_file",
    ToolKind.WRITE,
    arguments.EditFileArgs,
    describe=describe_edit,
    preview=edit_diff,
    targets=file_path_target,
)
GLOB: Final = ToolSpec("glob", ToolKind.READ, arguments.GlobArgs, describe=describe_glob)
GREP: Final = ToolSpec("grep", ToolKind.READ, arguments.GrepArgs, describe=describe_grep)
EXECUTE: Final = ToolSpec(
    "execute",
    ToolKind.SHELL,
    arguments.ExecuteArgs,
    describe=describe_execute,
    unconfined=asks_outside_sandbox,
)
WEB_FETCH: Final = ToolSpec(
    "web_fetch", ToolKind.NETWORK, arguments.WebFetchArgs, describe=describe_fetch
)
# langchain's TodoListMiddleware adds this tool and owns its schema. It only replaces the todo
# list in the agent's state, so for approval it is as harmless as a read: it never asks.
WRITE_TODOS: Final = ToolSpec("write_todos", ToolKind.READ, describe=describe_todos)
# It summarizes the conversation into the agent's state; nothing outside the conversation changes.
COMPACT_CONVERSATION: Final = ToolSpec(
    "compact_conversation", ToolKind.READ, describe=describe_nothing
)

# It starts a subagent; each of the subagent's own calls is approved as the parent's would be.
TASK: Final = ToolSpec("task", ToolKind.READ, arguments.TaskArgs, describe=describe_task)

# The async task tools, offered while the user's config lists an [[async_agents]] server.
# Starting a task, or sending one a message, hands text the model wrote to a server outside this
# machine: like web_fetch it is a network action, asked in every mode but "all" ("a" approves it
# for the session). Checking, listing and cancelling send only the ids of tasks this session
# started, to the servers it started them on: they ask nothing, as a read does not.
START_ASYNC_TASK: Final = ToolSpec(
    "start_async_task",
    ToolKind.NETWORK,
    arguments.StartAsyncTaskArgs,
    describe=describe_task,
    show_result=show_task_result,
)
UPDATE_ASYNC_TASK: Final = ToolSpec(
    "update_async_task",
    ToolKind.NETWORK,
    arguments.UpdateAsyncTaskArgs,
    describe=describe_async_task,
    show_result=show_task_result,
)
CHECK_ASYNC_TASK: Final = ToolSpec(
    "check_async_task",
    ToolKind.READ,
    arguments.TaskIdArgs,
    describe=describe_async_task,
    show_result=show_task_result,
)
CANCEL_ASYNC_TASK: Final = ToolSpec(
    "cancel_async_task",
    ToolKind.READ,
    arguments.TaskIdArgs,
    describe=describe_async_task,
    show_result=show_task_result,
)
LIST_ASYNC_TASKS: Final = ToolSpec(
    "list_async_tasks", ToolKind.READ, arguments.ListAsyncTasksArgs, describe=describe_async_list
)
ASYNC_TASK_SPECS: Final = (
    START_ASYNC_TASK,
    CHECK_ASYNC_TASK,
    UPDATE_ASYNC_TASK,
    CANCEL_ASYNC_TASK,
    LIST_ASYNC_TASKS,
)
REMOTE_TASK_TOOLS: Final = frozenset(
    spec.name for spec in ASYNC_TASK_SPECS if spec.kind is ToolKind.NETWORK
)
"""The network tools that send work to a remote agent rather than fetch a URL."""

# It asks an MCP server for one of the resources it lists (offered while a connected server has any).
READ_MCP_RESOURCE: Final = ToolSpec(
    "read_mcp_resource", ToolKind.READ, arguments.ReadMcpResourceArgs, describe=describe_resource
)

# It puts the plan made in plan mode to the user; the answer may switch the mode.
EXIT_PLAN_MODE: Final = ToolSpec(
    "exit_plan_mode", ToolKind.PLAN, arguments.ExitPlanModeArgs, describe=describe_plan
)

SPECS: Final[Mapping[str, ToolSpec]] = {
    spec.name: spec
    for spec in (
        LS,
        READ_FILE,
        WRITE_FILE,
        EDIT_FILE,
        GLOB,
        GREP,
        WEB_FETCH,
        EXECUTE,
        WRITE_TODOS,
        COMPACT_CONVERSATION,
        TASK,
    )
}
"""The tools every session offers."""
ALL_SPECS: Final[Mapping[str, ToolSpec]] = {
    **SPECS,
    READ_MCP_RESOURCE.name: READ_MCP_RESOURCE,
    EXIT_PLAN_MODE.name: EXIT_PLAN_MODE,
    **{spec.name: spec for spec in ASYNC_TASK_SPECS},
}
"""With the tools offered only sometimes: no MCP tool may take one of these names."""


def spec_for(name: str) -> ToolSpec:
    """The spec of tool ``name``; a default of kind ``other`` for a name no spec knows."""
    return ALL_SPECS.get(name) or ToolSpec(name, ToolKind.OTHER)
