"""The model and the spend of a TUI attached to a dcode server (``dcode --server URL``), a
component of ``DcodeApp``.

An attached TUI keeps its local engine for the rest (its commands, its token counts), but its
turns run on the server, with the server's model (the one ``dcode serve`` was given, unless the
client's ``-m`` or ``/model`` names another for its runs), and their spend is written to the
server's session store as the run goes. So the banner and the status bar name the model the
server says answers (``dcode-session``'s ``model``), never the client's own, and the status
bar's cost is what the server's store holds for the session (``usage``), priced with the
server's tariff, never the client's prices applied to the server's tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from dcode.agent.budget import SessionBudget
from dcode.server.client import RemoteFailure, RemoteServer, ServedModel, served_model
from dcode.server.options import MODEL_KEYS
from dcode.tui.app_host import AppHost
from dcode.tui.transcript import NoticeLevel

if TYPE_CHECKING:
    from dcode.agent.budget import UsageRow
    from dcode.agent.runner import SessionRunner
    from dcode.server.attached import AttachedRunner


class ServedAppHost(AppHost, Protocol):
    def show_model(self) -> None:
        """The model's name in the banner and the status bar."""


def session_cost(rows: list[UsageRow]) -> float | None:
    """The session's dollars: its priced rows' sum; None when no row has a price (the model
    that spent has none), as the status bar shows no cost for an unpriced local model."""
    priced = [row.cost_usd for row in rows if row.cost_usd is not None]
    return sum(priced) if priced else None


def attached(runner: SessionRunner | None) -> AttachedRunner | None:
    """``runner`` when its turns run on a dcode server."""
    if runner is None:
        return None
    from dcode.server.attached import AttachedRunner

    return runner if isinstance(runner, AttachedRunner) else None


class ServedView:
    """What the attached TUI shows of the server's model and of the session's spend there."""

    def __init__(
        self, host: ServedAppHost, server: RemoteServer, context: Mapping[str, str]
    ) -> None:
        """``context``: the model flags the client was given (``-m``, ``--base-url``,
        ``--api``, ``--effort``), which its runs send to the server."""
        self.host = host
        self.server = server
        self.context = {key: value for key, value in context.items() if value}
        self.model: ServedModel | None = None
        """The model the server says answers the client's runs; None until it said."""

    @property
    def label(self) -> str:
        """The model's name as the banner and status bar show it: the server's answer, or
        where the runs go until the server has answered."""
        return self.model.label if self.model is not None else f"model on {self.server.url}"

    @property
    def workspace_label(self) -> str:
        """Where the runs work, as the banner shows it: the server's workspace on its host;
        empty until the server has said."""
        if self.model is None or not self.model.workspace:
            return ""
        host = urlsplit(self.server.url).netloc or self.server.url
        return f"{self.model.workspace} on {host}"

    def ask_model(self) -> None:
        """Ask the server which model answers this client's runs, and show it."""
        self.host.run_worker(
            self._ask_model(), group="served-model", exclusive=True, exit_on_error=False
        )

    async def _ask_model(self) -> None:
        try:
            model = await served_model(self.server, self.context)
        except RemoteFailure as exc:
            await self.host.transcript.notice(
                f"could not ask the server which model answers: {exc}", NoticeLevel.WARNING
            )
            return
        self._use(model)

    async def switch_model(self, spec: str) -> None:
        """``/model SPEC`` attached: the client's next runs ask the server for ``spec`` (as
        ``-m`` does), once the server said it can run it; the server resolves it."""
        kept = {k: v for k, v in self.context.items() if k not in ("model", "base_url", "api")}
        model = await self._switch({**kept, "model": spec})
        if model is not None:
            await self.host.transcript.notice(
                f"switched to {model.spec} on {self.server.url}; the conversation continues"
            )

    async def set_effort(self, effort: str | None) -> None:
        """``/effort LEVEL`` attached: the client's next runs ask the server for that
        reasoning effort (None: the server's own), once the server said it can."""
        kept = {k: v for k, v in self.context.items() if k != "effort"}
        model = await self._switch({**kept, "effort": effort} if effort else kept)
        if model is not None:
            await self.host.transcript.notice(
                f"reasoning effort for {model.spec} on {self.server.url}: {model.effort}"
                if model.effort
                else f"{model.spec} reasons as its provider does by default on {self.server.url}"
            )

    async def _switch(self, context: dict[str, str]) -> ServedModel | None:
        """The client's runs go with ``context``'s model keys from now on, and the model the
        server says answers them is shown; None (and one line) when the server refuses."""
        try:
            model = await served_model(self.server, context)
        except RemoteFailure as exc:
            await self.host.transcript.notice(f"keeping {self.label}: {exc}", NoticeLevel.ERROR)
            return None
        self.context = context
        self._use(model)
        return model

    def _use(self, model: ServedModel) -> None:
        """``model`` is the one that answers: shown, and the window the runner measures the
        context against."""
        self.model = model
        runner = attached(self.host.runner)
        if runner is not None:
            self.fit(runner)
        self.host.show_model()

    def fit(self, runner: AttachedRunner) -> None:
        """``runner``'s runs go with this client's model keys, and its context is measured
        against the server's model's window once known."""
        remote = runner.remote
        for key in MODEL_KEYS:
            remote.context.pop(key, None)
        remote.context.update(self.context)
        if self.model is not None and self.model.max_input_tokens:
            remote.max_input_tokens = self.model.max_input_tokens

    def ask_spend(self, runner: SessionRunner | None) -> None:
        """Show what the session spent, as the server's store holds it (the cost, the budget's
        level); the latest ask replaces one still going."""
        served = attached(runner)
        if served is not None:
            self.host.run_worker(
                self._ask_spend(served), group="served-spend", exclusive=True, exit_on_error=False
            )

    async def _ask_spend(self, runner: AttachedRunner) -> None:
        try:
            rows, limits = await runner.remote.usage()
        except RemoteFailure:  # the status bar keeps its last figure; /cost says why
            return
        if runner is not self.host.runner:
            return  # the screen has left the session meanwhile
        status = self.host.status
        status.cost = session_cost(rows)
        status.budget = max(status.budget, SessionBudget.starting(limits, rows).level())
