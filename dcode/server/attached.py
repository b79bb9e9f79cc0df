"""A session run on a dcode server, for a front end built on the local engine (the TUI).

``AttachedRunner`` is a ``SessionRunner`` whose turns are the remote engine's
(``dcode.server.remote``): the TUI keeps its engine for the rest (its model's profile, its
commands) and draws the server's turns as its own.
"""

# Any: LangChain's messages and the server's JSON are untyped

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from dcode.agent.approval import ApprovalPolicy
from dcode.agent.budget import SessionBudget
from dcode.agent.runner import SessionRunner, TurnEngine
from dcode.media.store import AttachmentStore
from dcode.server.client import RemoteServer
from dcode.server.remote import RemoteRunner
from dcode.settings.config import ApprovalMode

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from dcode.agent.approval import Approver
    from dcode.agent.attached_files import AttachedFile
    from dcode.agent.budget import UsageRow
    from dcode.agent.events import Event


class AttachedRunner(SessionRunner):
    """A ``SessionRunner`` whose turns run on a dcode server, for a front end that keeps its
        local engine for all else (the TUI: its model's profile, its commands): ``run_turn``,
        ``cancel``, ``busy`` and ``messages`` are the server's thread's, and so are its spend
    (``/cost``, ``/budget``) and its ``SessionEnd``. What works on the thread's
        checkpoints in this process (``!cmd`` notes, ``/offload``, ``/rewind``) says it is not
        available rather than act on a thread that is not here. The images a prompt names are
        admitted into this process's attachment store, as for a local session, and the prompt's
        run carries them to the server's."""

    def __init__(
        self,
        engine: TurnEngine,
        server: RemoteServer,
        session_id: str,
        approver: Approver,
        mode: ApprovalMode,
        *,
        context: dict[str, str] | None = None,
        exists: bool = False,
    ) -> None:
        # The client's policy holds its mode (``/mode`` changes it); the server keeps the rest.
        super().__init__(engine, session_id, approver, ApprovalPolicy(mode, engine.backend))
        self.remote = RemoteRunner(
            server,
            session_id,
            approver,
            mode,
            context=context,
            max_input_tokens=engine.resolved.profile.max_input_tokens,
            exists=exists,
            policy=self.policy,
            limits=lambda: self.limits,
            attachments=AttachmentStore(engine.settings.attachments_dir),
        )

    @property
    def busy(self) -> bool:
        return self.remote.busy

    def cancel(self) -> bool:
        return self.remote.cancel()

    async def messages(self) -> list[BaseMessage]:
        return await self.remote.messages()

    def run_turn(
        self,
        content: str | list[dict[str, Any]] | None,
        *,
        prompt_text: str | None = None,
        attached: Sequence[AttachedFile] = (),
    ) -> AsyncGenerator[Event, None]:
        return self.remote.run_turn(content, prompt_text=prompt_text, attached=attached)

    def join_turn(
        self, run_id: str | None, history: Sequence[BaseMessage]
    ) -> AsyncGenerator[Event, None]:
        """The thread's run still going on the server, joined as a turn (``RemoteRunner.join_turn``)."""
        return self.remote.join_turn(run_id, history)

    async def usage(self) -> list[UsageRow]:
        """What the session spent on the server (``RemoteRunner.usage``): this process's
        store has none of it."""
        rows, _ = await self.remote.usage()
        return rows

    async def budget(self) -> SessionBudget:
        """The session's spend on the server against the limits its runs are held to there:
        ``limits`` where this client set them (``/budget``, the command line), else the
        server's."""
        rows, limits = await self.remote.usage()
        return SessionBudget.starting(limits, rows)

    async def end_session(self, reason: str) -> list[Event]:
        """``SessionEnd`` fired on the server, where the session's ``SessionStart`` fired and
        its hooks run (``RemoteRunner.end_session``), never in this process."""
        return await self.remote.end_session(reason)

    def _not_here(self, what: str) -> RuntimeError:
        return RuntimeError(
            f"{what} is not available in a session on the dcode server at {self.remote.server.url}"
        )

    async def add_user_note(self, text: str, marks: dict[str, Any] | None = None) -> None:
        raise self._not_here("keeping a command's output for the model")

    async def compact(self, focus: str = "") -> list[Event]:
        raise self._not_here("compacting")

    async def turns(self) -> list[Any]:
        raise self._not_here("rewinding")
