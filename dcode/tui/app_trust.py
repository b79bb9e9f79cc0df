"""Asking to trust the project, mixed into ``DcodeApp``: once, right after the first paint.

When the project's ``.dcode/config.toml`` has settings that apply only to a trusted project,
the trust screen lists them before the engine opens. "Trust this project" records the trust
for exactly the content shown and re-resolves the settings; "Not now" leaves them out for this
run. Either way the engine then opens with the settings the answer gave; its imports start
while the screen is up, so the answer costs no extra wait.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from textual import work

from dcode.config import ApprovalMode
from dcode.project_gate import ignored_keys
from dcode.tui.transcript import NoticeLevel
from dcode.tui.transcript.view import ANSWER_MODULE

if TYPE_CHECKING:
    from dcode.tui.app import DcodeApp

    _Base = DcodeApp
else:
    _Base = object


class ProjectTrust(_Base):
    def _ask_trust(self) -> None:
        """The project's config has settings dcode ignores until it is trusted: ask once, and
        open the engine with the settings the answer gives (its imports start meanwhile)."""
        from dcode.tui.screens.trust import TrustScreen

        self._warm_engine_imports()
        screen = TrustScreen(self.settings)

        def closed(trusted: bool | None) -> None:
            if screen.typed:
                self.prompt_input.insert_text(screen.typed)
            self.prompt_input.focus()
            if trusted:
                self._trust_project()
            else:
                self.call_later(
                    self.transcript.notice,
                    f"Left out the project's {ignored_keys(self.settings)} this session; `dcode trust` applies them.",
                    NoticeLevel.WARNING,
                )
            self._open_or_set_up()

        self.push_screen(screen, callback=closed)

    def _trust_project(self) -> None:
        """Record the trust for exactly the content the user was shown, then re-resolve."""
        from dcode.trust import TrustStore

        keys = ignored_keys(self.settings)
        settings = self.settings
        try:
            assert settings.project_digest is not None
            TrustStore(settings.home).trust(settings.workspace, settings.project_digest)
        except OSError as exc:
            self.call_later(self.transcript.notice, f"could not record the trust: {exc.strerror or exc}", NoticeLevel.ERROR)
            return
        if not self._resolve_settings_again():
            return  # the first-run screen says what is wrong with the config
        self.mode = self.settings.approve or ApprovalMode.MANUAL
        self._show_mode()
        still = ignored_keys(self.settings)
        note = f" (still left out: {still})" if still else ""
        self.call_later(self.transcript.notice, f"Trusted this project: its {keys} now apply{note}.")

    @work(thread=True, group="warm-imports", exit_on_error=False)
    def _warm_engine_imports(self) -> None:
        for module in ("dcode.models.factory", "dcode.agent.engine", ANSWER_MODULE):
            importlib.import_module(module)
