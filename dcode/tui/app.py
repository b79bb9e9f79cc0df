"""The dcode app: transcript, input and status bar around one session runner.

The first frame paints before anything heavy is imported; the engine (langchain, langgraph,
the SQLite checkpointer) opens in a worker afterwards. Until it is ready, and while a turn runs,
prompts and most commands wait in a visible queue. One ``match`` turns the core's events into
transcript and status updates; widgets talk back only through messages.

Start-up, in order: the first frame paints; the trust question comes first when the project
asks for anything that waits for it: settings, agents' models, MCP servers (``app_trust``);
then the first-run screen (``app_setup``) when no model can be reached, else the engine opens
in a worker, with a resumed session's transcript painted from its checkpoint meanwhile; once the engine is open, the resumed session is taken (held by
another dcode: the user forks it or leaves) and the app is ready, running what was queued.

This module holds the layout, that start-up, which session the app holds, and the keys. The
components it owns do the rest, each typed against what it needs of the App (``app_host``),
never against the App: what runs in the session (queue, turns, approvals, ``!cmd``) is
``app_session``, the slash commands' actions ``app_commands``, the trust question ``app_trust``,
the MCP servers' start ``app_mcp`` and the first-run screen ``app_setup``.
"""

# Any: Textual's workers are generic in their result, and the App's hold results of every kind

from __future__ import annotations

import asyncio
import gc
import importlib
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.theme import Theme
from textual.widgets import TextArea
from textual.worker import Worker

from dcode.agent.events import ApprovalKind, Event, Notice
from dcode.agent.store.base import SessionDatabaseError, SessionHeld
from dcode.processes.exit_signals import ExitSignals
from dcode.prompts.commands import PromptCommands
from dcode.sandbox.confine import Sandbox
from dcode.settings.config import (
    ApprovalMode,
    ConfigError,
    Settings,
    load_settings,
    save_preference,
)
from dcode.terminal_text import safe_text
from dcode.tui import commands
from dcode.tui.app_commands import SlashCommands
from dcode.tui.app_mcp import McpStartup
from dcode.tui.app_served import ServedView
from dcode.tui.app_session import Pending, SessionWork
from dcode.tui.app_setup import ModelSetup
from dcode.tui.app_trust import ProjectTrust
from dcode.tui.collector import QuietCollector
from dcode.tui.commands import Invocation, SlashCommandProvider
from dcode.tui.graphics import Graphics
from dcode.tui.messages import ApprovalNeeded, ApprovalWithdrawn, EngineFailed, EngineReady
from dcode.tui.status import QueuedStrip, StatusBar, display_path, read_git_branch
from dcode.tui.toasts import ToastPlacement
from dcode.tui.transcript import NoticeLevel, Transcript
from dcode.tui.transcript.blocks import NoticeMessage
from dcode.tui.transcript.view import ANSWER_MODULE
from dcode.tui.tui_approver import TuiApprover
from dcode.tui.widgets.prompt_input import PromptInput
from dcode.tui.widgets.welcome import Welcome

if TYPE_CHECKING:
    from dcode.agent.engine import Engine
    from dcode.agent.runner import SessionRunner
    from dcode.media.frames import FrameStrip
    from dcode.server.client import RemoteServer
    from dcode.tui.approval_widget import ApprovalWidget
    from dcode.tui.widgets.media_source import MediaSource

CTRL_C_WINDOW = 2.0
QUIT_WIND_UP_S = 3.0  # quitting mid-turn: how long the cancelled turn may take to end
AUTO = object()


class DcodeApp(App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "dcode"
    COMMANDS = App.COMMANDS | {SlashCommandProvider}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "escape", "Interrupt", show=False),
        Binding("ctrl+c", "ctrl_c", "Copy / interrupt / quit", show=False),
        Binding("ctrl+d", "quit", "Quit", show=False, priority=True),
        Binding("shift+tab", "cycle_mode", "Approval mode", show=False, priority=True),
        Binding("ctrl+o", "toggle_output", "Tool output", show=False, priority=True),
        # Ctrl+X too, as the prompt passes it on when no text is selected to cut.
        Binding("ctrl+g,ctrl+x", "external_editor", "Edit the prompt in $EDITOR", show=False),
    ]

    busy = var(
        False
    )  # no class on the App: restyling the whole DOM at each turn's end stalls a frame
    ready = var(False, toggle_class="-ready")
    starting = var(
        False
    )  # the engine is loading (not failed, not waiting for the first-run screen)
    no_model = var(False)  # no model can be reached: the first-run screen says why

    def __init__(
        self,
        settings: Settings,
        *,
        prompt: str | None = None,
        session_id: str | None = None,
        setup_problem: str | None = None,
        reload_settings: Callable[[], Settings] | None = None,
        clock: Callable[[], float] = time.monotonic,
        animate: bool = True,
        cwd_label: str | None = None,
        branch: str | object | None = AUTO,
        window: int | None = None,
        graphics: Graphics = Graphics.NONE,
        remote: RemoteServer | None = None,
        served_context: Mapping[str, str] | None = None,
    ) -> None:
        """``served_context``: with ``remote``, the model flags given on the command line,
        which the runs on the server ask for (the server's own model otherwise)."""
        super().__init__()
        self.settings = settings
        self.remote = remote
        """The dcode server the sessions' turns run on (``--server``); None: in this process."""
        self.served = ServedView(self, remote, served_context or {}) if remote else None
        """The server's model and the session's spend there, shown (with ``remote``)."""
        self.graphics = graphics
        """How the terminal shows pictures (video frames), asked before the app started."""
        self.mode = settings.approve or ApprovalMode.MANUAL
        self.sandbox = Sandbox(
            settings.sandbox, Path(settings.workspace), settings.home, settings.add_dirs
        )
        """The shell's sandbox, the model's commands' and ``!cmd``'s alike (``/sandbox``)."""
        self.engine: Engine | None = None
        self._unclaimed_engine: Engine | None = None  # opened, EngineReady not yet handled
        self.runner: SessionRunner | None = None
        self._next_start = "startup"  # SessionStart's source for the next runner (``clear``)
        self.prompt_commands = PromptCommands()  # the user's own slash commands, once read
        self.approver = TuiApprover(self)
        self.collector = QuietCollector()
        self._initial_prompt = prompt
        self._session_id = session_id
        self.last_session_id = session_id
        """The session this app used last (one in the database), for the line printed on exit."""
        self._paint_on_ready = session_id is not None
        self._painted_checkpoint: tuple[str, str, int] | None = (
            None  # session, checkpoint, messages painted early
        )
        # How to resolve the settings again (after the first-run screen, or once the project is
        # trusted): launch_tui's keeps the command line's flags; by default, the files and the
        # environment alone.
        self._reload_settings = reload_settings or partial(
            load_settings, workspace=settings.workspace, default_approve=ApprovalMode.MANUAL
        )
        self._clock = clock
        self._animated = animate
        self._cwd_label = cwd_label if cwd_label is not None else display_path(settings.workspace)
        self._branch = branch
        self.follow_branch = branch is AUTO
        self._window = window
        self.last_typed = -10.0
        self._ctrl_c_at = -10.0
        # SIGTERM/SIGINT/SIGHUP quit as Ctrl+D does (the terminal is restored); launch_tui
        # turns the signal into the exit code.
        self.exit_signals = ExitSignals(self._on_exit_signal)
        # The components: each is handed the App as the protocol of what it needs (``app_host``).
        self.setup = ModelSetup(
            self,
            setup_problem,
            self._reload_settings,
            open_engine=self._open_engine,
            attached=remote is not None,
        )
        self.session = SessionWork(self, run_command=lambda invocation: self.slash.run(invocation))
        self.slash: SlashCommands = SlashCommands(self, self.session)
        self.trust = ProjectTrust(self, self.setup)
        self.mcp_startup = McpStartup(self, self.trust)

    def _on_exit_signal(self, _signum: int) -> None:
        self.call_later(self.action_quit)

    # -- layout -------------------------------------------------------------------------

    def watch_busy(self) -> None:
        self._sync_prompt_busy()

    def watch_ready(self) -> None:
        self._sync_prompt_busy()

    def watch_starting(self) -> None:
        self._sync_prompt_busy()

    def watch_no_model(self) -> None:
        self._sync_prompt_busy()

    def _sync_prompt_busy(self) -> None:
        prompts = self.query("#prompt")
        if prompts:
            prompt = prompts.first(PromptInput)
            waiting = (
                self.no_model and not self.ready
            )  # nothing is working: dcode waits for a model
            prompt.busy = self.busy or (not self.ready and not waiting)
            prompt.starting = self.starting and not self.ready
            prompt.no_model = waiting

    def compose(self) -> ComposeResult:
        kwargs = {"window": self._window} if self._window else {}
        added = tuple(display_path(d) for d in self.settings.add_dirs)
        header = Welcome(self._model_label(), self._cwd_label, added=added, id="welcome")
        yield Transcript(id="transcript", animate=self._animated, header=header, **kwargs)
        yield QueuedStrip(id="queued")
        yield PromptInput(
            history_path=self.settings.history_file, workspace=self.settings.workspace, id="prompt"
        )
        yield StatusBar(clock=self._clock, animate=self._animated, id="status")

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    @property
    def prompt_input(self) -> PromptInput:
        return self.query_one("#prompt", PromptInput)

    @property
    def status(self) -> StatusBar:
        return self.query_one("#status", StatusBar)

    @property
    def queued_strip(self) -> QueuedStrip:
        return self.query_one("#queued", QueuedStrip)

    @property
    def welcome(self) -> Welcome:
        return self.query_one("#welcome", Welcome)

    def on_mount(self) -> None:
        if not self.is_headless:
            self.exit_signals.install()
        if self.settings.theme and self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        status = self.status
        status.mode = self.mode
        status.sandbox = self.sandbox.settings.describe() if self.sandbox.on else ""
        status.model = self._model_label()
        if self.served is not None:
            self.served.ask_model()
        status.cwd = self._cwd_label
        given = None if self._branch is AUTO else cast("str | None", self._branch)
        status.branch = read_git_branch(self.settings.workspace) if self._branch is AUTO else given
        status.activity = "Starting…"
        self.starting = not self.setup.problem
        self.no_model = bool(self.setup.problem)
        self.prompt_input.set_commands(commands.popup_entries())
        self._load_prompt_commands()
        self.session.install_media()
        self._sync_prompt_busy()
        self.prompt_input.focus()
        ToastPlacement(self, self.screen, self.transcript).install()
        if self._initial_prompt and self._initial_prompt.strip():
            self.session.submit(Pending(self._initial_prompt))
        self.call_after_refresh(self._after_first_paint)

    @work(thread=True, group="prompt-commands", exit_on_error=False)
    def _load_prompt_commands(self) -> None:
        """The user's and the project's own slash commands, read off the UI thread."""
        from dcode.prompts.commands import load_commands

        found = load_commands(
            self.settings.home, self.settings.workspace, reserved=commands.RESERVED
        )
        self.call_from_thread(self._use_prompt_commands, found)

    def _use_prompt_commands(self, found: PromptCommands) -> None:
        self.prompt_commands = found
        self.prompt_input.set_commands(
            commands.popup_entries(found) + self.mcp_startup.prompt_entries
        )

    def _after_first_paint(self) -> None:
        self.trust.check(
            then=self._open_or_set_up
        )  # the engine opens, or the first-run screen says what is missing

    def _open_or_set_up(self) -> None:
        if self.setup.problem:
            self.setup.show(self.setup.problem)
        else:
            self._open_engine()

    def _remember_theme(self, theme: Theme) -> None:
        """Themes picked anywhere (the command palette too) persist; previews do not."""
        from dcode.tui.screens.theme import ThemeScreen

        if not isinstance(self.screen, ThemeScreen):
            self.save_theme(theme.name)

    def save_theme(self, name: str) -> None:
        if name == self.settings.theme:
            return
        self.settings = replace(self.settings, theme=name)
        try:
            save_preference(self.settings, "theme", name)
        except OSError as exc:
            self.notify(f"could not save the theme: {exc}", severity="warning")

    # -- engine -------------------------------------------------------------------------

    @work(exclusive=True, group="engine")
    async def _open_engine(self) -> None:
        """Import and open the engine off the UI thread's critical path, after the first paint."""
        settings = self.settings
        self.starting = True
        self.collector.loading()
        try:
            if self._paint_on_ready and self._session_id:
                await self._paint_saved_transcript(self._session_id)
            factory = await asyncio.to_thread(importlib.import_module, "dcode.models.factory")
            # Attached, the server's model answers: this one needs no key here (the engine
            # keeps the store, the transcript's figures and the commands).
            resolved = await asyncio.to_thread(
                partial(factory.resolve_model, key_required=self.remote is None),
                settings,
            )
            engine_module = await asyncio.to_thread(importlib.import_module, "dcode.agent.engine")
            # Markdown and the streamed-answer widget, which the first frame did without.
            await asyncio.to_thread(importlib.import_module, ANSWER_MODULE)
            engine = await engine_module.Engine.open(settings, resolved)
            if self._torn_down():  # closed while it opened: nothing will claim it
                await engine.close()
                return
            self._unclaimed_engine = engine
        except ConfigError as exc:
            self.post_message(EngineFailed(str(exc), needs_setup=True))
            return
        except SessionDatabaseError as exc:
            self.post_message(EngineFailed(str(exc), needs_setup=False))
            return
        except Exception as exc:  # noqa: BLE001 - shown as one line, the app stays usable
            self.post_message(EngineFailed(f"could not start the agent: {exc}", needs_setup=False))
            return
        finally:
            self.collector.loaded()
        self.post_message(EngineReady(engine))

    async def _paint_saved_transcript(self, session_id: str) -> None:
        """A resumed session's transcript, read from its checkpoint before the engine's imports
        (which take a second or more), so that it is on screen while the engine loads."""
        from dcode.agent.store import open_store
        from dcode.tui.transcript.replay import transcript_entries

        store = open_store(self.settings, read_only=True)
        saved = await asyncio.to_thread(store.read_thread, session_id)
        if saved is None or not saved.messages:
            return  # nothing saved (or unreadable): the engine's read says what is wrong
        await asyncio.to_thread(importlib.import_module, ANSWER_MODULE)
        entries = await asyncio.to_thread(
            transcript_entries,
            saved.messages,
            session_id=session_id,
            store=store,
        )
        await self.transcript.load(entries)
        self._painted_checkpoint = (session_id, saved.checkpoint_id, len(saved.messages))

    def _torn_down(self) -> bool:
        """The main screen's widgets are gone: the app is closing (a quit, or a test leaving
        run_test) and a late message has nothing left to update. on_unmount closes the engine."""
        return not self.default_screen.query("#status")

    async def on_engine_ready(self, message: EngineReady) -> None:
        if self._torn_down():
            return
        self.engine = message.engine
        self.engine.use_sandbox(self.sandbox)
        self._unclaimed_engine = None
        self.show_model()
        self.status.activity = ""
        self.mcp_startup.start(self.engine)
        self.run_worker(
            self.engine.store.prune, thread=True, group="prune", exit_on_error=False
        )  # once a day
        if self._paint_on_ready and self._session_id:
            self._paint_on_ready = False
            if not await self.open_session(self._session_id, at_start=True):
                return  # another dcode has it: ready once the user has chosen what to do
        self._become_ready()

    def _become_ready(self) -> None:
        self.ready = True
        self.starting = False
        gc.freeze()
        self.session.pump()

    async def on_engine_failed(self, message: EngineFailed) -> None:
        if self._torn_down():
            return
        if message.needs_setup:
            self.setup.problem = message.problem
            self.setup.show(message.problem)
            return
        self.starting = False
        self.status.activity = "Not started"
        await self.transcript.notice(message.problem, NoticeLevel.ERROR)

    def retry_setup(self) -> None:
        if self.setup.problem and not self.workers_in("engine"):
            self.setup.retry()

    def ensure_runner(self) -> SessionRunner:
        assert self.engine is not None
        if self.runner is None and self.remote is not None:
            self.use_runner(self._served_runner(self._session_id))
        if self.runner is None:
            runner = self.engine.runner(self.approver, session_id=self._session_id, mode=self.mode)
            runner.start_source, self._next_start = self._next_start, "startup"
            self.use_runner(runner)
        assert self.runner is not None
        return self.runner

    def use_runner(self, runner: SessionRunner | None) -> None:
        """Make ``runner`` the app's (None: no session yet), and let the session it replaces go:
        this process holds one session at a time, and others may open the old one now."""
        old, self.runner = self.runner, runner
        if old is not None and old is not runner:
            self._next_start = "clear" if runner is None else "startup"
            self.run_worker(old.end_session("clear" if runner is None else "other"))
        self._session_id = runner.session_id if runner is not None else None
        if runner is not None:
            self.last_session_id = runner.session_id
        if old is not None and self.engine is not None and old.session_id != self._session_id:
            self.session.forget_async_tasks()
            self.engine.release(old.session_id)

    def _served_runner(self, session_id: str | None) -> SessionRunner:
        """A runner whose turns run on the app's dcode server: a new thread without an id."""
        import uuid

        from dcode.server.attached import AttachedRunner

        assert self.engine is not None
        assert self.served is not None
        runner = AttachedRunner(
            self.engine,
            self.served.server,
            session_id or str(uuid.uuid4()),
            self.approver,
            self.mode,
            exists=session_id is not None,
        )
        self.served.fit(runner)  # the model the client asked for, measured against its window
        return runner

    async def _open_served_session(self, session_id: str) -> bool:
        """A session of the dcode server: its transcript painted from the server's thread, then
        the run still going on it (or the question it waits on) joined as a live turn."""
        from functools import partial

        from dcode.server.attached import AttachedRunner
        from dcode.server.client import failure_line
        from dcode.tui.transcript.replay import transcript_entries

        assert self.remote is not None
        assert self.served is not None
        runner = self._served_runner(session_id)
        assert isinstance(runner, AttachedRunner)
        self.use_runner(runner)
        try:
            now = await runner.remote.now()
        except Exception as exc:  # noqa: BLE001 - one line; the app stays usable
            await self.transcript.notice(failure_line(exc, self.remote.url), NoticeLevel.ERROR)
            return True
        running, messages, waits = now.running, now.messages, bool(now.waiting)
        live = running is not None
        await self.transcript.load(transcript_entries(messages, session_id=session_id, live=live))
        going = " · joining its run" if live else " · answering its question" if waits else ""
        await self.transcript.notice(
            f"Resumed session {session_id} on {self.remote.url} · {len(messages)} messages{going}"
        )
        self.served.ask_spend(runner)  # what it spent so far, as the server's store holds it
        if live or waits:
            self.session.join(partial(runner.join_turn, running, messages))
        return True

    async def open_session(
        self, session_id: str, *, at_start: bool = False, forked_from: str | None = None
    ) -> bool:
        """Point the runner at a saved session and paint its transcript (the window only).
        False when another dcode has the session open: the user is asked whether to fork it,
        and ``at_start`` the app becomes ready once they have chosen."""
        assert self.engine is not None
        if self.remote is not None:
            return await self._open_served_session(session_id)
        try:
            info = await asyncio.to_thread(self.engine.store.get, session_id)
        except SessionDatabaseError as exc:
            await self.transcript.notice(str(exc), NoticeLevel.ERROR)
            return True
        if info is None:
            await self.transcript.notice(f"no session {session_id!r}", NoticeLevel.ERROR)
            return True
        try:
            runner = self.engine.runner(self.approver, session_id=info.id, mode=self.mode)
        except SessionHeld as held:
            self._offer_fork(held, at_start=at_start)
            return False
        self.use_runner(runner)
        if info.model and info.model != self.engine.resolved.spec:
            try:
                await asyncio.to_thread(self.engine.switch_model, info.model)
            except ConfigError as exc:
                await self.transcript.notice(
                    f"keeping {self.engine.resolved.spec}: {exc}", NoticeLevel.WARNING
                )
        self.show_mode()
        count = await self.paint_session(info.id)
        await self.session.follow_saved_tasks(runner)
        self.show_model()
        profile = self.engine.resolved.profile
        self.status.set_usage(info.context_tokens, profile.max_input_tokens)
        self.status.cost = profile.cost(info.input_tokens, info.output_tokens, info.cached_tokens)
        self.status.budget = (await runner.budget()).level()  # the levels already behind it
        opened = (
            f"Forked session {forked_from} into {info.id}"
            if forked_from
            else f"Resumed session {info.id}"
        )
        await self.transcript.notice(f"{opened} · {info.title or 'untitled'} · {count} messages")
        return True

    def _offer_fork(self, held: SessionHeld, *, at_start: bool) -> None:
        """Another dcode has the session: fork it here, or go back (quit, when it was the
        session dcode was started for). Never both writing to it."""
        from dcode.tui.screens.session_held import SessionHeldScreen

        async def chosen(fork: bool | None) -> None:
            if fork:
                await self._fork_session(held.session_id, at_start=at_start)
            elif at_start:
                self.last_session_id = None  # never held here: it is the other dcode's to resume
                await self.action_quit()
                return
            if at_start:
                self._become_ready()
            self.prompt_input.focus()

        self.push_screen(
            SessionHeldScreen(held, leave="Quit" if at_start else "Back"), callback=chosen
        )

    async def _fork_session(self, source_id: str, *, at_start: bool) -> None:
        assert self.engine is not None
        try:
            info = await self.engine.fork(source_id)
        except (SessionDatabaseError, ValueError) as exc:
            if at_start:
                await self.slash.new_session()  # nothing else to continue
            await self.transcript.notice(
                f"could not fork session {source_id}: {exc}", NoticeLevel.ERROR
            )
            return
        await self.open_session(info.id, forked_from=source_id)

    async def paint_session(self, session_id: str, *, repaint: bool = False) -> int:
        """Paint the session's transcript, unless what was painted from its checkpoint before
        the engine opened is still its latest (``repaint``: the thread changed under it, as a
        rewind changes it); returns the number of messages."""
        from dcode.agent.store import open_store
        from dcode.tui.transcript.replay import transcript_entries

        store = open_store(self.settings, read_only=True)

        painted, self._painted_checkpoint = self._painted_checkpoint, None
        if painted is not None and painted[0] == session_id and not repaint:
            latest = await asyncio.to_thread(store.latest_checkpoint_id, session_id)
            if latest == painted[1]:
                return painted[2]
        messages = await self.ensure_runner().messages()
        entries = await asyncio.to_thread(
            transcript_entries, messages, session_id=session_id, store=store
        )
        await self.transcript.load(entries)
        return len(messages)

    def resume_when_ready(self, session_id: str) -> None:
        self._session_id, self._paint_on_ready = session_id, True

    def _model_label(self) -> str:
        """The model named before the engine is ready: the server's, when the runs go there."""
        return self.served.label if self.served is not None else self.settings.model

    def show_model(self) -> None:
        """The model that answers, in the banner and the status bar: the server's when the
        runs go there (``ServedView``), else the engine's."""
        if self.served is not None:
            self.status.model = self.welcome.model = self.served.label
            window = self.served.model.max_input_tokens if self.served.model else None
            if window:
                self.status.max_tokens = window
            if where := self.served.workspace_label:  # the runs work there, not here
                self.welcome.workspace = self.status.cwd = where
                self.status.branch = None  # this directory's branch is not the server's
            return
        if self.engine is not None:
            resolved = self.engine.resolved
            effort = resolved.profile.reasoning_effort
            self.status.model = f"{resolved.spec} · {effort}" if effort else resolved.spec
            self.welcome.model = self.status.model
            self.status.max_tokens = self.engine.resolved.profile.max_input_tokens

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast is plain words drawn safe, never markup: many quote an error, and an
        error may quote a server, a file or a model."""
        super().notify(
            safe_text(message),
            title=safe_text(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    # -- input ------------------------------------------------------------------------

    def ring_if_away(self, *, turn_ended: bool = False) -> None:
        """Call the user back (the terminal's bell) when the terminal is not in focus (as it
        reports with focus events; one that does not is always taken as in focus); a turn that
        ended then also fires the ``Notification`` hooks (``idle_prompt``)."""
        if not self.app_focus and self.settings.bell:
            self.bell()
        if turn_ended and not self.app_focus and self.runner is not None:
            self.run_worker(self._notify_idle(self.runner))

    async def _notify_idle(self, runner: SessionRunner) -> None:
        """The ``Notification`` hooks for a turn that ended out of focus; what they say (a hook
        that failed) goes in the transcript."""
        if runner.hooks is None:
            return
        said: list[Event] = []
        task = runner.hooks.notify(
            runner.session_id,
            "dcode finished its turn and waits for you",
            "idle_prompt",
            said.append,
        )
        if task is not None:
            await task
        for event in said:
            if isinstance(event, Notice):
                await self.transcript.notice(event.message, NoticeLevel.WARNING)

    @on(PromptInput.EscapedTwice)
    def _on_escaped_twice(self) -> None:
        if self.runner is not None and self.ready:
            self.session.run_slash(Invocation(commands.BY_NAME["rewind"], ""))

    @on(PromptInput.Submitted)
    def _on_submitted(self, event: PromptInput.Submitted) -> None:
        event.stop()
        self.session.submit(Pending(event.text, shell=event.shell, draft=event.draft))

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area.text:
            self.last_typed = time.monotonic()

    def on_approval_widget_stray_key(self, message: ApprovalWidget.StrayKey) -> None:
        """A key typed for the prompt just as an approval appeared goes back to the prompt."""
        self.prompt_input.insert_text(message.character)

    async def on_approval_needed(self, message: ApprovalNeeded) -> None:
        await self.session.approval_needed(message)

    async def on_approval_withdrawn(self, message: ApprovalWithdrawn) -> None:
        await self.session.approval_withdrawn(message)

    async def on_approval_widget_decided(self, message: ApprovalWidget.Decided) -> None:
        await self.session.approval_decided(message)

    def on_notice_message_open_path(self, message: NoticeMessage.OpenPath) -> None:
        self.slash.open_path(message.path)

    # -- what the components and the widgets call -----------------------------------------

    def run_slash(self, invocation: Invocation) -> None:
        """Run a slash command as if typed (the command palette, a picker's choice)."""
        self.session.run_slash(invocation)

    def prefill_prompt(self, text: str) -> None:
        self.session.prefill_prompt(text)

    @property
    def media(self) -> MediaSource | None:
        """Pasted and dropped images and videos (a video's thumbnails read its store)."""
        return self.session.media

    def frames_sent_bytes(self, frames: FrameStrip) -> int | None:
        """What a video's frames weigh on the model's route (blocking: a video line calls it in a thread)."""
        return self.session.frames_sent_bytes(frames)

    def workers_in(self, group: str) -> bool:
        return any(worker.group == group and not worker.is_finished for worker in self.workers)

    def cancel_workers(self, group: str) -> list[Worker[Any]]:
        return self.workers.cancel_group(self, group)

    @property
    def session_allowed(self) -> frozenset[ApprovalKind]:
        """The kinds the user answered "yes for the session" (``a``) in this session."""
        return (
            frozenset(self.runner.policy.session_allowed)
            if self.runner is not None
            else frozenset()
        )

    @property
    def session_tools(self) -> list[str]:
        """The tools and MCP servers the user answered "yes for the session" (``calc__add``, ``web__*``)."""
        return self.runner.policy.session_tools.rules() if self.runner is not None else []

    def set_mode(self, mode: ApprovalMode) -> None:
        self.mode = mode
        if self.runner is not None:
            self.runner.policy.mode = mode
        self.show_mode()

    def show_mode(self, *also_allowed: ApprovalKind, also_tool: str = "") -> None:
        self.status.mode = self.mode
        self.status.allowed = self.session_allowed.union(also_allowed)
        tools = self.session_tools
        self.status.tools = (*tools, *([also_tool] if also_tool and also_tool not in tools else []))

    def action_change_theme(self) -> None:
        self.slash.change_theme()

    # -- keys ---------------------------------------------------------------------------

    def action_escape(self) -> None:
        """Esc, one step at a time: (a modal closes itself) → the input's popup → an approval
        (rejected, and the turn stops) → the last queued message (back into the input) → the
        turn → a second Esc on an idle draft clears it."""
        prompt = self.prompt_input
        if prompt.popup_open:
            prompt.escape()
            return
        session = self.session
        if session.reject_pending():
            return
        if session.queue:
            item = session.queue.pop()
            session.show_queue()
            prompt.restore(item.restorable)
            prompt.focus()
            return
        if session.interrupt():
            return
        prompt.escape()

    def action_ctrl_c(self) -> None:
        selected = self.screen.get_selected_text()
        if selected:
            self.copy_to_clipboard(selected)
            self.screen.clear_selection()
            return
        if self.session.reject_pending() or self.session.interrupt():
            return
        now = self._clock()
        if now - self._ctrl_c_at < CTRL_C_WINDOW:
            self.call_later(self.action_quit)
            return
        self._ctrl_c_at = now
        self.notify("press ctrl+c again to quit", timeout=CTRL_C_WINDOW)

    @work(group="editor", exclusive=True)
    async def action_external_editor(self) -> None:
        """Write the prompt in ``$VISUAL``/``$EDITOR``; what it saves becomes the draft."""
        import os

        from dcode.tui.external_editor import edit_in_editor

        problem = await edit_in_editor(self, self.prompt_input, self.settings.home, os.environ)
        if problem is not None:
            self.notify(problem, severity="warning", markup=False)

    def action_cycle_mode(self) -> None:
        self.set_mode(self.mode.next())

    def action_scroll_transcript(self, pages: int) -> None:
        if pages < 0:
            self.transcript.scroll_page_up(animate=False)
        else:
            self.transcript.scroll_page_down(animate=False)

    def action_toggle_output(self) -> None:
        self.transcript.set_expanded(not self.transcript.expanded)

    async def action_quit(self) -> None:
        if self.runner is not None and self.runner.busy and self.runner.cancel():
            # Interrupted as Esc interrupts it, the turn ends on its own in a moment, its partial
            # answer kept; cancelling its worker mid-step instead could leave a widget half
            # mounted and the graph's stream waiting on the model call it was reading.
            await _wound_up(
                [
                    worker
                    for worker in self.workers
                    if worker.group == "turn" and not worker.is_finished
                ]
            )
        cancelled = [
            *self.cancel_workers("turn"),
            *self.cancel_workers("shell"),
            *self.cancel_workers("command"),  # an /offload in flight: the session stays as it was
        ]
        await _wound_up(cancelled)
        if self.runner is not None:
            with suppress(Exception):  # quitting must not fail; a hook has its own timeout
                await asyncio.wait_for(self.runner.end_session("prompt_input_exit"), 5.0)
        await self._close_engine()
        self.exit(0)

    async def on_unmount(self) -> None:
        # However the app ends (quit, a crash, a test leaving run_test), the session database
        # is closed: its connection thread would otherwise keep the process alive.
        self.exit_signals.uninstall()
        await self._close_engine()

    async def _close_engine(self) -> None:
        await self.session.close_async_tasks()  # before the clients it asks with are closed
        engines = [self.engine, self._unclaimed_engine]
        self.engine = self._unclaimed_engine = None
        for engine in engines:
            if engine is None:
                continue
            with suppress(Exception):  # quitting must not fail
                await asyncio.wait_for(engine.close(), 2.0)


async def _wound_up(workers: list[Worker[Any]]) -> None:
    """Wait (a little) for cancelled workers to finish: a turn ends by writing to the transcript,
    which must still be on the screen then, and to the session, which must still be open."""
    if waits := [asyncio.ensure_future(worker.wait()) for worker in workers]:
        done, pending = await asyncio.wait(waits, timeout=QUIT_WIND_UP_S)
        for future in pending:
            future.cancel()
        for future in (f for f in done if not f.cancelled()):
            future.exception()  # cancelled or failed: either way it has ended
