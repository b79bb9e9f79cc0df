"""The arguments of the file and shell tools: what the model may pass, with the descriptions
it reads.

These models are part of the contract the model sees. They live apart from the tools' code,
with nothing but pydantic, so that the tool specs (and the UI's summaries of calls, which read
the defaults) can be loaded without the LangChain stack.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from dcode.agent.backends.protocol import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S

READ_DEFAULT_LIMIT = 2000
VIDEO_DEFAULT_LIMIT_S = 100.0
PDF_MAX_PAGES = 20
FETCH_DEFAULT_CHARS = 50_000
FETCH_MAX_CHARS = 200_000


class LsArgs(BaseModel):
    path: str = Field(
        default=".", description="Directory to list: relative to the workspace root, or absolute."
    )


class ReadFileArgs(BaseModel):
    file_path: str = Field(description="File to read: relative to the workspace root, or absolute.")
    offset: float = Field(
        default=0,
        description=(
            "Text: number of lines to skip (0 starts at the first line). Video: seconds to skip."
        ),
    )
    limit: float | None = Field(
        default=None,
        description=(
            f"Text: maximum number of lines to return (default {READ_DEFAULT_LIMIT}). "
            f"Video: seconds to cover (default {VIDEO_DEFAULT_LIMIT_S:.0f})."
        ),
    )
    pages: str | None = Field(
        default=None,
        description=(
            f'PDF only: the pages to read, e.g. "3" or "1-5" (at most {PDF_MAX_PAGES} per call). '
            "Default: from the first page."
        ),
    )


class WriteFileArgs(BaseModel):
    file_path: str = Field(
        description="File to write: relative to the workspace root, or absolute."
    )
    content: str = Field(description="The complete new content of the file.")


class EditFileArgs(BaseModel):
    file_path: str = Field(description="File to edit: relative to the workspace root, or absolute.")
    old_string: str = Field(description="The exact text to replace.")
    new_string: str = Field(description="The text to put in its place (must differ).")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence rather than exactly one."
    )


class GlobArgs(BaseModel):
    pattern: str = Field(description="Glob pattern, e.g. `**/*.py` or `src/**/test_*.py`.")
    path: str = Field(
        default=".", description="Directory to search from; defaults to the workspace root."
    )


class GrepArgs(BaseModel):
    pattern: str = Field(description="Regular expression to search for.")
    path: str = Field(
        default=".", description="Directory or file to search; defaults to the workspace root."
    )
    glob: str | None = Field(
        default=None, description="Only search files matching this glob, e.g. `*.py`."
    )


OUTSIDE_SANDBOX = "outside_sandbox"
"""``execute``'s argument that asks to run a command unconfined; only an approval allows it."""


class ExecuteArgs(BaseModel):
    command: str = Field(description="The shell command line to run.")
    timeout: int = Field(
        default=int(DEFAULT_TIMEOUT_S),
        ge=1,
        le=int(MAX_TIMEOUT_S),
        description=f"Seconds before the command is killed (max {MAX_TIMEOUT_S:.0f}).",
    )
    outside_sandbox: bool = Field(
        default=False,
        description=(
            "Run the command outside the sandbox. Only when the sandbox is on and a command failed "
            "because of it (its result says so); the user is always asked first."
        ),
    )


class WebFetchArgs(BaseModel):
    url: str = Field(description="The http:// or https:// URL to fetch.")
    max_chars: int = Field(
        default=FETCH_DEFAULT_CHARS,
        ge=1,
        le=FETCH_MAX_CHARS,
        description=(
            f"Most characters of the page's text to return (default {FETCH_DEFAULT_CHARS:,}, "
            f"max {FETCH_MAX_CHARS:,}); a longer text is cut with a note saying how much was left out."
        ),
    )


GENERAL_PURPOSE = "general-purpose"
"""The built-in agent's name: ``task`` runs it when no ``subagent_type`` is given."""


class TaskArgs(BaseModel):
    description: str = Field(
        description=(
            "The whole job for the subagent, self-contained: it sees none of this conversation. "
            "Say what to do, what to return, and any paths or facts it needs."
        )
    )
    subagent_type: str = Field(
        default=GENERAL_PURPOSE, description="Which agent runs the job (one of those listed)."
    )


TASK_ID_DESCRIPTION = "The task_id start_async_task returned, exactly as it was written."


class StartAsyncTaskArgs(BaseModel):
    description: str = Field(
        description=(
            "The whole job for the remote agent, self-contained: it sees none of this "
            "conversation. Say what to do, what to return, and any facts it needs."
        )
    )
    subagent_type: str = Field(description="Which remote agent runs the job (one of those listed).")


class TaskIdArgs(BaseModel):
    task_id: str = Field(description=TASK_ID_DESCRIPTION)


class UpdateAsyncTaskArgs(TaskIdArgs):
    message: str = Field(description="The follow-up: new instructions or facts for the task.")


class ListAsyncTasksArgs(BaseModel):
    status_filter: Literal["running", "success", "error", "cancelled", "all"] | None = Field(
        default=None, description="Only the tasks with this status (default: all of them)."
    )


class ReadMcpResourceArgs(BaseModel):
    server: str = Field(
        description="The MCP server that offers the resource, named as in the system prompt's list."
    )
    uri: str = Field(
        description="The resource's URI, as the server lists it or a tool result links it."
    )


class ExitPlanModeArgs(BaseModel):
    plan: str = Field(
        description=(
            "The plan, in Markdown: what you will change and where (files, functions), in order, "
            "and how you will check it. Concise, but complete enough to approve."
        )
    )
