"""The server process's side of dcode: its settings, engines and the sessions' live state.

One ``ServedHost`` per server process, opened by the first of the checkpointer or the graph
factory that the server loads. It holds:

- the settings, read as ``dcode`` reads them for the workspace ``dcode serve`` named, with its
  model flags (``options``) as the defaults of every run;
- one ``Engine`` per model a run asks for (they share the session store and its checkpointer,
  which is also the server's checkpointer: ``checkpointer.session_store``);
- per thread, what outlives one run: the approvals given "for the rest of the session", the
  denials, and the calls whose ``ApprovalRequested`` already went out (a resumed run runs the
  tool node again, and the question must not be shown twice);
- the workspace's MCP servers, started once for the process as ``dcode`` starts them there (the
  user's, and the project's ``.mcp.json`` only once the user approved it), shared by the
  engines, their tools in every run's graph, stopped with the server.

A run gets what an embedded turn gets from the workspace: its hooks (the settings', trusted as
``dcode`` trusts them; the graph fires ``UserPromptSubmit`` and ``Stop`` itself, as no runner
wraps a served run, and a client fires none; ``SessionEnd`` fires when a client asks,
``session_graph``) and the session's budget, whose spend is read from and written to the
server's session store as the run goes (``StoredUsage``).

Everything that reads files or resolves programs runs in a thread: the dev server rejects
blocking calls on its event loop.
"""

# Any: LangGraph's compiled graphs are untyped generics here

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from langgraph.checkpoint.base import BaseCheckpointSaver

from dcode.agent.approval import ApprovalPolicy, Denial, ToolGrants
from dcode.agent.budget import AgentBudget, Limits, SessionBudget, UsageRow
from dcode.agent.engine import Engine
from dcode.agent.events import ApprovalKind, ApprovalRequested, Event, Notice
from dcode.agent.run_context import RunContext, current_thread_id
from dcode.agent.store import open_store
from dcode.agent.store.base import SessionStore
from dcode.mcp.config import ServerConfig
from dcode.mcp.manager import McpManager
from dcode.models.factory import resolve_model
from dcode.server import options
from dcode.server.approvals import InterruptApprover
from dcode.server.writes import WriteBehind
from dcode.settings.config import (
    ApprovalMode,
    ConfigError,
    ReasoningEffort,
    Settings,
    WireApi,
    load_settings,
)
from dcode.settings.private_files import ensure_private_dir

log = logging.getLogger(__name__)


class RunRefused(ValueError):
    """A run's context the server cannot run with; a ``ValueError``, so that the server passes
    its message on to the client (it hides the text of other errors)."""


@dataclass
class ThreadState:
    """What a served session keeps between its runs, in the server's memory."""

    allowed: set[ApprovalKind] = field(default_factory=set)
    tools: ToolGrants = field(default_factory=ToolGrants)
    denials: list[Denial] = field(default_factory=list)
    asked: set[str] = field(default_factory=set)
    """The call ids whose question went out already."""
    writes: WriteBehind = field(default_factory=WriteBehind)
    """Its runs' writes to the session store, under way behind them."""


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A run's model, as the engine that serves it is keyed."""

    model: str
    base_url: str | None
    api: WireApi | None
    effort: ReasoningEffort | None

    def settings(self, base: Settings) -> Settings:
        return replace(
            base, model=self.model, base_url=self.base_url, api=self.api, effort=self.effort
        )


def server_settings(env: Mapping[str, str]) -> Settings:
    """The settings of the server's runs: dcode's own for the workspace, with ``dcode serve``'s
    model flags on top, as the command line's would be."""
    workspace = Path(env.get(options.WORKSPACE_ENV) or Path.cwd())
    cli = {
        "model": env.get(options.MODEL_ENV) or None,
        "base_url": env.get(options.BASE_URL_ENV) or None,
        "api": env.get(options.API_ENV) or None,
        "effort": env.get(options.EFFORT_ENV) or None,
    }
    return load_settings(workspace=workspace, cli=cli, env=dict(env))


@dataclass(frozen=True, slots=True)
class StoredUsage:
    """A served session's usage book (``UsageBook``) and turn record (``TurnRecord``): its rows
    in the server's session store, under the thread's id, so that its budget counts what it
    spent before and ``dcode sessions show --usage`` lists it; and its record there, titled by
    its first prompt, so that ``dcode sessions list`` lists it as a local session. The
    session's record is made on first use. Its writes are made behind the run (``writes``):
    a read of the spend waits for those still under way."""

    store: SessionStore
    session_id: str
    workspace: Path
    model: str
    writes: WriteBehind = field(default_factory=WriteBehind)

    async def spent(self) -> list[UsageRow]:
        await self.writes.settled()
        return await asyncio.to_thread(self._read)

    def _read(self) -> list[UsageRow]:
        if self.store.get(self.session_id) is None:
            self.store.create(self.session_id, self.workspace, self.model)
        return self.store.usage(self.session_id)

    async def record(self, rows: Sequence[UsageRow]) -> None:
        self.writes.add(partial(self.store.record_usage, self.session_id, list(rows)))

    async def prompted(self, prompt: str, message_count: int) -> None:
        """A prompt of the session came in (``TurnRecord``): its record lists it as a local
        session's does, titled by its first prompt, in the server's workspace."""
        self.writes.add(partial(self._prompted, prompt, message_count))

    def _prompted(self, prompt: str, message_count: int) -> None:
        if self.store.get(self.session_id) is None:
            self.store.create(self.session_id, self.workspace, self.model)
        self.store.start_turn(self.session_id, prompt=prompt, message_count=message_count)


def mcp_servers(settings: Settings) -> tuple[ServerConfig, ...]:
    """The MCP servers the server starts: those ``dcode`` starts in its workspace (the
    project's only once the user approved its file as it is now). What is left out, and the
    configs' problems, go to the server's log."""
    from dcode.mcp.plan import plan, skipped_warning

    servers = plan(settings)
    for line in (*servers.problems, skipped_warning(servers)):
        if line:
            log.warning("%s", line)
    if servers.start:  # the SDK and the adapter load here, not on the event loop
        import dcode.mcp.link
        import dcode.mcp.resources
        import dcode.mcp.tools  # noqa: F401
    return servers.start


def emitter(state: ThreadState) -> Any:
    """Puts dcode's events on the run's ``custom`` stream as JSON (``Event.to_json``, with its
    ``type``); a question already asked in this session is not sent again."""
    from langgraph.config import get_stream_writer

    def emit(event: Event) -> None:
        if isinstance(event, ApprovalRequested):
            if event.call_id in state.asked:
                return
            state.asked.add(event.call_id)
        try:
            writer = get_stream_writer()
        except (RuntimeError, KeyError):  # not inside a graph run: nobody is listening
            return
        writer(event.to_json())

    return emit


class ServedHost:
    _current: ClassVar[ServedHost | None] = None
    _opening: ClassVar[asyncio.Lock | None] = None

    def __init__(self, settings: Settings, store: SessionStore, checkpointer: BaseCheckpointSaver):
        self.settings = settings
        self.store = store
        self.checkpointer = checkpointer
        self.engines: dict[ModelChoice, Engine] = {}
        self.graphs: dict[ModelChoice, Any] = {}
        self.threads: dict[str, ThreadState] = {}
        self.mcp: McpManager | None = None
        """The MCP servers' manager: the first engine's, shared by the others."""
        self.notices: list[str] = []
        """MCP servers' changes of state not said yet: the next run says them."""

    @classmethod
    async def open(cls) -> ServedHost:
        """The process's host, opened on first use (the checkpointer and the graph factory
        both ask for it, in either order)."""
        if cls._opening is None:
            cls._opening = asyncio.Lock()
        async with cls._opening:
            if cls._current is None:
                cls._current = await cls._start(dict(os.environ))
        return cls._current

    @classmethod
    def current(cls) -> ServedHost:
        if cls._current is None:
            raise RuntimeError("dcode's server host is not open: the graph factory opens it")
        return cls._current

    @classmethod
    async def _start(cls, env: dict[str, str]) -> ServedHost:
        settings = await asyncio.to_thread(server_settings, env)
        await asyncio.to_thread(ensure_private_dir, settings.home)
        store = await asyncio.to_thread(open_store, settings)
        checkpointer = await store.open_checkpointer()
        host = cls(settings, store, checkpointer)
        await host.engine(host.default_choice())  # the default model fails at start, not later
        servers = await asyncio.to_thread(mcp_servers, settings)
        if host.mcp is not None:
            host.mcp.add(servers)  # on the loop: each server connects in a task of its own
        return host

    async def close(self) -> None:
        """Close the engines (the first one closes the shared store, and stops the MCP
        servers), once the sessions' store writes under way are done."""
        for state in self.threads.values():
            await state.writes.settled()
        engines, self.engines = list(self.engines.values()), {}
        for engine in engines:
            await engine.close()
        await self.store.aclose()
        type(self)._current = None

    def default_choice(self) -> ModelChoice:
        s = self.settings
        return ModelChoice(s.model, s.base_url, s.api, s.effort)

    def choice(self, context: Mapping[str, object] | None) -> ModelChoice:
        """The model a run's context asks for; keys it leaves out are the server's. Another
        model than the server's goes to its provider's own address unless the run names one
        (as ``/model`` does)."""
        base = self.default_choice()
        if not context:
            return base
        model = str(context.get("model") or "") or base.model
        base_url = str(context.get("base_url") or "") or (
            base.base_url if model == base.model else None
        )
        api, effort = context.get("api"), context.get("effort")
        try:
            return ModelChoice(
                model,
                base_url,
                WireApi(str(api)) if api else base.api,
                ReasoningEffort(str(effort)) if effort else base.effort,
            )
        except ValueError as exc:
            raise RunRefused(f"the run's context: {exc}") from None

    async def engine(self, choice: ModelChoice) -> Engine:
        if choice not in self.engines:
            settings = choice.settings(self.settings)
            resolved = await asyncio.to_thread(resolve_model, settings)
            engine = await asyncio.to_thread(
                partial(Engine, turn_hooks=True), settings, resolved, self.store, self.checkpointer
            )
            if self.mcp is None:
                self.mcp = engine.mcp
            else:
                engine.mcp = self.mcp  # one process for each server, whatever the model
            self.engines[choice] = engine
        return self.engines[choice]

    async def graph_for(
        self, context: Mapping[str, object] | None, schema: type, kv: Any = None
    ) -> Any:
        """The graph that runs with ``context``: the engine's, whose runs read their context
        as ``schema`` (``ServedContext``); the images its prompt carries are taken out of the
        server's key-value store ``kv`` first."""
        self.check_workspace(context)
        choice = self.choice(context)
        self.limits(context)
        try:
            engine = await self.engine(choice)
        except ConfigError as exc:  # the run's model: no key for it, an unknown provider
            raise RunRefused(str(exc)) from None
        await self.receive_images(engine, context, kv)
        # The MCP servers' tools as they are now (waiting for those still connecting): the
        # engine builds its graph again when they changed.
        self.notices += await engine.prepare_turn()
        if choice not in self.graphs or self.graphs[choice][0] is not engine.graph:
            served = engine.graph.copy(update={"context_schema": schema})
            self.graphs[choice] = (engine.graph, served)
        return self.graphs[choice][1]

    async def receive_images(
        self, engine: Engine, context: Mapping[str, object] | None, kv: Any
    ) -> None:
        """The images a run's prompt carries (``dcode.server.carried``), out of the server's
        key-value store ``kv`` into the attachment store its graph reads."""
        from dcode.media.errors import MediaError
        from dcode.server.carried import CARRIED_KEY, receive

        ids = (context or {}).get(CARRIED_KEY)
        if not ids or kv is None:
            return
        try:
            await receive(ids, kv, engine.attachments)
        except (ValueError, MediaError) as exc:
            raise RunRefused(f"the prompt's images: {exc}") from None

    def check_workspace(self, context: Mapping[str, object] | None) -> None:
        asked = str((context or {}).get("workspace") or "")
        if asked and Path(asked).resolve() != Path(self.settings.workspace).resolve():
            raise RunRefused(
                f"this server works in {self.settings.workspace}, not in {asked}: "
                "start `dcode serve` in that directory"
            )

    def limits(self, context: Mapping[str, object] | None) -> Limits:
        """A run's budget: the client's (``--max-budget-usd``, ``--max-tokens``, ``/budget``),
        else the server's settings'."""
        usd, tokens = (
            str((context or {}).get(key) or "") for key in ("budget_usd", "budget_tokens")
        )
        try:
            return Limits(
                float(usd) if usd else self.settings.budget_usd,
                int(tokens) if tokens else self.settings.budget_tokens,
            )
        except ValueError as exc:
            raise RunRefused(f"the run's context: {exc}") from None

    def live(self, context: Mapping[str, str]) -> RunContext:
        """The live parts of a run with ``context`` (``ServedContext``'s fields): built in the
        run, where its thread is known. The MCP servers' changes since the last run are said
        first."""
        thread = current_thread_id()
        state = self.threads.setdefault(thread, ThreadState())
        engine = self.engines.get(self.choice(context)) or next(iter(self.engines.values()))
        workspace = Path(self.settings.workspace)
        book = StoredUsage(self.store, thread, workspace, engine.resolved.spec, state.writes)
        emit = emitter(state)
        notices, self.notices = self.notices, []
        for notice in notices:
            emit(Notice(notice))
        return RunContext(
            InterruptApprover(),
            self.policy(engine, state, context.get("mode", "")),
            engine.backend,
            emit=emit,
            hooks=engine.hooks,
            budget=AgentBudget(SessionBudget(self.limits(context), book=book)),
            record=book,
        )

    async def session_usage(
        self, session_id: str, context: Mapping[str, object]
    ) -> dict[str, object]:
        """What the session spent, by model and agent, and the limits a run with ``context``
        is held to (``session_graph``'s ``usage``), once its writes under way are done."""
        state = self.threads.get(session_id)
        if state is not None:
            await state.writes.settled()
        rows = await asyncio.to_thread(self.store.usage, session_id)
        limits = self.limits(context)
        return {
            "rows": [asdict(row) for row in rows],
            "limits": {"usd": limits.usd, "tokens": limits.tokens},
        }

    async def served_model(self, context: Mapping[str, object]) -> dict[str, object]:
        """The model a run with ``context``'s model keys answers with (the server's own where
        it names none), as its engine resolved it: its spec, reasoning effort and window, and
        the workspace its runs work in (``session_graph``'s ``model``)."""
        try:
            resolved = (await self.engine(self.choice(context))).resolved
        except ConfigError as exc:  # the client's model: no key for it, an unknown provider
            raise RunRefused(str(exc)) from None
        profile = resolved.profile
        return {
            "spec": resolved.spec,
            "effort": profile.reasoning_effort or "",
            "max_input_tokens": profile.max_input_tokens,
            "workspace": str(self.settings.workspace),
        }

    async def end_session(self, session_id: str, reason: str) -> list[dict[str, object]]:
        """Fire the session's ``SessionEnd`` hooks (the server's settings', as its runs'); their
        events as JSON (``session_graph``'s ``end``)."""
        engine = await self.engine(self.default_choice())
        events: list[Event] = []
        if engine.hooks is not None:
            payload = {"session_id": session_id, "reason": reason}
            await engine.hooks.fire("SessionEnd", payload, events.append, target=reason)
        return [event.to_json() for event in events]

    def policy(self, engine: Engine, state: ThreadState, asked: str) -> ApprovalPolicy:
        """The run's approval policy: the client's mode (the server's by default), with what
        the session allowed and denied so far."""
        try:
            mode = ApprovalMode(asked) if asked else None
        except ValueError:
            raise RunRefused(f"the run's context: no approval mode {asked!r}") from None
        return ApprovalPolicy(
            mode=mode or self.settings.approve or ApprovalMode.MANUAL,
            backend=engine.backend,
            session_allowed=state.allowed,
            mcp_allow=engine.mcp_allowed,
            fetch_allow=self.settings.fetch_allow,
            fetch_private=self.settings.fetch_private,
            session_tools=state.tools,
            mcp_origin=engine.mcp_origin,
            shell_sandboxed=lambda: engine.sandbox.on,
            rules=engine.rules,
            denials=state.denials,
        )
