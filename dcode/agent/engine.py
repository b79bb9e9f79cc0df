"""The engine: one process-wide holder of the model, backend, checkpointer and graph.

Opening it is the heavy step (langchain, langgraph, openai, aiosqlite), so the TUI does it in a
worker after the first paint and ``dcode --help`` never does it at all.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import aiosqlite
import openai
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from dcode.agent.approval import ApprovalPolicy, Approver
from dcode.agent.backends.environment import ShellEnvironment
from dcode.agent.backends.local import LocalBackend
from dcode.agent.graph import build_graph, static_request
from dcode.agent.media_route import route_for
from dcode.agent.middleware.memory import memory_sources
from dcode.agent.middleware.overflow_clip import RESULTS_DIR
from dcode.agent.middleware.skills import skill_sources
from dcode.agent.middleware.summarization import HISTORY_DIR, Compactor
from dcode.agent.runner import SessionRunner
from dcode.agent.sessions import SessionStore, new_session_id
from dcode.config import ApprovalMode, Settings
from dcode.context.accounting import ContextReport, build_report
from dcode.media.store import AttachmentStore
from dcode.media.variants import VariantService
from dcode.models.factory import ResolvedModel, build_chat_model, resolve_model
from dcode.models.presets import provider_variables
from dcode.private_files import ensure_private_dir, ensure_private_file


class Engine:
    def __init__(self, settings: Settings, resolved: ResolvedModel, conn: aiosqlite.Connection) -> None:
        self.settings = settings
        self.resolved = resolved
        environment = ShellEnvironment.of(provider_variables(settings.providers), settings.pass_env)
        self.backend = LocalBackend(settings.workspace, environment=environment)
        self.sessions = SessionStore(settings.sessions_db)
        self._conn = conn
        self._closed = False
        self.attachments = AttachmentStore(settings.attachments_dir)
        self.variants = VariantService(self.attachments)
        self.checkpointer = AsyncSqliteSaver(conn)
        # The engine's own connection pool, closed with it (see build_chat_model).
        self._http = openai.DefaultAsyncHttpxClient()
        self.model = build_chat_model(resolved, settings, self._http)
        self.graph = self._build()

    @classmethod
    async def open(cls, settings: Settings, resolved: ResolvedModel | None = None) -> Engine:
        resolved = resolved or resolve_model(settings)
        ensure_private_dir(settings.home)
        ensure_private_file(settings.sessions_db)  # SQLite gives its -wal and -shm files this mode
        conn = await aiosqlite.connect(str(settings.sessions_db), timeout=10)
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            engine = cls(settings, resolved, conn)
            await engine.checkpointer.setup()
        except BaseException:
            # The connection's worker thread is not a daemon: left running, it would keep the
            # process alive after everything else has ended.
            conn.stop()
            raise
        return engine

    async def close(self) -> None:
        """Close the session database and the transform pool; closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._conn.close()
        finally:
            self.variants.close()
            await self._http.aclose()

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _build(self) -> Any:
        self.compactor = Compactor(self.model, self.resolved.profile.max_input_tokens, self.settings.home / HISTORY_DIR)
        return build_graph(
            self.model,
            self.backend,
            checkpointer=self.checkpointer,
            profile=self.resolved.profile,
            store=self.attachments,
            variants=self.variants,
            max_turns=self.settings.max_turns,
            memory=memory_sources(self.settings.home, Path(self.settings.workspace)),
            skills=skill_sources(self.settings.home, Path(self.settings.workspace)),
            large_results=self.settings.home / RESULTS_DIR,
            compactor=self.compactor,
        )

    async def context_report(self, session_id: str | None) -> ContextReport:
        """Where the next request's tokens go in a session (``/context``); None: a new one."""
        values: dict[str, Any] = {}
        if session_id is not None:
            snapshot = await self.graph.aget_state({"configurable": {"thread_id": session_id}})
            values = dict(snapshot.values or {}) if snapshot else {}
        instructions, tools = static_request(self.backend, self.compactor)
        profile = self.resolved.profile
        return build_report(values=values, instructions=instructions, tools=tools, window=profile.max_input_tokens, route=route_for(profile))

    def switch_model(self, spec: str) -> ResolvedModel:
        """Point later turns at another model; the thread and its history stay as they are."""
        settings = replace(self.settings, model=spec, base_url=None if spec != self.settings.model else self.settings.base_url)
        resolved = resolve_model(settings)
        self.settings, self.resolved = settings, resolved
        self.model = build_chat_model(resolved, settings, self._http)
        self.graph = self._build()
        return resolved

    def runner(
        self,
        approver: Approver,
        *,
        session_id: str | None = None,
        mode: ApprovalMode = ApprovalMode.EDITS,
    ) -> SessionRunner:
        sid = session_id or new_session_id()
        if self.sessions.get(sid) is None:
            self.sessions.create(sid, self.settings.workspace, self.resolved.spec)
        policy = ApprovalPolicy(mode=mode, backend=self.backend)
        return SessionRunner(self, sid, approver, policy)
