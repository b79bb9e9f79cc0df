"""The first-run screen, a component of ``DcodeApp``: what keeps a model out of reach, said in
a dialog that can test the connection, and the settings resolved again once the user fixed it.

The App asks it before the engine opens (``problem``) and when the engine could not open for a
reason the settings give; a prompt sent while no model can be reached tries again. What it needs
of the App is ``SetupHost``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from dcode.settings.config import ConfigError
from dcode.tui.app_host import AppHost
from dcode.tui.setup_problem import find_setup_problem
from dcode.tui.transcript import NoticeLevel

if TYPE_CHECKING:
    from dcode.settings.config import Settings
    from dcode.tui.widgets.welcome import Welcome


class SetupHost(AppHost, Protocol):
    """What the first-run screen needs of the App, beyond what every component does."""

    starting: bool
    no_model: bool

    @property
    def welcome(self) -> Welcome: ...


class ModelSetup:
    """What keeps a model out of reach, the dialog that says it, and the retry."""

    def __init__(
        self,
        host: SetupHost,
        problem: str | None,
        reload_settings: Callable[[], Settings],
        open_engine: Callable[[], object],
        *,
        attached: bool = False,
    ) -> None:
        """``attached``: the sessions run on a dcode server (``--server``), whose model answers:
        a key this machine lacks for its configured model keeps nothing out of reach."""
        self.host = host
        self.attached = attached
        self.problem = problem
        """What keeps a model out of reach (the first-run screen says it), if anything."""
        self._noticed: str | None = None  # the problem the transcript has said already
        self._reload_settings = reload_settings
        self._open_engine = open_engine

    def show(self, problem: str) -> None:
        from dcode.tui.screens.first_run import FirstRunScreen

        host = self.host
        host.status.activity = "No model"
        host.starting = False
        host.no_model = True
        screen = FirstRunScreen(problem, host.settings, check=self._connection_check)

        def closed(retry: bool | None) -> None:
            if screen.typed:
                host.prompt_input.insert_text(screen.typed)
            self._after(retry)

        host.push_screen(screen, callback=closed)

    def _connection_check(self) -> tuple[bool, str]:
        """For the first-run screen's "test connection" (it runs this in a thread)."""
        from dcode.models.connection import check_connection
        from dcode.models.factory import resolve_model

        settings = self._reload_settings()
        try:
            resolved = resolve_model(settings)
        except ConfigError as exc:
            return False, str(exc)
        return check_connection(resolved)

    def _after(self, retry: bool | None) -> None:
        host = self.host
        if not retry:
            # The dialog said it; the transcript keeps it once, however often the dialog opens.
            if self.problem and self.problem != self._noticed:
                self._noticed = self.problem
                host.call_later(
                    host.transcript.notice,
                    f"{self.problem} — fix it and send a prompt to try again.",
                    NoticeLevel.ERROR,
                )
            host.prompt_input.focus()
            return
        self.retry()

    def retry(self) -> None:
        """Resolve the settings again (the config may have been fixed meanwhile): the engine
        opens, or the first-run screen says what is still wrong."""
        self.resolve_again()
        if self.problem:
            self.show(self.problem)
            return
        host = self.host
        host.no_model = False
        host.status.activity = "Starting…"
        host.prompt_input.focus()
        self._open_engine()

    def resolve_again(self) -> bool:
        """Resolve the settings again from their sources, and what still keeps a model out of
        reach (``problem``); False when the config itself is now wrong (it says why)."""
        host = self.host
        try:
            host.settings = self._reload_settings()
        except ConfigError as exc:
            self.problem = str(exc)
            return False
        self.problem = find_setup_problem(host.settings, attached=self.attached)
        host.status.model = host.welcome.model = host.settings.model
        return True
