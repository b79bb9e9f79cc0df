"""The dcode app: transcript, input and status bar around one session runner.

The first frame paints before anything heavy is imported; the engine (langchain, langgraph,
the SQLite checkpointer) opens in a worker afterwards. Until it is ready, and while a turn runs,
prompts and most commands wait in a visible queue. One ``match`` turns the core's events into
transcript and status updates; widgets talk back only through messages.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import var
from textual.theme import Theme
from textual.widgets import TextArea

from dcode.agent.events import (
    ApprovalResolved,
    AssistantMessageFinished,
    CompactionFinished,
    CompactionStarted,
    ErrorEvent,
    Event,
    Notice,
    ReasoningDelta,
    TextDelta,
    ToolArgsDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnFinished,
    UsageUpdated,
)
from dcode.config import ApprovalMode, ConfigError, Settings, save_preference
from dcode.tui import commands
from dcode.tui.commands import Invocation, SlashCommandProvider, UnknownCommand
from dcode.tui.messages import ApprovalNeeded, ApprovalWithdrawn, EngineFailed, EngineReady
from dcode.tui.status import QueuedStrip, StatusBar, display_path, read_git_branch
from dcode.tui.transcript import NoticeLevel, ShellEntry, Transcript
from dcode.tui.tui_approver import TuiApprover
from dcode.tui.widgets.prompt_input import PromptInput

if TYPE_CHECKING:
    from dcode.agent.engine import Engine
    from dcode.agent.runner import SessionRunner

SHELL_TIMEOUT = 300.0
SHELL_OUTPUT_CAP = 30_000
CTRL_C_WINDOW = 2.0
TYPING_GRACE = 0.4
AUTO = object()


@dataclass(frozen=True, slots=True)
class Pending:
    """Something the user sent that waits its turn: a prompt, a ``!cmd`` or a slash command."""

    text: str
    shell: str | None = None
    invocation: Invocation | None = None
    draft: Any = None
    """The input box as it was (pastes and all), to put back if the item is unqueued."""

    @property
    def restorable(self) -> Any:
        return self.draft if self.draft is not None else self.text


class DcodeApp(App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "dcode"
    COMMANDS = App.COMMANDS | {SlashCommandProvider}
    BINDINGS = [
        Binding("escape", "escape", "Interrupt", show=False),
        Binding("ctrl+c", "ctrl_c", "Copy / interrupt / quit", show=False),
        Binding("ctrl+d", "quit", "Quit", show=False, priority=True),
        Binding("shift+tab", "cycle_mode", "Approval mode", show=False, priority=True),
        Binding("ctrl+o", "toggle_output", "Tool output", show=False, priority=True),
    ]

    busy = var(False)  # no class on the App: restyling the whole DOM at each turn's end stalls a frame
    ready = var(False, toggle_class="-ready")

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
        branch: str | None | object = AUTO,
        window: int | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.mode = settings.approve or ApprovalMode.MANUAL
        self.engine: Engine | None = None
        self._unclaimed_engine: Engine | None = None  # opened, EngineReady not yet handled
        self.runner: SessionRunner | None = None
        self.approver = TuiApprover(self)
        self.queue: deque[Pending] = deque()
        self._initial_prompt = prompt
        self._session_id = session_id
        self._paint_on_ready = session_id is not None
        self._setup_problem = setup_problem
        self._reload_settings = reload_settings
        self._clock = clock
        self._animate = animate
        self._cwd_label = cwd_label if cwd_label is not None else display_path(settings.workspace)
        self._branch = branch
        self._window = window
        self._last_typed = -10.0
        self._ctrl_c_at = -10.0
        self._streamed_chars = 0
        self._turn_output = False
        self._theme_loaded = False

    # -- layout -------------------------------------------------------------------------

    def watch_busy(self) -> None:
        self._sync_prompt_busy()

    def watch_ready(self) -> None:
        self._sync_prompt_busy()

    def _sync_prompt_busy(self) -> None:
        prompts = self.query("#prompt")
        if prompts:
            prompts.first(PromptInput).busy = self.busy or not self.ready

    def compose(self) -> ComposeResult:
        kwargs = {"window": self._window} if self._window else {}
        yield Transcript(id="transcript", animate=self._animate, **kwargs)
        yield QueuedStrip(id="queued")
        yield PromptInput(history_path=self.settings.history_file, workspace=self.settings.workspace, id="prompt")
        yield StatusBar(clock=self._clock, animate=self._animate, id="status")

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

    def on_mount(self) -> None:
        if self.settings.theme and self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        status = self.status
        status.mode = self.mode
        status.model = self.settings.model
        status.cwd = self._cwd_label
        status.branch = read_git_branch(self.settings.workspace) if self._branch is AUTO else self._branch  # type: ignore[assignment]
        status.activity = "Starting…"
        self.prompt_input.set_commands(commands.popup_entries())
        self._install_media()
        self._sync_prompt_busy()
        self.prompt_input.focus()
        if self._initial_prompt and self._initial_prompt.strip():
            self.submit(Pending(self._initial_prompt))
        self.call_after_refresh(self._after_first_paint)

    def _after_first_paint(self) -> None:
        if self._setup_problem:
            self._show_first_run(self._setup_problem)
        else:
            self._open_engine()

    def _remember_theme(self, theme: Theme) -> None:
        """Themes picked anywhere (the command palette too) persist; previews do not."""
        from dcode.tui.screens.theme import ThemeScreen

        if not isinstance(self.screen, ThemeScreen):
            self._save_theme(theme.name)

    def _save_theme(self, name: str) -> None:
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
        try:
            factory = await asyncio.to_thread(importlib.import_module, "dcode.models.factory")
            resolved = await asyncio.to_thread(factory.resolve_model, settings)
            engine_module = await asyncio.to_thread(importlib.import_module, "dcode.agent.engine")
            engine = await engine_module.Engine.open(settings, resolved)
            self._unclaimed_engine = engine
        except ConfigError as exc:
            self.post_message(EngineFailed(str(exc), needs_setup=True))
            return
        except Exception as exc:  # noqa: BLE001 - shown as one line, the app stays usable
            self.post_message(EngineFailed(f"could not start the agent: {exc}", needs_setup=False))
            return
        self.post_message(EngineReady(engine))

    async def on_engine_ready(self, message: EngineReady) -> None:
        self.engine = message.engine
        self._unclaimed_engine = None
        self.status.model = self.engine.resolved.spec
        self.status.max_tokens = self.engine.resolved.profile.max_input_tokens
        self.status.activity = ""
        if self._paint_on_ready and self._session_id:
            self._paint_on_ready = False
            await self._open_session(self._session_id)
        self.ready = True
        gc.freeze()
        self._pump()

    async def on_engine_failed(self, message: EngineFailed) -> None:
        self.status.activity = "No model"
        if message.needs_setup:
            self._setup_problem = message.problem
            self._show_first_run(message.problem)
        else:
            await self.transcript.notice(message.problem, NoticeLevel.ERROR)

    def _show_first_run(self, problem: str) -> None:
        self.status.activity = "No model"
        try:
            from dcode.tui.screens.first_run import FirstRunScreen
        except ImportError:
            self.call_later(self.transcript.notice, problem, NoticeLevel.ERROR)
            return
        screen = FirstRunScreen(problem, self.settings, check=self._connection_check)

        def closed(retry: bool | None) -> None:
            if screen.typed:
                self.prompt_input.insert_text(screen.typed)
            self._after_first_run(retry)

        self.push_screen(screen, callback=closed)

    def _connection_check(self) -> tuple[bool, str]:
        """For the first-run screen's "test connection" (it runs this in a thread)."""
        from dcode.models.connection import check_connection
        from dcode.models.factory import resolve_model

        settings = self._reload_settings() if self._reload_settings is not None else self.settings
        try:
            resolved = resolve_model(settings)
        except ConfigError as exc:
            return False, str(exc)
        return check_connection(resolved)

    def _after_first_run(self, retry: bool | None) -> None:
        if not retry:
            self.call_later(
                self.transcript.notice,
                f"{self._setup_problem} — fix it and send a prompt to try again.",
                NoticeLevel.ERROR,
            )
            self.prompt_input.focus()
            return
        self._retry_setup()

    def _retry_setup(self) -> None:
        from dcode.tui.launch import find_setup_problem

        if self._reload_settings is not None:
            try:
                self.settings = self._reload_settings()
            except ConfigError as exc:
                self._setup_problem = str(exc)
                self._show_first_run(str(exc))
                return
        problem = find_setup_problem(self.settings)
        self._setup_problem = problem
        if problem:
            self._show_first_run(problem)
            return
        self.status.model = self.settings.model
        self.status.activity = "Starting…"
        self.prompt_input.focus()
        self._open_engine()

    def _ensure_runner(self) -> SessionRunner:
        assert self.engine is not None
        if self.runner is None:
            self.runner = self.engine.runner(self.approver, session_id=self._session_id, mode=self.mode)
            self._session_id = self.runner.session_id
        return self.runner

    async def _open_session(self, session_id: str) -> None:
        """Point the runner at a saved session and paint its transcript (the window only)."""
        from dcode.tui.transcript.replay import entries_from_messages

        assert self.engine is not None
        info = await asyncio.to_thread(self.engine.sessions.get, session_id)
        if info is None:
            await self.transcript.notice(f"no session {session_id!r}", NoticeLevel.ERROR)
            return
        if info.model and info.model != self.engine.resolved.spec:
            try:
                await asyncio.to_thread(self.engine.switch_model, info.model)
            except ConfigError as exc:
                await self.transcript.notice(f"keeping {self.engine.resolved.spec}: {exc}", NoticeLevel.WARNING)
        self._session_id = info.id
        self.runner = None
        runner = self._ensure_runner()
        messages = await runner.messages()
        await self.transcript.load(entries_from_messages(messages))
        self._show_model()
        profile = self.engine.resolved.profile
        self.status.set_usage(info.context_tokens, profile.max_input_tokens, True)
        self.status.cost = profile.cost(info.input_tokens, info.output_tokens)
        await self.transcript.notice(f"Resumed session {info.id} · {info.title or 'untitled'} · {len(messages)} messages")

    def _show_model(self) -> None:
        if self.engine is not None:
            self.status.model = self.engine.resolved.spec
            self.status.max_tokens = self.engine.resolved.profile.max_input_tokens

    # -- input and the queue -----------------------------------------------------------

    @on(PromptInput.Submitted)
    def _on_submitted(self, event: PromptInput.Submitted) -> None:
        event.stop()
        self.submit(Pending(event.text, shell=event.shell, draft=event.draft))

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area.text:
            self._last_typed = time.monotonic()

    def on_approval_widget_stray_key(self, message: Any) -> None:
        """A key typed for the prompt just as an approval appeared goes back to the prompt."""
        self.prompt_input.insert_text(message.character)

    def submit(self, item: Pending) -> None:
        if not item.text.strip():
            return
        if item.shell is None and item.invocation is None:
            try:
                invocation = commands.parse(item.text)
            except UnknownCommand as exc:
                self.call_later(self.transcript.notice, f"unknown command /{exc} — /help lists them", NoticeLevel.WARNING)
                return
            if invocation is not None:
                item = replace(item, invocation=invocation)
        if self._runs_now(item):
            self._start(item)
            return
        self.queue.append(item)
        self._show_queue()
        if not self.ready and self._setup_problem and not self.workers_in("engine"):
            self._show_first_run(self._setup_problem)

    def run_slash(self, invocation: Invocation) -> None:
        self.submit(Pending(f"/{invocation.command.name} {invocation.args}".strip(), invocation=invocation))

    def prefill_prompt(self, text: str) -> None:
        self.prompt_input.restore(text)
        self.prompt_input.focus()

    def workers_in(self, group: str) -> bool:
        return any(worker.group == group and not worker.is_finished for worker in self.workers)

    def _runs_now(self, item: Pending) -> bool:
        if item.invocation is not None:
            command = item.invocation.command
            if command.busy_safe:
                return True
            if command.needs_engine and not self.ready:
                return False
            return not self.busy
        if item.shell == "private":
            return True
        return self.ready and not self.busy

    def _show_queue(self) -> None:
        self.queued_strip.show([item.text for item in self.queue])
        self.status.queued = len(self.queue)

    def _pump(self) -> None:
        """Start the next queued item if nothing is running."""
        while self.queue and not self.busy:
            if not self._runs_now(self.queue[0]):
                break
            item = self.queue.popleft()
            self._start(item)
        self._show_queue()

    def _start(self, item: Pending) -> None:
        if item.invocation is not None:
            self.call_later(self._run_command, item.invocation)
        elif item.shell is not None:
            private = item.shell == "private"
            if not private:
                self.busy = True
            self._run_shell(item.text, private)
        else:
            self.busy = True
            self._run_turn(item)

    # -- turns --------------------------------------------------------------------------

    def _install_media(self) -> None:
        """The MediaTracker: pasted/dropped images and videos, Ctrl+V clipboard images."""
        from functools import partial

        from dcode.tui.widgets.media_source import MediaSource

        def make_store() -> Any:
            from dcode.media.store import AttachmentStore

            return AttachmentStore(self.settings.attachments_dir)

        self.media = MediaSource(make_store, self.settings.workspace, notify=partial(self.notify, markup=False))
        self.media.install(self.prompt_input)

    def _turn_content(self, item: Pending) -> tuple[Any, str] | None:
        """The HumanMessage content for a prompt: its text plus one reference block per image."""
        from dcode.tui.widgets.media_content import MediaRefused, content_for

        placeholders = getattr(item.draft, "placeholders", ()) or ()
        try:
            return content_for(item.text, placeholders)
        except MediaRefused as exc:
            self.notify(exc.message, severity="error", markup=False)
            self.prompt_input.restore(item.restorable)
            return None

    @work(group="turn")
    async def _run_turn(self, item: Pending) -> None:
        text = item.text
        prepared = self._turn_content(item)
        if prepared is None:
            self.busy = False
            self._pump()
            return
        content, text = prepared
        self._streamed_chars = 0
        self._turn_output = False
        interrupted = False
        status = self.status
        try:
            runner = self._ensure_runner()
            await self.transcript.add_user(text)
            status.activity = "Working"
            status.start_turn()
            async for event in runner.run_turn(content, prompt_text=text):
                await self._apply(event)
                if isinstance(event, TurnFinished):
                    interrupted = event.interrupted
        except asyncio.CancelledError:
            interrupted = True
            raise
        except Exception as exc:  # noqa: BLE001 - a failed turn is one line, not a crash
            await self.transcript.notice(f"the turn failed: {exc}", NoticeLevel.ERROR)
        finally:
            await self.transcript.finish_turn(interrupted=interrupted)
            status.end_turn()
            status.activity = ""
            self.busy = False
            if self._branch is AUTO:
                status.branch = read_git_branch(self.settings.workspace)
        self._after_turn(interrupted, item)

    def _after_turn(self, interrupted: bool, sent: Pending) -> None:
        if interrupted:
            # An interrupt means "stop": queued prompts go back to the input rather than run,
            # and so does the prompt itself when nothing came back for it yet.
            waiting = list(self.queue)
            self.queue.clear()
            if not self._turn_output:
                waiting.insert(0, sent)
            for item in reversed(waiting):
                self.prompt_input.restore(item.restorable)
            self._show_queue()
            return
        self._pump()

    async def _apply(self, event: Event) -> None:
        transcript = self.transcript
        match event:
            case TextDelta(text=text):
                self._count(text)
                self._turn_output = True
                await transcript.append_text(text)
            case ReasoningDelta(text=text):
                self._count(text)
                await transcript.append_reasoning(text)
            case AssistantMessageFinished(text=text):
                await transcript.finish_message(text)
            case ToolCallStarted(call_id=call_id, name=name):
                self._turn_output = True
                await transcript.tool_started(call_id, name)
            case ToolArgsDelta(call_id=call_id, delta=delta):
                self._count(delta)
                transcript.tool_args(call_id, delta)
            case ToolCallRunning(call_id=call_id, name=name, args=args, summary=summary):
                await transcript.tool_running(call_id, name, args, summary)
            case ToolCallFinished(call_id=call_id, name=name, status=status, preview=preview, output=output):
                transcript.tool_finished(call_id, name, status, preview, output)
                self.status.activity = "Working"
            case ApprovalResolved(call_id=call_id, approved=approved, feedback=feedback):
                await transcript.resolve_approval(call_id, approved, feedback)
            case UsageUpdated():
                self._usage(event)
            case Notice(message=message):
                await transcript.notice(message)
            case CompactionStarted(reason=reason):
                self.status.activity = "Compacting"
                await transcript.notice(f"compacting the conversation ({reason})…")
            case CompactionFinished(messages_summarized=count, tokens_before=before, tokens_after=after):
                self.status.activity = "Working"
                await transcript.notice(f"compacted {count} messages: {before:,} → {after:,} tokens")
            case ErrorEvent(message=message):
                await transcript.notice(message, NoticeLevel.ERROR)
            case TurnFinished():
                pass

    def _count(self, text: str) -> None:
        self._streamed_chars += len(text)
        self.status.streamed_tokens = self._streamed_chars // 4

    def _usage(self, event: UsageUpdated) -> None:
        self.status.set_usage(event.context_tokens, event.max_input_tokens, event.reported)
        if self.engine is not None:
            self.status.cost = self.engine.resolved.profile.cost(event.session_input_tokens, event.session_output_tokens)

    def interrupt(self) -> bool:
        if self.runner is not None and self.runner.busy:
            self.runner.cancel()
            self.status.activity = "Interrupting"
            return True
        if self.workers_in("shell"):
            self.workers.cancel_group(self, "shell")
            return True
        return False

    # -- approvals ----------------------------------------------------------------------

    async def on_approval_needed(self, message: ApprovalNeeded) -> None:
        # Someone composing the next message must not answer this with a stray "y" or "n".
        typing = bool(self.prompt_input.text.strip()) and time.monotonic() - self._last_typed < TYPING_GRACE
        self.status.activity = "Waiting for approval"
        await self.transcript.show_approval(message.request, message.future, TYPING_GRACE if typing else 0.0)

    async def on_approval_withdrawn(self, message: ApprovalWithdrawn) -> None:
        await self.transcript.withdraw_approval(message.call_id)

    async def on_approval_widget_decided(self, message: Any) -> None:
        decision = message.decision
        await self.transcript.resolve_approval(message.call_id, decision.approved, decision.feedback if not message.stop_turn else "stopped")
        self.status.activity = "Working"
        self.prompt_input.focus()
        if message.stop_turn:
            self.interrupt()

    def _reject_pending(self) -> bool:
        pending = self.transcript.pending_approvals
        if not pending:
            return False
        from dcode.agent.approval import ApprovalDecision

        for call in pending:
            assert call.approval is not None
            if not call.approval.future.done():
                call.approval.future.set_result(ApprovalDecision(False, "the user stopped the turn"))
            self.call_later(self.transcript.resolve_approval, call.call_id, False, "stopped")
        self.interrupt()
        self.prompt_input.focus()
        return True

    # -- shell --------------------------------------------------------------------------

    @work(group="shell")
    async def _run_shell(self, command: str, private: bool) -> None:
        entry = ShellEntry(command=command, private=private)
        await self.transcript.add_shell(entry)
        shell = os.environ.get("SHELL") or "/bin/sh"
        try:
            proc = await asyncio.create_subprocess_exec(
                shell, "-c", command,
                cwd=self.settings.workspace,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), SHELL_TIMEOUT)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                proc.kill()
                await proc.wait()
                out = b"(stopped)"
            entry.output = out.decode("utf-8", errors="replace")[-SHELL_OUTPUT_CAP:]
            entry.exit_code = proc.returncode
        except OSError as exc:
            entry.output, entry.exit_code = str(exc), 127
        entry.running = False
        self.transcript.refresh_entry(entry)
        try:
            if not private and self.engine is not None:
                note = f"I ran a shell command myself: `{command}` (exit code {entry.exit_code}). Its output:\n```\n{entry.output}\n```"
                await self._ensure_runner().add_user_note(note)
        finally:
            if not private:
                self.busy = False
                self._pump()

    # -- slash commands -----------------------------------------------------------------

    async def _run_command(self, invocation: Invocation) -> None:
        name, args = invocation.command.name, invocation.args
        match name:
            case "help":
                self._show_help()
            case "quit":
                await self.action_quit()
            case "theme":
                self.action_change_theme()
            case "copy":
                self._copy_last_answer()
            case "approve":
                await self._set_mode_from(args)
            case "model":
                await self._switch_model(args)
            case "clear":
                await self._new_session()
            case "resume":
                await self._pick_session()
            case "paste":
                await self.media.paste(self.prompt_input.area, say_if_empty=True)

    def _show_help(self) -> None:
        try:
            from dcode.tui.screens.help import HelpScreen
        except ImportError:
            lines = [f"{label} — {text}" for label, text in commands.help_entries()]
            self.call_later(self.transcript.notice, "\n".join(lines))
            return
        self.push_screen(HelpScreen(commands.help_entries(), list(commands.KEYS)))

    def action_change_theme(self) -> None:
        try:
            from dcode.tui.screens.theme import ThemeScreen
        except ImportError:
            self.search_themes()
            return

        def chosen(name: str | None) -> None:
            if name:
                self._save_theme(name)
            self.prompt_input.focus()

        self.push_screen(ThemeScreen(), callback=chosen)

    @work(group="clipboard")
    async def _copy_last_answer(self) -> None:
        text = self.transcript.last_answer()
        if not text:
            self.notify("nothing to copy yet", severity="warning")
            return

        def copy() -> bool:
            try:
                import pyperclip

                pyperclip.copy(text)
                return True
            except Exception:  # noqa: BLE001 - no clipboard tool; fall back to OSC 52
                return False

        if not await asyncio.to_thread(copy):
            self.copy_to_clipboard(text)
        self.notify(f"copied the last answer ({len(text):,} characters)")

    async def _set_mode_from(self, args: str) -> None:
        try:
            mode = ApprovalMode(args.strip().lower())
        except ValueError:
            await self.transcript.notice(f"/approve takes manual, edits or all (now: {self.mode.value})", NoticeLevel.WARNING)
            return
        self._set_mode(mode)

    def _set_mode(self, mode: ApprovalMode) -> None:
        self.mode = mode
        self.status.mode = mode
        if self.runner is not None:
            self.runner.policy.mode = mode

    async def _switch_model(self, spec: str) -> None:
        assert self.engine is not None
        if not spec:
            await self.transcript.notice(f"the model is {self.engine.resolved.spec}; switch with /model provider:model")
            return
        try:
            resolved = await asyncio.to_thread(self.engine.switch_model, spec)
        except ConfigError as exc:
            await self.transcript.notice(str(exc), NoticeLevel.ERROR)
            return
        self._show_model()
        await self.transcript.notice(f"switched to {resolved.spec}; the conversation continues")

    async def _new_session(self) -> None:
        self.runner = None
        self._session_id = None
        await self.transcript.clear()
        self.status.set_usage(0, self.status.max_tokens, True)
        self.status.cost = None
        await self.transcript.notice("new session")

    async def _pick_session(self) -> None:
        from dcode.agent.sessions import SessionStore

        store = self.engine.sessions if self.engine is not None else SessionStore(self.settings.sessions_db)
        sessions = await asyncio.to_thread(store.list)
        try:
            from dcode.tui.screens.resume import ResumeScreen
        except ImportError:
            await self.transcript.notice("the session picker is not available", NoticeLevel.ERROR)
            return

        async def chosen(session_id: str | None) -> None:
            if not session_id:
                self.prompt_input.focus()
                return
            if self.busy:
                self.submit(Pending(f"/resume {session_id}"))
                return
            if self.engine is None:
                self._session_id, self._paint_on_ready = session_id, True
                return
            await self._open_session(session_id)
            self.prompt_input.focus()

        self.push_screen(ResumeScreen(sessions), callback=chosen)

    # -- keys ---------------------------------------------------------------------------

    def action_escape(self) -> None:
        """Esc, one step at a time: (a modal closes itself) → the input's popup → an approval
        (rejected, and the turn stops) → the last queued message (back into the input) → the
        turn → a second Esc on an idle draft clears it."""
        prompt = self.prompt_input
        if prompt.popup_open:
            prompt.escape()
            return
        if self._reject_pending():
            return
        if self.queue:
            item = self.queue.pop()
            self._show_queue()
            prompt.restore(item.restorable)
            prompt.focus()
            return
        if self.interrupt():
            return
        prompt.escape()

    def action_ctrl_c(self) -> None:
        selected = self.screen.get_selected_text()
        if selected:
            self.copy_to_clipboard(selected)
            self.screen.clear_selection()
            return
        if self._reject_pending() or self.interrupt():
            return
        now = self._clock()
        if now - self._ctrl_c_at < CTRL_C_WINDOW:
            self.call_later(self.action_quit)
            return
        self._ctrl_c_at = now
        self.notify("press ctrl+c again to quit", timeout=CTRL_C_WINDOW)

    def action_cycle_mode(self) -> None:
        self._set_mode(self.mode.next())

    def action_toggle_output(self) -> None:
        self.transcript.set_expanded(not self.transcript.expanded)

    async def action_quit(self) -> None:
        if self.runner is not None and self.runner.busy:
            self.runner.cancel()
        self.workers.cancel_group(self, "turn")
        self.workers.cancel_group(self, "shell")
        await self._close_engine()
        self.exit(0)

    async def on_unmount(self) -> None:
        # However the app ends (quit, a crash, a test leaving run_test), the session database
        # is closed: its connection thread would otherwise keep the process alive.
        await self._close_engine()

    async def _close_engine(self) -> None:
        engines = [self.engine, self._unclaimed_engine]
        self.engine = self._unclaimed_engine = None
        for engine in engines:
            if engine is None:
                continue
            try:
                await asyncio.wait_for(engine.close(), 2.0)
            except Exception:  # noqa: BLE001 - quitting must not fail
                pass
