"""Running the hooks of one event: each command with Claude Code's JSON on stdin, all at once.

A hook runs as the shell tool's commands do: through the same shell, in the shell tool's
environment (no provider keys, ``ShellEnvironment``), inside the sandbox when one is on, in a
session of its own that ``dcode.processes`` tracks, so that a hook still running when dcode
ends is ended with it. ``CLAUDE_PROJECT_DIR`` and ``DCODE_PROJECT_DIR`` name the workspace, as
Claude's hooks expect. A hook that outlives its timeout (60 s unless it says) is ended with its
whole process group, and the turn goes on with a notice.

``--debug`` logs each hook's stdin and stdout (logger ``dcode.agent.hooks.runner``).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import logging
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from dcode.agent.backends.environment import ShellEnvironment
from dcode.agent.events import Event, HookFinished, HookStarted, Notice
from dcode.agent.hooks.outcome import HookRun, Outcome, fold_all
from dcode.agent.tools.claude_names import CLAUDE_TOOLS
from dcode.processes import table
from dcode.processes.trees import TREES
from dcode.sandbox.confine import Sandbox, SandboxUnavailable
from dcode.settings.hook_sources import HookCommand

log = logging.getLogger(__name__)
MAX_OUTPUT_BYTES = 1_000_000
"""What is read of a hook's stdout and stderr; more is cut (a hook is a check, not a log)."""
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})


def claude_tool_name(name: str) -> str:
    """The name Claude's hooks know a dcode tool by (``execute`` -> ``Bash``); dcode's own for
    a tool Claude has no name for."""
    return next((claude for claude, mine in CLAUDE_TOOLS.items() if mine == name), name)


def matches(matcher: str, names: Sequence[str]) -> bool:
    """Claude's matcher: empty or ``*`` matches all; otherwise a name exactly, a regular
    expression (``Edit|Write``), or a glob (``mcp__*``) over any of ``names``."""
    if matcher in ("", "*"):
        return True
    for name in names:
        if name == matcher or fnmatch.fnmatchcase(name, matcher):
            return True
        try:
            if re.fullmatch(matcher, name):
                return True
        except re.error:
            continue
    return False


@dataclass
class HookRecord:
    """A hook as ``/hooks`` lists it: where it comes from and what its last run did."""

    hook: HookCommand
    last: str = "not run yet"


class Hooks:
    """The session's hooks and how to run them."""

    def __init__(
        self,
        hooks: Sequence[HookCommand],
        *,
        workspace: Path,
        environment: ShellEnvironment = ShellEnvironment(),  # noqa: B008 - frozen, shared safely
        sandbox: Callable[[], Sandbox | None] = lambda: None,
        shell: str = "bash",
    ) -> None:
        self.records = [HookRecord(hook) for hook in hooks]
        self.decisions: dict[str, tuple[str, str]] = {}
        """``PreToolUse``'s ``permissionDecision`` per call id, for the approval to take."""
        self._background: set[asyncio.Task[Outcome]] = set()
        self.workspace = workspace
        self._environment = environment
        self._sandbox = sandbox
        self._shell = shutil.which(shell) or shutil.which("sh") or "sh"

    def __bool__(self) -> bool:
        return bool(self.records)

    def has(self, event: str) -> bool:
        return any(record.hook.event == event for record in self.records)

    def matching(self, event: str, target: str | None = None) -> list[HookRecord]:
        """The hooks of ``event`` whose matcher takes ``target`` (a tool's dcode name for the
        tool events, matched in Claude's name too; a source like ``startup`` for others)."""
        names = [] if target is None else [target]
        if target is not None and event in TOOL_EVENTS:
            names += [claude for claude, mine in CLAUDE_TOOLS.items() if mine == target]
        return [
            r
            for r in self.records
            if r.hook.event == event and (target is None or matches(r.hook.matcher, names))
        ]

    async def fire(
        self,
        event: str,
        payload: Mapping[str, object],
        emit: Callable[[Event], None],
        *,
        target: str | None = None,
        agent: tuple[str, ...] = (),
    ) -> Outcome:
        """Run the hooks of ``event`` that match ``target`` at once, with ``payload`` (and the
        fields every event has) on stdin; returns what they decided together. Their notices are
        emitted here: a hook that fails is never silent."""
        records = self.matching(event, target)
        if not records:
            return Outcome()
        stdin = json.dumps(
            {"cwd": str(self.workspace), "hook_event_name": event, **payload}, default=str
        ).encode()
        for record in records:
            emit(HookStarted(event, record.hook.command, record.hook.source, agent=agent))
        runs = await asyncio.gather(*(self._run(record.hook, stdin) for record in records))
        outcome, lines = fold_all(event, runs)
        for record, run, line in zip(records, runs, lines, strict=True):
            record.last = f"{time.strftime('%H:%M:%S')} {event}: {line or f'exit {run.exit_code}'}"
            emit(
                HookFinished(event, run.command, run.exit_code, line, run.duration_ms, agent=agent)
            )
        for notice in outcome.notices:
            emit(Notice(notice, agent=agent))
        return outcome

    def notify(
        self,
        session_id: str,
        message: str,
        kind: str,
        emit: Callable[[Event], None],
        *,
        agent: tuple[str, ...] = (),
    ) -> asyncio.Task[Outcome] | None:
        """Fire ``Notification`` (``kind``: ``permission_prompt`` when an approval waits,
        ``idle_prompt`` when a turn ended while the terminal is out of focus) without holding up
        what waits for the user; None when no hook listens."""
        if not self.matching("Notification", kind):
            return None
        payload = {"session_id": session_id, "message": message, "notification_type": kind}
        task = asyncio.create_task(
            self.fire("Notification", payload, emit, target=kind, agent=agent)
        )
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _run(self, hook: HookCommand, stdin: bytes) -> HookRun:
        started = time.monotonic()
        log.debug("hook %s `%s` stdin: %s", hook.event, hook.command, stdin.decode())
        try:
            run = await self._spawn(hook, stdin)
        except (OSError, SandboxUnavailable) as exc:
            run = HookRun(hook.command, hook.source, -1, error=str(exc))
        log.debug(
            "hook %s `%s` exit %d stdout: %s stderr: %s",
            hook.event,
            hook.command,
            run.exit_code,
            run.stdout,
            run.stderr,
        )
        return replace(run, duration_ms=int((time.monotonic() - started) * 1000))

    def _env(self) -> dict[str, str]:
        env = self._environment.build()
        env["CLAUDE_PROJECT_DIR"] = env["DCODE_PROJECT_DIR"] = str(self.workspace)
        return env

    async def _spawn(self, hook: HookCommand, stdin: bytes) -> HookRun:
        argv = [self._shell, "-c", hook.command]
        sandbox = self._sandbox()
        if sandbox is not None and sandbox.on:
            argv = await sandbox.wrap_async(argv, cwd=self.workspace)
        since = table.ticks_now()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.workspace,
            env=self._env(),
            start_new_session=True,
        )
        TREES.add(proc.pid, since)
        try:
            out, err = await asyncio.wait_for(_communicate(proc, stdin), hook.timeout)
        except TimeoutError:
            await asyncio.to_thread(TREES.end_session, proc.pid)
            await proc.wait()
            return HookRun(hook.command, hook.source, -1, timed_out=True)
        finally:
            if proc.returncode is None:  # cancelled: the hook ends with the turn
                TREES.kill_session_now(proc.pid)
            TREES.refresh_soon()
        return HookRun(
            hook.command,
            hook.source,
            proc.returncode if proc.returncode is not None else -1,
            _text(out),
            _text(err),
        )


async def _communicate(proc: asyncio.subprocess.Process, stdin: bytes) -> tuple[bytes, bytes]:
    """The hook's output, once it has ended, with ``stdin`` written to it meanwhile (at once,
    as ``communicate`` does: a hook may write much before it reads)."""
    _, output = await asyncio.gather(_feed(proc, stdin), proc.communicate())
    return output


async def _feed(proc: asyncio.subprocess.Process, stdin: bytes) -> None:
    """Write the hook's input and close it. A hook that ends without reading it is no failure:
    asyncio says so with a ``BrokenPipeError``, uvloop (a dcode server's loop) with a
    ``RuntimeError``."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(stdin)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError, RuntimeError):
        log.debug("a hook ended without reading its input", exc_info=True)
    proc.stdin.close()


def _text(data: bytes) -> str:
    return data[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace")
