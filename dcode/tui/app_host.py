"""What the App's components may use of the App: its widgets, the session it holds, and the
few Textual calls they make (workers, timers, screens, toasts).

The components (``app_session``, ``app_commands``, ``app_mcp``, ``app_trust``, ``app_setup``,
``app_served``) are owned by ``DcodeApp`` and typed against these protocols, never against the App itself: each
says what it needs, and none imports the App back.
"""

# Any: Textual's worker, timer, call_later and screen APIs take callables and screens of any result

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.timer import Timer
    from textual.worker import Worker
    from textual.worker_manager import WorkerManager

    from dcode.agent.engine import Engine
    from dcode.agent.events import ApprovalKind
    from dcode.agent.runner import SessionRunner
    from dcode.prompts.commands import PromptCommands
    from dcode.sandbox.confine import Sandbox
    from dcode.settings.config import ApprovalMode, Settings
    from dcode.tui.status import StatusBar
    from dcode.tui.transcript import Transcript
    from dcode.tui.widgets.prompt_input import PromptInput


class AppHost(Protocol):
    """What every component reads: the settings, the engine and session, the three widgets,
    and Textual's workers, timers, screens and toasts (the App's own, public API)."""

    settings: Settings
    engine: Engine | None
    runner: SessionRunner | None
    mode: ApprovalMode
    sandbox: Sandbox
    prompt_commands: PromptCommands
    busy: bool

    @property
    def transcript(self) -> Transcript: ...

    @property
    def status(self) -> StatusBar: ...

    @property
    def prompt_input(self) -> PromptInput: ...

    @property
    def screen(self) -> Screen[object]: ...

    @property
    def workers(self) -> WorkerManager: ...

    @property
    def is_running(self) -> bool: ...

    def run_worker(
        self,
        work: Any,
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Worker[Any]: ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def set_interval(
        self,
        interval: float,
        callback: Callable[[], Any] | None = None,
        *,
        name: str | None = None,
        repeat: int = 0,
        pause: bool = False,
    ) -> Timer: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def push_screen(self, screen: Screen[Any], callback: Any = None) -> Any: ...

    def show_mode(self, *also_allowed: ApprovalKind, also_tool: str = "") -> None:
        """The approval mode and the session's "yes for the session" answers, in the status bar."""

    def set_mode(self, mode: ApprovalMode) -> None:
        """The approval mode, for the session and the status bar."""
