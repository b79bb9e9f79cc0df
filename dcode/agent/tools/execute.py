"""``execute``: run a shell command in the workspace and report its output and exit code.

While it runs, its last lines go out as ``ToolOutputTail`` events (``live_output``), which the
call's line shows; the model gets the whole output once the command ends."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, Backend, ExecResult
from dcode.agent.tools.args import OUTSIDE_SANDBOX, ExecuteArgs
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import CallSite, ToolOutput, make_call_tool
from dcode.agent.tools.live_output import LiveOutput
from dcode.agent.tools.spec import EXECUTE
from dcode.sandbox.confine import SandboxUnavailable
from dcode.sandbox.failures import sandbox_note

NAME = EXECUTE.name

DESCRIPTION = f"""Run a shell command (bash -c) in the workspace root and return its combined \
stdout and stderr, followed by `[exit code: N]`.

- Use it for builds, tests, git, package managers and other programs. Prefer read_file, \
grep, glob and ls for reading and searching, and edit_file/write_file for changing files.
- Each call starts a fresh shell in the workspace root: `cd` does not carry over, so chain \
commands (`cd sub && make`).
- There is no terminal and stdin is closed: interactive prompts get end-of-file. Pass flags \
such as `-y` or `--no-pager` instead.
- timeout: seconds (default {DEFAULT_TIMEOUT_S:.0f}, max {MAX_TIMEOUT_S:.0f}); on timeout the \
command and everything it started are killed.
- Long output (over 80,000 characters) is saved to a file: you get its path and a preview of its \
first and last lines, and read the rest with read_file. Beyond 2,000,000 characters the middle is \
cut; redirect to a file and grep it if you need all of it. Redirect the output of background jobs (`cmd > log 2>&1 &`).
- When the sandbox is on, the command cannot write outside the workspace (nor to .git/hooks, \
.git/config, .dcode, .claude), reach the network unless allowed, or see other processes; a \
background job ends with its command. If a command fails because of it, the result says so: \
only then set {OUTSIDE_SANDBOX}=true, and the user is asked."""


def format_result(result: ExecResult, timeout: float) -> str:
    parts = [result.output.rstrip("\n") or "(no output)"]
    if result.timed_out:
        parts.append(
            f"[timed out after {timeout:g} s: the command and its child processes were killed]"
        )
    parts.append(f"[exit code: {result.exit_code}]")
    if result.sandbox is not None and (
        note := sandbox_note(
            result.output, result.exit_code, result.sandbox, argument=OUTSIDE_SANDBOX
        )
    ):
        parts.append(note)
    return "\n".join(parts)


async def execute(backend: Backend, args: ExecuteArgs, call: CallSite | None = None) -> ToolOutput:
    if not args.command.strip():
        fail(f"{NAME}: the command is empty")
    try:
        async with LiveOutput(call or CallSite()) as live:
            result = await backend.execute(
                args.command,
                timeout=args.timeout,
                on_output=live.add,
                outside_sandbox=args.outside_sandbox,
            )
    except SandboxUnavailable as exc:
        fail(f"{NAME}: refused, the sandbox cannot start: {exc}")
    return format_result(result, args.timeout)


def make_execute_tool(backend: Backend) -> BaseTool:
    async def run(args: ExecuteArgs, call: CallSite) -> ToolOutput:
        return await execute(backend, args, call)

    return make_call_tool(
        EXECUTE,
        description=DESCRIPTION,
        run=run,
        display=backend.display_path,
    )
