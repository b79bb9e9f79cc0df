"""The engine: one process-wide holder of the model, backend, checkpointer and graph.

Opening it is the heavy step (langchain, langgraph, openai, the store's driver), so the TUI does it in a
worker after the first paint and ``dcode --help`` never does it at all.

The engine also holds the sessions it runs (``SessionStore.hold``): a runner is only handed out for
a session this process holds, and closing the engine lets them all go.
"""

# Any: LangGraph's compiled graphs and LangChain's chat models are untyped generics here

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END

from dcode.agent.approval import ApprovalPolicy, Approver, ToolOrigin
from dcode.agent.backends.environment import ShellEnvironment
from dcode.agent.backends.local import LocalBackend
from dcode.agent.budget import Tariff
from dcode.agent.compaction.summary import Compactor
from dcode.agent.graph import build_graph, static_request
from dcode.agent.hooks.runner import Hooks
from dcode.agent.large_results import RESULTS_DIR
from dcode.agent.media_route import route_for
from dcode.agent.middleware.mcp_status import mcp_section
from dcode.agent.middleware.memory import memory_sources, read_memory
from dcode.agent.middleware.skills import skill_sources
from dcode.agent.permissions.load import session_rules
from dcode.agent.prompt import SYSTEM_PROMPT, with_added_dirs
from dcode.agent.run_context import current_thread_id
from dcode.agent.runner import SessionRunner
from dcode.agent.session_files import HISTORY_DIR
from dcode.agent.store import open_store
from dcode.agent.store.base import SessionHold, SessionInfo, SessionStore, new_session_id
from dcode.agent.subagents.definitions import AgentDefinition, catalog_for
from dcode.agent.subagents.runs import Subagents
from dcode.agent.subagents.task_tool import make_task_tool
from dcode.agent.tools.spec import ALL_SPECS
from dcode.context.accounting import ContextReport, Spend, build_report
from dcode.context.tokens.counter import TokenCounter
from dcode.context.tokens.images import image_pricer
from dcode.mcp.config import ServerConfig
from dcode.mcp.manager import McpManager, McpTurn
from dcode.media.store import AttachmentStore
from dcode.media.uploads.index import Scope, UploadIndex
from dcode.media.variants import VariantService
from dcode.models.factory import ResolvedModel, build_chat_model, model_http_client, resolve_model
from dcode.sandbox.confine import Sandbox
from dcode.settings.config import ApprovalMode, ReasoningEffort, Settings
from dcode.settings.private_files import ensure_private_dir
from dcode.settings.project_files import PromptSource, real_path

if TYPE_CHECKING:
    # Imported where used: the async task tools only with [[async_agents]], the Files API
    # (and openai with it) only on a route that uploads images.
    from dcode.agent.async_tasks.remote import RemoteAgents
    from dcode.media.uploads.resolver import UploadResolver


def _remote_agents(settings: Settings) -> RemoteAgents | None:
    """The servers the async task tools reach, when the user's config lists one; their client
    (langgraph-sdk's) is imported only then."""
    if not settings.async_agents:
        return None
    from dcode.agent.async_tasks.remote import RemoteAgents

    return RemoteAgents(settings.async_agents)


class Engine:
    def __init__(
        self,
        settings: Settings,
        resolved: ResolvedModel,
        store: SessionStore,
        checkpointer: BaseCheckpointSaver,
        *,
        turn_hooks: bool = False,
    ) -> None:
        """``turn_hooks``: the session's graph fires ``UserPromptSubmit`` and ``Stop`` itself
        (a server's engine, whose runs no ``SessionRunner`` wraps)."""
        self.settings = settings
        self.turn_hooks = turn_hooks
        self.resolved = resolved
        self.sandbox = Sandbox(
            settings.sandbox, Path(settings.workspace), settings.home, settings.add_dirs
        )
        self.backend = LocalBackend(
            settings.workspace,
            environment=ShellEnvironment.for_settings(settings),
            sandbox=self.sandbox,
            add_dirs=settings.add_dirs,
        )
        self.hooks = Hooks(
            settings.hooks,
            workspace=Path(settings.workspace),
            environment=ShellEnvironment.for_settings(settings),
            sandbox=lambda: self.sandbox,
        )
        self.store = store
        self._closed = False
        self._held: dict[str, SessionHold] = {}
        self.attachments = AttachmentStore(settings.attachments_dir)
        self.variants = VariantService(self.attachments)
        self.upload_index = UploadIndex(settings.home)
        self._uploads: dict[Scope, UploadResolver] = {}
        self.checkpointer = checkpointer  # remembering: a turn reads its thread once
        # The engine's own connection pool, with the settings' limits, closed with it.
        self._http = model_http_client(settings)
        self.model = build_chat_model(resolved, settings, self._http)
        self.agents = catalog_for(settings)  # the user's and the project's agents, as they are now
        self.rules, self.rule_problems = session_rules(settings)
        self.mcp = McpManager(
            settings.mcp,
            home=settings.home,
            workspace=Path(settings.workspace),
            store=self.attachments,
            reserved=ALL_SPECS,
            sandbox=self.sandbox,
            roots=(Path(settings.workspace), *settings.add_dirs),
        )
        self._mcp_turn: McpTurn | None = None
        # The servers the async task tools reach: the session's own agent gets those tools
        # when the user's config lists one.
        self.remote_agents = _remote_agents(settings)
        self.graph = self._build()

    def use_sandbox(self, sandbox: Sandbox) -> None:
        """Share ``sandbox`` with a screen that changes it (``/sandbox``) and runs ``!cmd`` in it."""
        self.sandbox = self.backend.sandbox = self.mcp.sandbox = sandbox

    @classmethod
    async def open(cls, settings: Settings, resolved: ResolvedModel | None = None) -> Engine:
        resolved = resolved or resolve_model(settings)
        ensure_private_dir(settings.home)
        store = open_store(settings)
        checkpointer = await store.open_checkpointer()
        try:
            async with store.errors():
                return cls(settings, resolved, store, checkpointer)
        except BaseException:
            await store.aclose()
            raise

    async def close(self) -> None:
        """Close the session store and the transform pool, then let the held sessions go
        (after the last checkpoint write), then stop the MCP servers; closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.store.aclose()
        finally:
            for session_id in list(self._held):
                self.release(session_id)
            self.variants.close()
            await self._http.aclose()
            if self.remote_agents is not None:
                await self.remote_agents.aclose()
            # Last: a server slow to end must not keep the database open (the TUI bounds the
            # whole close); a stdio server left running dies with the process (child.py).
            await self.mcp.close()

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _build(self) -> Any:
        # One token counter for the model: the compaction tiers, /context and the status bar
        # count with it. Its encoding loads, in a thread, only when a count needs it: a request
        # near a trigger, or /context.
        self.tokens = TokenCounter(
            self.resolved.endpoint.spec.model,
            images=image_pricer(route_for(self.resolved.profile)),
            thread=lambda: current_thread_id("session"),
        )

        self.compactor = Compactor(
            self.model,
            self.resolved.profile.max_input_tokens,
            self.settings.home / HISTORY_DIR,
            self.settings.triggers,
            self.tokens,
            self.attachments,
            tariff=Tariff(self.resolved.spec, self.resolved.profile),
        )
        self.subagents = Subagents(
            self.agents,
            self._agent_graph,
            concurrency=self.settings.task_concurrency,
            max_depth=self.settings.task_depth,
            max_input_tokens=self.resolved.profile.max_input_tokens,
            max_turns=self.settings.max_turns,
            base_url=self.resolved.endpoint.base_url,
        )
        self._agent_graphs: dict[tuple[Any, ...], Any] = {}
        self.task_tool = make_task_tool(self.subagents)
        return self._graph(
            self.model, self.resolved, self.compactor, task_tool=self.task_tool, mcp=self._mcp_turn
        )

    def start_mcp(self, servers: Iterable[ServerConfig]) -> None:
        """Connect these MCP servers in the background; their tools join from the turn they are ready."""
        if self.settings.mcp.enabled:
            self.mcp.add(servers)

    def mcp_origin(self, name: str) -> ToolOrigin | None:
        """The server and tool that the MCP tool the model calls ``name`` is, in the graph's tools."""
        pair = self._mcp_turn.origins.get(name) if self._mcp_turn is not None else None
        return ToolOrigin(*pair) if pair else None

    def mcp_allowed(self, name: str) -> bool:
        """Whether the MCP tool the model calls ``name`` runs without asking (``[mcp] allow``),
        asked of the tools the graph was built with."""
        return self._mcp_turn is not None and name in self._mcp_turn.allowed

    async def prepare_turn(self) -> list[str]:
        """Before a turn: wait for MCP servers still connecting (each up to its timeout), and
        build the graph again when the tools or the servers' states changed since the last
        turn; returns the notices to show (a server ready or failed since)."""
        if not self.mcp.links:
            return []
        turn = await self.mcp.for_turn()
        if self._mcp_turn is None or turn.key != self._mcp_turn.key:
            # In a thread: building reads the skills' and memory's files, and a served run's
            # event loop must not block.
            graph = await asyncio.to_thread(
                self._graph,
                self.model,
                self.resolved,
                self.compactor,
                task_tool=self.task_tool,
                mcp=turn,
            )
            self._mcp_turn, self.graph = turn, graph
        return list(turn.notices)

    def _graph(
        self,
        model: Any,
        resolved: ResolvedModel,
        compactor: Compactor,
        *,
        task_tool: Any = None,
        definition: AgentDefinition | None = None,
        mcp: McpTurn | None = None,
    ) -> Any:
        return build_graph(
            model,
            self.backend,
            checkpointer=self.checkpointer,
            profile=resolved.profile,
            store=self.attachments,
            variants=self.variants,
            max_turns=self.settings.max_turns,
            memory=self._memory_sources(),
            skills=skill_sources(self.settings.home, Path(self.settings.workspace)),
            large_results=self.settings.home / RESULTS_DIR,
            compactor=compactor,
            prompt_cache_key=resolved.prompt_cache_key,
            system_prompt=with_added_dirs(
                (definition.system_prompt if definition else "") or SYSTEM_PROMPT,
                self.settings.add_dirs,
            ),
            task_tool=task_tool,
            allowed_tools=definition.tools if definition else None,
            mcp=mcp,
            uploads=self._uploads_for(resolved),
            presents_plans=definition is None,
            remote_agents=self.remote_agents if definition is None else None,
            tariff=Tariff(resolved.spec, resolved.profile),
            turn_hooks=self.turn_hooks and definition is None,
        )

    def _uploads_for(self, resolved: ResolvedModel) -> UploadResolver | None:
        """Where ``resolved``'s request images are uploaded, when its route uses the Files
        transport: one resolver per endpoint and key, so that the session's agent and its
        subagents share their uploads."""
        if resolved.image_transport != "files" or not resolved.profile.image_inputs:
            return None
        endpoint = resolved.endpoint
        scope = Scope.of(endpoint.base_url, endpoint.api_key)
        if scope not in self._uploads:
            from dcode.media.uploads.resolver import UploadResolver
            from dcode.models.files_api import OpenAIFiles

            remote = OpenAIFiles.for_endpoint(endpoint, self.settings, self._http)
            self._uploads[scope] = UploadResolver(remote, self.upload_index, scope)
        return self._uploads[scope]

    def _agent_graph(self, definition: AgentDefinition, nested: bool) -> Any:
        """The graph a subagent runs (built once per agent and set of MCP tools): its own
        instructions, tools and model, with the ``task`` tool only where it may start subagents
        of its own, and the MCP tools of the session's turn (those its ``tools`` names, if any)."""
        mcp = self._mcp_turn
        key = (definition.name, nested, mcp.key if mcp else None)
        if key not in self._agent_graphs:
            model, resolved, compactor = self.model, self.resolved, self.compactor
            if definition.model and definition.model != "inherit":
                resolved = resolve_model(
                    replace(self.settings, model=definition.model, base_url=None)
                )
                if (
                    resolved.endpoint.spec.provider == self.resolved.endpoint.spec.provider
                    and self.settings.base_url
                ):
                    # The same provider as the session's: through the same endpoint (your proxy, say).
                    resolved = resolve_model(replace(self.settings, model=definition.model))
                model = build_chat_model(resolved, self.settings, self._http)
                counter = TokenCounter(
                    resolved.endpoint.spec.model,
                    images=image_pricer(route_for(resolved.profile)),
                    thread=lambda: current_thread_id("session"),
                )
                compactor = Compactor(
                    model,
                    resolved.profile.max_input_tokens,
                    self.settings.home / HISTORY_DIR,
                    self.settings.triggers,
                    counter,
                    self.attachments,
                    tariff=Tariff(resolved.spec, resolved.profile),
                )
            self._agent_graphs[key] = self._graph(
                model,
                resolved,
                compactor,
                task_tool=self.task_tool if nested else None,
                definition=definition,
                mcp=mcp,
            )
        return self._agent_graphs[key]

    async def context_report(self, session_id: str | None) -> ContextReport:
        """Where the next request's tokens go in a session (``/context``); None: a new one."""
        await self.tokens.load()  # a first count loads the encoding: not on the loop
        values: dict[str, Any] = {}
        profile = self.resolved.profile
        spend = None
        if session_id is not None:
            snapshot = await self.graph.aget_state({"configurable": {"thread_id": session_id}})
            values = dict(snapshot.values or {}) if snapshot else {}
            info = await asyncio.to_thread(self.store.get, session_id)
            if info is not None:
                subagents = (
                    info.subagent_input_tokens,
                    info.subagent_output_tokens,
                    info.subagent_cached_tokens,
                )
                spend = Spend.of(
                    info.input_tokens, info.output_tokens, info.cached_tokens, profile, subagents
                )
        if "memory" not in values:  # a new session: the files its first turn will read
            values["memory"], _ = await asyncio.to_thread(read_memory, self._memory_sources())
        instructions, tools = static_request(
            self.backend,
            self.compactor,
            self.task_tool,
            system_prompt=with_added_dirs(SYSTEM_PROMPT, self.settings.add_dirs),
            remote_agents=self.remote_agents,
        )
        return await asyncio.to_thread(
            build_report,
            values=values,
            instructions=instructions,
            tools=tools,
            window=profile.max_input_tokens,
            counter=self.tokens,
            thread=session_id or "",
            trigger=self.compactor.trigger_tokens,
            spend=spend,
            mcp_tools=self._mcp_turn.by_server() if self._mcp_turn else None,
            mcp_prompt=mcp_section(self._mcp_turn.servers) if self._mcp_turn else "",
            workspace=real_path(Path(self.settings.workspace)),
        )

    def _memory_sources(self) -> list[PromptSource]:
        return memory_sources(self.settings.home, Path(self.settings.workspace))

    def switch_model(self, spec: str) -> ResolvedModel:
        """Point later turns at another model; the thread and its history stay as they are."""
        return self._use(
            replace(
                self.settings,
                model=spec,
                base_url=None if spec != self.settings.model else self.settings.base_url,
            )
        )

    def set_effort(self, effort: ReasoningEffort | None) -> ResolvedModel:
        """Ask later turns' model for this reasoning effort (None: the model's profile's)."""
        return self._use(replace(self.settings, effort=effort))

    def _use(self, settings: Settings) -> ResolvedModel:
        resolved = resolve_model(settings)
        self.settings, self.resolved = settings, resolved
        self.model = build_chat_model(resolved, settings, self._http)
        self.graph = self._build()
        return resolved

    def hold(self, session_id: str) -> None:
        """Take ``session_id`` for this process; ``SessionHeld`` says which process has it
        instead. Holding a session again is a no-op."""
        if session_id not in self._held:
            self._held[session_id] = self.store.hold(session_id)

    def confirm_held(self, session_id: str) -> None:
        """Before a turn writes to ``session_id``: make sure this process still holds it (a
        hold can be lost under a running process); ``SessionHeld`` if another has it now."""
        hold = self._held.get(session_id)
        if hold is not None:
            hold.confirm()

    def release(self, session_id: str) -> None:
        """Let another process have ``session_id``; releasing one not held is a no-op."""
        lock = self._held.pop(session_id, None)
        if lock is not None:
            lock.release()

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    def runner(
        self,
        approver: Approver,
        *,
        session_id: str | None = None,
        mode: ApprovalMode = ApprovalMode.EDITS,
    ) -> SessionRunner:
        """A runner for ``session_id`` (a new session without one), which this process then
        holds until ``release`` or ``close``; ``SessionHeld`` if another process has it."""
        sid = session_id or new_session_id()
        held_before = sid in self._held
        self.hold(sid)
        try:
            if self.store.get(sid) is None:
                self.store.create(sid, self.settings.workspace, self.resolved.spec)
        except BaseException:
            if not held_before:
                self.release(sid)
            raise
        policy = ApprovalPolicy(
            mode=mode,
            backend=self.backend,
            mcp_allow=self.mcp_allowed,
            mcp_origin=self.mcp_origin,
            fetch_allow=self.settings.fetch_allow,
            fetch_private=self.settings.fetch_private,
            shell_sandboxed=lambda: self.sandbox.on,
            rules=self.rules,
        )
        return SessionRunner(self, sid, approver, policy, hooks=self.hooks)

    async def fork(self, source_id: str) -> SessionInfo:
        """A new session holding a copy of ``source_id``'s history and private state, for
        continuing a session another process holds. Only the source's latest checkpoint is
        read (through the graph's public state API); the source itself is not touched."""
        source = self.store.get(source_id)
        if source is None:
            raise ValueError(f"no session {source_id!r}")
        sid = new_session_id()
        async with self.store.errors():
            snapshot = await self.graph.aget_state({"configurable": {"thread_id": source.id}})
            values = dict(snapshot.values or {}) if snapshot else {}
            target = {"configurable": {"thread_id": sid}}
            if values:
                await self.graph.aupdate_state(target, values, as_node="model")
                await self.graph.aupdate_state(target, None, as_node=END)  # nothing left to run
        return self.store.fork(source, sid, message_count=len(values.get("messages", [])))
