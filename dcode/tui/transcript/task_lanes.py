"""The subagents the transcript knows, by agent path: where each one's events go.

A subagent's events carry its path (``("task:2",)``); its ``SubagentStarted`` names the
parent's ``task`` call, whose entry then holds the run (``ToolCallEntry.task``). Everything
the subagent streams goes into that run's entries, and into its task widget when mounted.
"""

from __future__ import annotations

from dcode.tui.transcript.entries import Entry, TaskRun, ToolCallEntry


class TaskLanes:
    def __init__(self) -> None:
        self._calls: dict[tuple[str, ...], ToolCallEntry] = {}
        self._running: list[ToolCallEntry] = []

    def clear(self) -> None:
        self._calls.clear()
        self._running = []

    def add(self, call: ToolCallEntry) -> None:
        """``call``'s subagent (``call.task``) is known now."""
        assert call.task is not None
        self._calls[call.task.path] = call
        if call.task.running:
            self._running.append(call)

    def call(self, path: tuple[str, ...]) -> ToolCallEntry | None:
        return self._calls.get(path)

    def lane(self, path: tuple[str, ...]) -> TaskRun | None:
        call = self._calls.get(path)
        return call.task if call is not None else None

    def lineage(self, path: tuple[str, ...]) -> list[ToolCallEntry]:
        """The task calls from the outermost down to the one at ``path``."""
        found = (self._calls.get(path[:depth]) for depth in range(1, len(path) + 1))
        return [call for call in found if call is not None and call.task is not None]

    def label(self, path: tuple[str, ...]) -> str:
        """How the agent at ``path`` is named where it asks: ``""`` for the session's own."""
        if not path:
            return ""
        run = self.lane(path)
        return run.label if run is not None else "/".join(path)

    async def add_entry(self, run: TaskRun, entry: Entry) -> None:
        from dcode.tui.transcript.task_view import TaskView

        run.entries.append(entry)
        call = self._calls.get(run.path)
        if call is not None and isinstance(call.view, TaskView):
            await call.view.entry_added(entry)

    def take_running(self) -> list[ToolCallEntry]:
        """The subagents still running as the turn ends (and no longer the turn's)."""
        running = [call for call in self._running if call.task is not None and call.task.running]
        self._running = []
        return running
