"""Asking to trust the project, a component of ``DcodeApp``: once, right after the first paint.

What the project asks for beyond the user's own settings (its config's settings, its agents'
models, its ``.mcp.json`` servers: ``trust_request``) is gathered in a thread; when anything
waits, one dialog lists it all before the engine opens (its imports start meanwhile, so the
answer costs no extra wait). A yes records each part where it has always been recorded (the
project's trust, the file's MCP approval) and re-resolves the settings; "not now" leaves it all
out for this run. Either way the engine then opens with the settings the answer gave, and the
MCP servers start as the answer says (``app_mcp``). What it needs of the App is ``TrustHost``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from dcode.settings.config import ApprovalMode
from dcode.settings.project_gate import ignored_keys
from dcode.tui.app_host import AppHost
from dcode.tui.app_setup import ModelSetup
from dcode.tui.transcript import NoticeLevel
from dcode.tui.transcript.view import ANSWER_MODULE

if TYPE_CHECKING:
    from dcode.tui.transcript import Transcript
    from dcode.tui.trust_request import TrustRequest

log = logging.getLogger(__name__)


class TrustHost(AppHost, Protocol):
    """What the trust question needs of the App, beyond what every component does."""

    last_typed: float
    """When the prompt's text last changed: keys typed just before the dialog go to the prompt."""


class ProjectTrust:
    """The trust question at start, and again for a project's MCP servers that came since."""

    def __init__(self, host: TrustHost, setup: ModelSetup) -> None:
        self.host = host
        self.setup = setup
        self.project_mcp_answered = False
        """The project's MCP servers were asked about this session (not asked again)."""

    @property
    def transcript(self) -> Transcript:
        return self.host.transcript

    def check(self, then: Callable[[], None]) -> None:
        """Ask about what the project asks for, if anything, then ``then`` (the engine opens)."""
        self.host.run_worker(
            partial(self._check, then),
            name="_check_trust",
            group="trust",
            exclusive=True,
            exit_on_error=False,
        )

    async def _check(self, then: Callable[[], None]) -> None:
        from dcode.tui.trust_request import trust_request

        try:
            request = await asyncio.to_thread(trust_request, self.host.settings)
        except OSError:  # unreadable files: the engine and the MCP start say what is wrong
            log.debug("the project's trust files could not be read", exc_info=True)
            request = None
        if not request:
            then()
            return
        self._warm_engine_imports()
        self.ask(request, lambda _trusted: then())

    def ask(self, request: TrustRequest, then: Callable[[bool], None]) -> None:
        from dcode.tui.screens.trust import ProjectTrustScreen

        host = self.host
        screen = ProjectTrustScreen(request, typed_at=host.last_typed)

        def closed(trusted: bool | None) -> None:
            if screen.typed:
                host.prompt_input.insert_text(screen.typed)
            host.prompt_input.focus()
            self.project_mcp_answered = self.project_mcp_answered or request.mcp is not None
            if trusted:
                self._trust(request)
            else:
                self._leave_out(request)
            then(bool(trusted))

        host.push_screen(screen, callback=closed)

    def _trust(self, request: TrustRequest) -> None:
        """Record each part for exactly the content the user was shown, then re-resolve."""
        done: list[str] = []
        if request.project_trust and (said := self._trust_project(request)):
            done.append(said)
        if request.mcp is not None and request.mcp.awaiting is not None:
            from dcode.mcp.approvals import approve

            try:
                approve(self.host.settings.home, request.mcp.awaiting)
            except OSError as exc:
                self.host.call_later(
                    self.transcript.notice,
                    f"could not record the MCP approval: {exc.strerror or exc}",
                    NoticeLevel.ERROR,
                )
            else:
                done.append(
                    f"its MCP servers ({request.server_names}) start, and their tools join the next turn"
                )
        if done:
            self.host.call_later(
                self.transcript.notice, f"Trusted this project: {'; '.join(done)}."
            )

    def _trust_project(self, request: TrustRequest) -> str:
        """The project's trust recorded and its settings applied: what now applies, or ""."""
        from dcode.settings.trust import TrustStore

        keys, agents = (
            ignored_keys(request.settings),
            ", ".join(agent.name for agent in request.agents),
        )
        rules = ", ".join(rule.text for rule in request.settings.waiting_rules)
        host = self.host
        settings = host.settings
        try:
            assert settings.project_digest is not None
            TrustStore(settings.home).trust(settings.workspace, settings.project_digest)
        except OSError as exc:
            host.call_later(
                self.transcript.notice,
                f"could not record the trust: {exc.strerror or exc}",
                NoticeLevel.ERROR,
            )
            return ""
        if not self.setup.resolve_again():
            return ""  # the first-run screen says what is wrong with the config
        host.mode = host.settings.approve or ApprovalMode.MANUAL
        host.show_mode()
        parts = [f"its {keys} now apply"] if keys else []
        if rules:
            parts.append(f"its allow rules ({rules}) apply")
            self._apply_rules()
        if hooks := len(request.settings.skipped_hooks):
            parts.append(f"its hooks ({hooks}) run")
        if agents:
            parts.append(f"its agents ({agents}) run on their own models")
        if still := ignored_keys(host.settings):
            parts.append(f"still left out: {still}")
        return "; ".join(parts)

    def _apply_rules(self) -> None:
        """The rules as the settings now give them, for the engine already open (its runners
        share the one set)."""
        from dcode.agent.permissions.load import session_rules

        if self.host.engine is not None:
            self.host.engine.rules.rules = session_rules(self.host.settings)[0].rules

    def _leave_out(self, request: TrustRequest) -> None:
        parts = []
        if keys := ignored_keys(request.settings):
            parts.append(f"settings ({keys})")
        if request.settings.waiting_rules:
            parts.append(
                f"allow rules ({', '.join(rule.text for rule in request.settings.waiting_rules)})"
            )
        if hooks := len(request.settings.skipped_hooks):
            parts.append(f"hooks ({hooks})")
        if request.mcp is not None:
            parts.append(f"MCP servers ({request.server_names})")
        if request.agents:
            parts.append(f"agents' models ({', '.join(agent.name for agent in request.agents)})")
        listed = f"{', '.join(parts[:-1])} and {parts[-1]}" if len(parts) > 1 else parts[0]
        self.host.call_later(
            self.transcript.notice,
            f"Left out the project's {listed} this session; dcode asks again next time.",
            NoticeLevel.WARNING,
        )

    def _warm_engine_imports(self) -> None:
        self.host.run_worker(
            _import_engine,
            name="_warm_engine_imports",
            thread=True,
            group="warm-imports",
            exit_on_error=False,
        )


def _import_engine() -> None:
    for module in ("dcode.models.factory", "dcode.agent.engine", ANSWER_MODULE):
        importlib.import_module(module)
