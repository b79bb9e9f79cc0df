"""What dcode's file tools write is recorded, so that ``/rewind`` can put it back.

Hook: ``awrap_tool_call``, innermost: only a call that was approved and is about to run is
recorded. Before a ``write`` tool runs (its spec names the paths it writes), what each path
holds is kept in the run's ``ChangeLog``; after it, what the call left there (also when it
failed or was cancelled, so a rewind can tell the file is as dcode left it). A record that
cannot be written costs one notice a session, never the write itself: the user asked for the
edit, and only a later rewind of that file is lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from dcode.agent.events import Notice
from dcode.agent.middleware.run_context_required import require_run_context
from dcode.agent.rewind.changes import ChangeLog
from dcode.agent.run_context import RunContext
from dcode.agent.tools.spec import ToolKind, spec_for

log = logging.getLogger(__name__)


Recorded = list[tuple[int, Path]]


class FileChangesMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    def __init__(self) -> None:
        super().__init__()
        self._warned: set[str] = set()

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[object]]],
    ) -> ToolMessage | Command[object]:
        context = require_run_context(request.runtime.context)
        paths = _written_paths(request, context)
        if not paths or context.changes is None:
            return await handler(request)
        recorded, failure = await asyncio.to_thread(_record_before, context.changes, paths)
        self._warn(context, failure)
        try:
            return await handler(request)
        finally:
            await asyncio.to_thread(_record_after, context.changes, recorded)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[object]],
    ) -> ToolMessage | Command[object]:
        context = require_run_context(request.runtime.context)
        paths = _written_paths(request, context)
        if not paths or context.changes is None:
            return handler(request)
        recorded, failure = _record_before(context.changes, paths)
        self._warn(context, failure)
        try:
            return handler(request)
        finally:
            _record_after(context.changes, recorded)

    def _warn(self, context: RunContext, failure: tuple[Path, Exception] | None) -> None:
        """One notice a session that a file's earlier content could not be kept."""
        if failure is None or context.changes is None or context.changes.session_id in self._warned:
            return
        self._warned.add(context.changes.session_id)
        path, exc = failure
        context.emit(
            Notice(
                f"/rewind will not be able to put back {context.backend.display_path(path)}: its content could not be kept ({exc})"
            )
        )


def _record_before(
    changes: ChangeLog, paths: list[Path]
) -> tuple[Recorded, tuple[Path, Exception] | None]:
    """Keep what each path holds (blocking); the first failure, if any, beside what was kept."""
    recorded: Recorded = []
    failure = None
    for path in paths:
        try:
            recorded.append((changes.before(path), path))
        except Exception as exc:  # the write goes ahead; only its rewind is lost
            log.debug("recording %s before a write failed", path, exc_info=True)
            failure = failure or (path, exc)
    return recorded, failure


def _record_after(changes: ChangeLog, recorded: Recorded) -> None:
    for change_id, path in recorded:
        try:
            changes.after(change_id, path)
        except Exception:  # a rewind then treats the file as changed since
            log.debug("recording what %s holds after a write failed", path, exc_info=True)


def _written_paths(request: ToolCallRequest, context: RunContext) -> list[Path]:
    """The resolved paths the call writes, when it is a file tool the graph has."""
    if request.tool is None:
        return []
    spec = spec_for(request.tool_call["name"])
    if spec.kind is not ToolKind.WRITE:
        return []
    paths = []
    for raw in spec.target_paths(request.tool_call.get("args") or {}):
        try:
            paths.append(context.backend.resolve(raw))
        except (OSError, ValueError):
            continue  # the tool itself will say what is wrong with the path
    return paths
