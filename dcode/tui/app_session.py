"""What runs in the session, a component of ``DcodeApp``: the queue, turns, approvals and ``!cmd``.

A prompt, a shell command or a slash command becomes a ``Pending`` item. It runs at once when
nothing else holds the session, else it waits in the visible queue. A turn consumes the core's
typed events; one ``match`` turns them into transcript and status updates. What it needs of the
App is ``SessionHost``; the slash commands it starts run through the callback it is given.
"""

# Any: Textual's timers take callbacks of any result, and its workers are generic in theirs

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from dcode.agent.events import (
    AsyncTaskStatus,
    BudgetWarning,
    CompactionFinished,
    CompactionRefused,
    CompactionStarted,
    Event,
    ReasoningDelta,
    TextDelta,
    ToolArgsDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnFinished,
    UsageUpdated,
)
from dcode.mcp.names import is_prompt_command
from dcode.tui import commands
from dcode.tui.app_host import AppHost
from dcode.tui.collector import QUIET_DELAY
from dcode.tui.commands import Invocation, UnknownCommand
from dcode.tui.messages import ApprovalNeeded, ApprovalWithdrawn
from dcode.tui.status import read_git_branch
from dcode.tui.transcript import NoticeLevel, ShellEntry
from dcode.tui.transcript.entries import VideoSeen

if TYPE_CHECKING:
    from pathlib import Path

    from textual.timer import Timer
    from textual.worker import Worker

    from dcode.agent.async_tasks.poller import TaskPoller
    from dcode.agent.engine import Engine
    from dcode.agent.runner import SessionRunner
    from dcode.cli.headless_media import ProjectCommand
    from dcode.media.frames import FrameStrip
    from dcode.media.limits import ImageRoute
    from dcode.media.store import AttachmentStore
    from dcode.models.media_support import MediaSupport
    from dcode.prompts.commands import PromptCommand
    from dcode.server.client import RemoteServer
    from dcode.tui.app_served import ServedView
    from dcode.tui.approval_widget import ApprovalWidget
    from dcode.tui.collector import QuietCollector
    from dcode.tui.status import QueuedStrip, StatusBar
    from dcode.tui.transcript import Transcript
    from dcode.tui.turn_content import PreparedTurn
    from dcode.tui.widgets.media_source import MediaSource
    from dcode.tui.widgets.placeholders import Draft

log = logging.getLogger(__name__)

SHELL_TIMEOUT = 300.0
SHELL_OUTPUT_CAP = 30_000
SHELL_REFRESH = 0.1
"""How often a running ``!cmd``'s last lines are shown again (when they changed)."""
STOPPED_EXIT = 128 + 9  # as a command ended by SIGKILL reports it
REFUSED_EXIT = 126  # as a shell reports a command it could not run
TYPING_GRACE = 0.4


class VideoRoute(TypedDict, total=False):
    """How a sampled window's bytes are measured (``sample_videos``' keywords): the model's
    image route and whether it takes images, once the engine is loaded."""

    workspace: Path
    route: ImageRoute
    takes_images: bool


@dataclass(frozen=True, slots=True)
class Pending:
    """Something the user sent that waits its turn: a prompt, a ``!cmd`` or a slash command."""

    text: str
    shell: str | None = None
    invocation: Invocation | None = None
    draft: Draft | None = None
    """The input box as it was (pastes and all), to put back if the item is unqueued."""
    command: ProjectCommand | None = None
    """The project's command the text came from (a ``ProjectCommand``): its mentions stay in
    the project unless the user typed them."""
    goes_on: bool = False
    """Not a prompt: the turn the budget ended, going on once the budget was raised."""
    joined: Callable[[], AsyncGenerator[Event, None]] | None = None
    """Not a prompt: a run already going on the session's server, joined as a turn (its events)."""

    @property
    def typed(self) -> bool:
        """The user sent it (rather than a turn going on, or one joined)."""
        return not self.goes_on and self.joined is None

    @property
    def restorable(self) -> str | Draft:
        return self.draft if self.draft is not None else self.text


class SessionHost(AppHost, Protocol):
    """What the session's work needs of the App, beyond what every component does."""

    collector: QuietCollector
    ready: bool
    last_typed: float
    """When the prompt's text last changed (``time.monotonic``)."""
    follow_branch: bool
    """The status bar's git branch is read again after each turn."""
    remote: RemoteServer | None
    """The dcode server the turns run on (``--server``); None: in this process."""
    served: ServedView | None
    """With ``remote``: the server's model and the session's spend there, shown."""

    @property
    def queued_strip(self) -> QueuedStrip: ...

    def set_timer(
        self,
        delay: float,
        callback: Callable[[], Any] | None = None,
        *,
        name: str | None = None,
        pause: bool = False,
    ) -> Timer: ...

    def workers_in(self, group: str) -> bool: ...

    def cancel_workers(self, group: str) -> list[Worker[Any]]: ...

    def ensure_runner(self) -> SessionRunner: ...

    def retry_setup(self) -> None:
        """While no model can be reached, look again: the user may have fixed it meanwhile."""

    def ring_if_away(self, *, turn_ended: bool = False) -> None: ...


class SessionWork:
    """The queue, turns, approvals and ``!cmd`` of ``DcodeApp`` (which provides the widgets)."""

    def __init__(
        self, host: SessionHost, run_command: Callable[[Invocation], Awaitable[None]]
    ) -> None:
        self.host = host
        self._run_command = run_command
        """Runs a slash command (``app_commands``); awaited, or as a worker when it holds the session."""
        self.queue: deque[Pending] = deque()
        self.media: MediaSource | None = None
        """Pasted and dropped images and videos (``install_media``, once the prompt is mounted)."""
        self._streamed_tokens = 0
        self._turn_output = False
        self.stopped_at_budget: str | None = None
        """The session whose last turn ended at its budget (``/budget`` then goes on with it)."""
        self._stopped_at_approval = (
            False  # the user stopped the turn by answering "stop" to an approval
        )
        self._poller: TaskPoller | None = None
        """Follows the session's async tasks between the model's calls (made with the first)."""

    # What ``_apply`` and the turn draw on, read from the App each time (the widgets are its).
    @property
    def transcript(self) -> Transcript:
        return self.host.transcript

    @property
    def status(self) -> StatusBar:
        return self.host.status

    @property
    def collector(self) -> QuietCollector:
        return self.host.collector

    @property
    def engine(self) -> Engine | None:
        return self.host.engine

    def submit(self, item: Pending) -> None:
        if not item.text.strip():
            return
        if item.shell is None and item.invocation is None:
            try:
                invocation = commands.parse(item.text)
            except UnknownCommand as exc:
                found = self.host.prompt_commands.find(item.text)
                if found is None and is_prompt_command(item.text):
                    self._expand_mcp_prompt(item)
                    return
                if found is None:
                    self.host.call_later(
                        self.transcript.notice,
                        f"unknown command /{exc} — /help lists them",
                        NoticeLevel.WARNING,
                    )
                    return
                # The user's own command: its text is the prompt, sent as if typed.
                item = Pending(
                    found[0].expand(found[1]), draft=item.draft, command=_project_command(*found)
                )
                invocation = None
            if invocation is not None:
                item = replace(item, invocation=invocation)
        if self._runs_now(item):
            self._start(item)
            return
        self.queue.append(item)
        self.show_queue()
        host = self.host
        if item.invocation is not None and host.busy:
            what = "the turn" if host.workers_in("turn") else "what is running"
            host.call_later(
                self.transcript.notice, f"/{item.invocation.command.name} will run when {what} ends"
            )
        if not host.ready:
            host.retry_setup()  # what the user fixed meanwhile counts

    def _expand_mcp_prompt(self, item: Pending) -> None:
        self.host.run_worker(
            partial(self._expand, item),
            name="_expand_mcp_prompt",
            group="mcp-prompt",
            exit_on_error=False,
        )

    async def _expand(self, item: Pending) -> None:
        """``/mcp__server__prompt args``: the server makes the prompt, which is then sent as if
        typed; what went wrong is one line, and the text goes back into the input."""
        from dcode.mcp.prompts import PromptError

        engine = self.engine
        if engine is None:
            await self.transcript.notice(
                "MCP prompts can be used once dcode is ready", NoticeLevel.WARNING
            )
            self.host.prompt_input.insert_text(item.text)
            return
        try:
            expanded = await engine.mcp.expand_prompt(item.text)
        except PromptError as exc:
            await self.transcript.notice(str(exc), NoticeLevel.WARNING)
            self.host.prompt_input.insert_text(item.text)
            return
        self.submit(Pending(expanded, draft=None))

    def run_slash(self, invocation: Invocation) -> None:
        self.submit(
            Pending(f"/{invocation.command.name} {invocation.args}".strip(), invocation=invocation)
        )

    def prefill_prompt(self, text: str) -> None:
        self.host.prompt_input.restore(text)
        self.host.prompt_input.focus()

    def _runs_now(self, item: Pending) -> bool:
        if item.invocation is not None:
            command = item.invocation.command
            if command.busy_safe:
                return True
            if command.needs_engine and not self.host.ready:
                return False
            return not self.host.busy
        if item.shell == "private":
            return True
        return self.host.ready and not self.host.busy

    def show_queue(self) -> None:
        typed = [item.text for item in self.queue if item.typed]
        self.host.queued_strip.show(typed)
        self.status.queued = len(typed)

    def join(self, joined: Callable[[], AsyncGenerator[Event, None]]) -> None:
        """Draw ``joined``'s events (a run going on the server) as a turn, before anything
        queued: its text streams, its questions are dialogs, and Esc cancels it."""
        self.queue.appendleft(Pending("", joined=joined))
        self.pump()

    def go_on(self) -> None:
        """Go on with the turn the budget ended (it was raised), before anything queued."""
        self.stopped_at_budget = None
        self.queue.appendleft(Pending("", goes_on=True))
        self.pump()

    def pump(self) -> None:
        """Start the next queued item if nothing is running."""
        while self.queue and not self.host.busy:
            if not self._runs_now(self.queue[0]):
                break
            item = self.queue.popleft()
            self._start(item)
        self.show_queue()

    def _start(self, item: Pending) -> None:
        host = self.host
        if item.invocation is not None:
            if item.invocation.command.holds_session:
                # A worker: the app keeps drawing and taking keys (which queue) while it runs;
                # the session is released, and the queue pumped, when the command ends.
                host.busy = True
                host.run_worker(self._run_command(item.invocation), group="command")
                return
            host.call_later(self._run_command, item.invocation)
        elif item.shell is not None:
            private = item.shell == "private"
            if not private:
                host.busy = True
            self._run_shell(item.text, private)
        else:
            host.busy = True
            self._run_turn(item)

    # -- turns --------------------------------------------------------------------------

    def install_media(self) -> MediaSource:
        """The MediaTracker: pasted/dropped images and videos, Ctrl+V clipboard images."""
        from dcode.tui.widgets.media_source import MediaSource

        settings = self.host.settings

        def make_store() -> AttachmentStore:
            from dcode.media.store import AttachmentStore

            return AttachmentStore(settings.attachments_dir)

        self.media = MediaSource(
            make_store,
            settings.workspace,
            notify=partial(self.host.notify, markup=False),
            support=self._media_support,
        )
        self.media.install(self.host.prompt_input)
        return self.media

    def _media_support(self) -> MediaSupport:
        """What the model takes, for a line when media it will not see is attached (called in a
        worker): the engine's profile, or before the engine is loaded the same lookup without it."""
        from dcode.models.media_support import MediaSupport

        engine, settings = self.host.engine, self.host.settings
        if engine is not None:
            return MediaSupport(engine.resolved.spec, engine.resolved.profile, settings.user_config)
        from dcode.models.factory import model_profile
        from dcode.models.spec import parse_spec

        spec = parse_spec(settings.model)
        return MediaSupport(spec.text, model_profile(spec, settings), settings.user_config)

    async def _turn_content(self, item: Pending) -> PreparedTurn | None:
        """The HumanMessage content for a prompt: its text, then a reference block per image
        and the first sampled window of each video (sampled in a thread: it decodes), then the
        files its ``@path`` mentions attach. None, with one line and the draft put back, when
        the media cannot be sent."""
        from dcode.tui.turn_content import PreparedTurn, with_mentions
        from dcode.tui.widgets.media_content import (
            MediaRefused,
            content_for,
            media_items,
            sample_videos,
        )

        placeholders = item.draft.placeholders if item.draft is not None else ()
        try:
            videos = {}
            if any(media.kind == "video" for media in media_items(placeholders)):
                self.status.activity = "Sampling video"
                assert self.media is not None
                videos = await asyncio.to_thread(
                    sample_videos, placeholders, self.media.store, **self._video_route()
                )
            content, text = content_for(item.text, placeholders, videos)
            prompt = PreparedTurn(
                content,
                text,
                [VideoSeen(sampled.strip, sampled.sent_bytes) for sampled in videos.values()],
            )
            if self.engine is not None:
                self.status.activity = "Reading files"
                try:
                    prompt = await with_mentions(self.engine, prompt, item.command)
                except Exception as exc:  # noqa: BLE001 - the prompt still goes, as typed
                    prompt = replace(
                        prompt, notes=(f"the files the prompt mentions were not attached: {exc}",)
                    )
        except MediaRefused as exc:
            self.host.notify(exc.message, severity="error", markup=False)
            self.host.prompt_input.restore(item.restorable)
            return None
        finally:
            self.status.activity = ""
        return prompt

    def _video_route(self) -> VideoRoute:
        """How a sampled window's bytes are measured: the model's image route, once known."""
        from dcode.agent.media_route import route_for

        engine, workspace = self.host.engine, self.host.settings.workspace
        if engine is None:
            return {"workspace": workspace}
        profile = engine.resolved.profile
        return {
            "workspace": workspace,
            "route": route_for(profile),
            "takes_images": profile.image_inputs,
        }

    def frames_sent_bytes(self, frames: FrameStrip) -> int | None:
        """What a strip's frames weigh on the model's route (blocking: call it in a thread);
        None while no model is loaded."""
        from dcode.media.frames import bytes_for_route

        options = self._video_route()
        route = options.get("route")
        if route is None:
            return None
        if not options.get("takes_images", True):
            return 0
        assert self.media is not None
        return bytes_for_route(frames.frames, route, self.media.store)

    def _run_turn(self, item: Pending) -> None:
        self.host.run_worker(partial(self._turn, item), name="_run_turn", group="turn")

    async def _turn(self, item: Pending) -> None:
        text = item.text
        host = self.host
        try:
            prepared = await self._turn_content(item) if item.typed else None
        except asyncio.CancelledError:  # interrupted while a video was being sampled
            host.busy = False
            self._after_turn(True, item)
            raise
        if prepared is None and item.typed:
            host.busy = False
            self.pump()
            return
        text = prepared.text if prepared is not None else ""
        self._streamed_tokens = 0
        self._turn_output = False
        self._stopped_at_approval = False
        interrupted = False
        status = self.status
        try:
            runner = host.ensure_runner()
            if prepared is not None:
                await self.transcript.add_user(text, prepared.videos, prepared.files)
                for note in prepared.notes:
                    await self.transcript.notice(note, NoticeLevel.WARNING)
            status.activity = "Working"
            status.start_turn()
            turn = (
                item.joined()
                if item.joined is not None
                else runner.run_turn(
                    prepared.content if prepared is not None else None,
                    prompt_text=text,
                    attached=prepared.attached if prepared is not None else (),
                )
            )
            async with aclosing(turn) as events:
                async for event in events:
                    await self._apply(event)
                    if isinstance(event, TurnFinished):
                        interrupted = event.interrupted
                        self.stopped_at_budget = event.session_id if event.budget_exceeded else None
        except asyncio.CancelledError:
            interrupted = True
            raise
        except Exception as exc:  # noqa: BLE001 - a failed turn is one line, not a crash
            if status.is_attached:
                await self.transcript.notice(f"the turn failed: {exc}", NoticeLevel.ERROR)
        finally:
            if status.is_attached:
                await self._end_turn(item, interrupted=interrupted)  # may start what was queued
            else:  # the app is closing: its widgets are gone
                host.busy = False

    async def _end_turn(self, item: Pending, *, interrupted: bool) -> None:
        """The turn's end on screen: the transcript's last lines, the status bar, the queue."""
        host, status = self.host, self.status
        marked = await self.transcript.finish_turn(interrupted=interrupted)
        if (
            interrupted and not marked and not self._stopped_at_approval
        ):  # else "rejected: stopped" says it
            await self.transcript.notice(self._interrupt_line())
        status.end_turn()
        status.activity = ""
        if host.served is not None:  # a turn interrupted may have spent since it said
            host.served.ask_spend(host.runner)
        host.busy = False
        host.ring_if_away(turn_ended=True)
        host.set_timer(QUIET_DELAY, self._collect_when_idle)
        if host.follow_branch:  # the branch may have changed during the turn
            status.branch = read_git_branch(host.settings.workspace)
        self._after_turn(interrupted, item)  # also when the worker itself was cancelled

    def _interrupt_line(self) -> str:
        """The one line for a turn interrupted before it left a partial answer to keep."""
        if not self._turn_output:
            return "interrupted before any answer: the prompt is back in the input"
        return "interrupted: no partial answer to keep"

    def _collect_when_idle(self) -> None:
        if not self.host.busy:
            self.collector.idle()

    def _after_turn(self, interrupted: bool, sent: Pending) -> None:
        if interrupted:
            # An interrupt means "stop": queued prompts go back to the input rather than run,
            # and so does the prompt itself when nothing came back for it yet.
            waiting = list(self.queue)
            self.queue.clear()
            if not self._turn_output and sent.typed:
                waiting.insert(0, sent)
            for item in reversed(waiting):
                self.host.prompt_input.restore(item.restorable)
            self.show_queue()
            return
        self.pump()

    async def apply(self, event: Event) -> None:
        """One event drawn, as a turn draws it (``/offload``'s compaction events)."""
        await self._apply(event)

    async def _apply(self, event: Event) -> None:
        """One event into the transcript (which routes it by ``agent``: a subagent's events go
        to its task's widget) and into the status bar."""
        agent = event.agent
        match event:
            case TextDelta(text=text):
                self._count(text)
                self._turn_output = True
            case ReasoningDelta(text=text) | ToolArgsDelta(delta=text):
                self._count(text)
            case ToolCallStarted():
                self._turn_output = True
            case ToolCallRunning():
                self.collector.quiet()
            case UsageUpdated():
                self._usage(event)
            case BudgetWarning(level=level):
                self.status.budget = max(self.status.budget, level)
            case CompactionStarted() if not agent:
                self.status.activity = "Compacting"
            case CompactionFinished() | CompactionRefused() if not agent:
                self.status.activity = "Working"
            case AsyncTaskStatus():
                self._follow(event)
        await self.transcript.apply(event)
        if isinstance(event, AsyncTaskStatus):
            self.status.async_tasks = self.transcript.model.running_remote_tasks
        if isinstance(event, ToolCallFinished) and not self.transcript.pending_approvals:
            self.status.activity = "Working"

    # -- async tasks -------------------------------------------------------------------------

    def _follow(self, event: AsyncTaskStatus) -> None:
        """An async task's status from a tool: the session's poller follows the task while it
        runs (one loop for all of them, on the app's event loop), and its news is applied as
        this event was. A session run on a dcode server has its tasks there, out of reach."""
        engine = self.engine
        if engine is None or engine.remote_agents is None or self.host.remote is not None:
            return
        if self._poller is None:
            from dcode.agent.async_tasks.poller import TaskPoller

            self._poller = TaskPoller(engine.remote_agents, self._apply_news)
        self._poller.watch(event)

    async def follow_saved_tasks(self, runner: SessionRunner) -> None:
        """A resumed session: its async tasks as their records last saw them, on their widgets
        and followed while they run. A record that cannot be read costs only that."""
        try:
            saved = await runner.async_tasks()
        except Exception:
            log.debug("reading the session's async tasks failed", exc_info=True)
            return
        for event in saved:
            await self._apply(event)

    async def _apply_news(self, event: AsyncTaskStatus) -> None:
        if self.host.is_running:
            await self._apply(event)

    def forget_async_tasks(self) -> None:
        """The screen has left the session: its tasks are no longer followed."""
        if self._poller is not None:
            self._poller.forget()
        self.status.async_tasks = 0

    async def close_async_tasks(self) -> None:
        poller, self._poller = self._poller, None
        if poller is not None:
            await poller.aclose()

    def _count(self, text: str) -> None:
        self.collector.streaming()  # a very long stream still gets its full collections
        # The session's token counter: the model's BPE once a figure has needed its encoding
        # (a long session, /context), about four characters a token before.
        if self.engine is not None:
            self._streamed_tokens += self.engine.tokens.quick_text(text)
            self.status.streamed_tokens = self._streamed_tokens

    def _usage(self, event: UsageUpdated) -> None:
        if not event.agent:
            # A subagent's window is its own, not the session's (its tokens are its task's, which
            # the transcript counts); its ``session_`` figures already are the session's totals.
            self.status.set_usage(event.context_tokens, event.max_input_tokens, event.estimated)
            self.status.cached_share = (
                event.cached_tokens / event.input_tokens if event.input_tokens else None
            )
        if self.host.served is not None:  # the server's store has priced it already
            self.host.served.ask_spend(self.host.runner)
        elif self.engine is not None:
            self.status.cost = self.engine.resolved.profile.cost(
                event.session_input_tokens, event.session_output_tokens, event.session_cached_tokens
            )

    def interrupt(self) -> bool:
        host, runner = self.host, self.host.runner
        if runner is not None and runner.busy:
            runner.cancel()
            self.status.activity = "Interrupting"
            return True
        if host.busy and host.workers_in("turn"):
            # Sent but not started yet (the turn's worker has not reached the runner): stop
            # it there; nothing has reached the session, and the prompt comes back.
            host.cancel_workers("turn")
            self.status.activity = "Interrupting"
            return True
        if host.workers_in("shell"):
            host.cancel_workers("shell")
            return True
        return False

    # -- approvals ----------------------------------------------------------------------

    async def approval_needed(self, message: ApprovalNeeded) -> None:
        # Someone composing the next message must not answer this with a stray "y" or "n".
        typing = (
            bool(self.host.prompt_input.text.strip())
            and time.monotonic() - self.host.last_typed < TYPING_GRACE
        )
        self.status.activity = "Waiting for approval"
        self.host.ring_if_away()
        await self.transcript.show_approval(
            message.request, message.future, TYPING_GRACE if typing else 0.0
        )

    async def approval_withdrawn(self, message: ApprovalWithdrawn) -> None:
        await self.transcript.withdraw_approval(message.call_id, message.agent)
        self._after_approval(decided=False)

    async def approval_decided(self, message: ApprovalWidget.Decided) -> None:
        decision = message.decision
        request = message.widget.request
        if decision.approved and decision.remember:  # the policy learns it as the call goes on
            from dcode.tui.approval_widget import granted

            tool = granted(request, decision)
            self.host.show_mode(*([] if tool else [request.kind]), also_tool=tool)
        if (
            decision.approved and decision.mode is not None
        ):  # a plan approved: the core switched already
            self.host.set_mode(decision.mode)
        feedback = decision.feedback if not message.stop_turn else "stopped"
        await self.transcript.resolve_approval(
            message.call_id, decision.approved, feedback, request.agent
        )
        if message.stop_turn:
            self._stopped_at_approval = True
            self.host.prompt_input.focus()
            self.interrupt()
            return
        self._after_approval(decided=True)

    def _after_approval(self, *, decided: bool) -> None:
        """An approval is settled: the next one still open (parallel subagents may ask at
        once) takes the keys; once none is, the prompt does again."""
        from dcode.tui.approval_widget import ApprovalWidget, open_approvals

        waiting = open_approvals(self.host.screen)
        if waiting:
            focused = self.host.screen.focused
            if not (isinstance(focused, ApprovalWidget) and not focused.decided):
                waiting[0].focus()
                waiting[0].scroll_visible(animate=False)
            self.status.activity = "Waiting for approval"
        elif decided:
            self.status.activity = "Working"
            self.host.prompt_input.focus()

    def reject_pending(self) -> bool:
        pending = self.transcript.pending_approvals
        if not pending:
            return False
        from dcode.agent.approval import ApprovalDecision

        for call in pending:
            assert call.approval is not None
            if not call.approval.future.done():
                call.approval.future.set_result(
                    ApprovalDecision(False, "the user stopped the turn")
                )
            self.host.call_later(
                self.transcript.resolve_approval,
                call.call_id,
                False,
                "stopped",
                call.approval.request.agent,
            )
        self._stopped_at_approval = True
        self.interrupt()
        self.host.prompt_input.focus()
        return True

    # -- shell --------------------------------------------------------------------------

    def _run_shell(self, command: str, private: bool) -> None:
        self.host.run_worker(
            partial(self._shell, command, private), name="_run_shell", group="shell"
        )

    async def _shell(self, command: str, private: bool) -> None:
        """Run a ``!cmd`` as the model's commands run (no terminal, stdin closed, its whole
        process tree ended by Esc, in the sandbox when it is on), its last lines shown while it
        runs."""
        from dcode.agent.backends.capture import HeadTailBuffer, OutputTail
        from dcode.agent.backends.shell import run_shell
        from dcode.sandbox.confine import SandboxUnavailable

        entry = ShellEntry(command=command, private=private)
        await self.transcript.add_shell(entry)
        shell = os.environ.get("SHELL") or "/bin/sh"
        tail, kept = OutputTail(), HeadTailBuffer(SHELL_OUTPUT_CAP)

        def take(text: str) -> None:
            tail.add(text)
            kept.add(text)

        def show() -> None:
            if tail.text() != entry.tail:
                entry.tail = tail.text()
                self.transcript.refresh_entry(entry)

        host = self.host
        timer = host.set_interval(SHELL_REFRESH, show)
        try:
            argv = await host.sandbox.wrap_async(
                [shell, "-c", command], cwd=host.settings.workspace
            )
            result = await run_shell(
                argv,
                cwd=host.settings.workspace,
                timeout=SHELL_TIMEOUT,
                max_chars=SHELL_OUTPUT_CAP,
                on_output=take,
            )
            stopped = f"\n(stopped after {SHELL_TIMEOUT:g} s)" if result.timed_out else ""
            entry.output, entry.exit_code = result.output + stopped, result.exit_code
        except asyncio.CancelledError:  # Esc: the command's tree has been ended
            entry.output, entry.exit_code = (
                f"{kept.text().rstrip()}\n(stopped)".lstrip("\n"),
                STOPPED_EXIT,
            )
        except OSError as exc:
            entry.output, entry.exit_code = str(exc), 127
        except SandboxUnavailable as exc:
            entry.output, entry.exit_code = (
                f"refused, the sandbox cannot start: {exc}",
                REFUSED_EXIT,
            )
        finally:
            timer.stop()
        entry.running = False
        self.transcript.refresh_entry(entry)
        try:
            if not private and host.engine is not None:
                from dcode.agent.shell_note import shell_note

                await host.ensure_runner().add_user_note(
                    *shell_note(command, entry.exit_code, entry.output)
                )
        finally:
            if not private:
                host.busy = False
                self.pump()


def _project_command(command: PromptCommand, arguments: str) -> ProjectCommand | None:
    """A project's command, for what its prompt may attach; None for the user's own."""
    from dcode.cli.headless_media import ProjectCommand

    return ProjectCommand(command.name, arguments) if command.scope == "project" else None
