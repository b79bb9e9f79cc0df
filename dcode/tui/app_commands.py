"""The slash commands' actions, a component of ``DcodeApp``.

``dcode.tui.commands`` says what each command is (name, help, when it may run); this says what
it does. Screens are imported when first shown, never at start. What it needs of the App is
``CommandsHost``; the prompts a command sends go through the session's queue (``SessionWork``).
"""

# Any: Textual's screens are generic in their result: each pushed screen answers its own kind

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dcode.agent.events import ApprovalKind, CompactionFinished
from dcode.settings.config import ApprovalMode, ConfigError
from dcode.tui import commands
from dcode.tui.app_host import AppHost
from dcode.tui.app_session import Pending, SessionWork
from dcode.tui.commands import Invocation
from dcode.tui.transcript import NoticeLevel

if TYPE_CHECKING:
    from textual.screen import Screen

    from dcode.agent.runner import SessionRunner
    from dcode.tui.app_served import ServedView
    from dcode.tui.transcript import Transcript


class CommandsHost(AppHost, Protocol):
    """What the slash commands need of the App, beyond what every component does: the
    session it holds (open, paint, replace) and a few of Textual's own calls."""

    served: ServedView | None
    """With ``--server``: the server's model, which ``/model`` switches there."""

    @property
    def session_allowed(self) -> frozenset[ApprovalKind]: ...

    @property
    def session_tools(self) -> list[str]: ...

    async def push_screen_wait(self, screen: Screen[Any]) -> Any: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    async def action_quit(self) -> None: ...

    def save_theme(self, name: str) -> None: ...

    def show_model(self) -> None: ...

    def use_runner(self, runner: SessionRunner | None) -> None: ...

    async def open_session(self, session_id: str) -> bool: ...

    async def paint_session(self, session_id: str, *, repaint: bool = False) -> int: ...

    def resume_when_ready(self, session_id: str) -> None:
        """Open ``session_id`` once the engine is, in place of the one dcode was started with."""


class SlashCommands:
    """What each slash command does, for ``DcodeApp``."""

    def __init__(self, host: CommandsHost, session: SessionWork) -> None:
        self.host = host
        self.session = session

    @property
    def transcript(self) -> Transcript:
        return self.host.transcript

    async def run(self, invocation: Invocation) -> None:
        host = self.host
        try:
            await self._dispatch(invocation)
        finally:
            if invocation.command.holds_session:  # it held the session as a turn does
                host.busy = False
                if host.is_running:  # not when the app is closing under it
                    self.session.pump()

    async def _dispatch(self, invocation: Invocation) -> None:
        name, args = invocation.command.name, invocation.args
        match name:
            case "help":
                self._show_help()
            case "quit":
                await self.host.action_quit()
            case "theme":
                self.change_theme()
            case "copy":
                self._copy_last_answer()
            case "approve":
                await self._set_mode_from(args)
            case "plan":
                await self._plan(args)
            case "sandbox":
                await self._set_sandbox_from(args)
            case "model":
                await self._switch_model(args)
            case "effort":
                await self._set_effort(args)
            case "offload":
                await self._offload(args)
            case "rewind":
                await self._rewind()
            case "context":
                await self._show_context()
            case "cost":
                await self._show_cost()
            case "budget":
                await self._budget(args)
            case "agents":
                await self._show_agents()
            case "mcp":
                self._show_mcp()
            case "permissions":
                await self._permissions(args)
            case "hooks":
                await self._show_hooks()
            case "clear":
                await self.new_session()
            case "resume":
                await self._pick_session()
            case "paste":
                media = self.session.media
                assert media is not None  # installed as the prompt mounted
                await media.paste(self.host.prompt_input.area, say_if_empty=True)

    def _show_help(self) -> None:
        from dcode.tui.screens.help import HelpScreen

        custom = self.host.prompt_commands
        self.host.push_screen(
            HelpScreen(
                commands.help_entries(),
                list(commands.KEYS),
                commands.custom_entries(custom),
                custom.problems,
            )
        )

    def change_theme(self) -> None:
        from dcode.tui.screens.theme import ThemeScreen

        def chosen(name: str | None) -> None:
            if name:
                self.host.save_theme(name)
            self.host.prompt_input.focus()

        self.host.push_screen(ThemeScreen(), callback=chosen)

    def _copy_last_answer(self) -> None:
        self.host.run_worker(self._copy_answer, name="_copy_last_answer", group="clipboard")

    async def _copy_answer(self) -> None:
        text = self.transcript.last_answer()
        if not text:
            self.host.notify("nothing to copy yet", severity="warning")
            return

        def copy() -> bool:
            try:
                import pyperclip

                pyperclip.copy(text)
                return True
            except Exception:  # noqa: BLE001 - no clipboard tool; fall back to OSC 52
                return False

        if not await asyncio.to_thread(copy):
            self.host.copy_to_clipboard(text)
        self.host.notify(f"copied the last answer ({len(text):,} characters)")

    async def _set_mode_from(self, args: str) -> None:
        """``/approve MODE`` sets the mode and withdraws the session's "yes for the session"
        answers, so the mode named is exactly what holds; ``/approve`` alone says what holds."""
        from dcode.tui.status import MODE_LABELS, mode_label

        word = args.strip().lower()
        if not word:
            await self.transcript.notice(
                f"approval mode is {mode_label(self.host.mode, self.host.session_allowed, self.host.session_tools, self.host.sandbox.on)} · /approve manual, edits, all or plan sets it"
            )
            return
        try:
            mode = ApprovalMode(word)
        except ValueError:
            await self.transcript.notice(
                f"/approve takes manual, edits, all or plan (now: {self.host.mode.value})",
                NoticeLevel.WARNING,
            )
            return
        withdrawn = [
            kind.value for kind in sorted(self.host.session_allowed)
        ] + self.host.session_tools
        if self.host.runner is not None:
            self.host.runner.policy.session_allowed.clear()
            self.host.runner.policy.session_tools.clear()
        self.host.set_mode(mode)
        line = f"approval mode set to {MODE_LABELS[mode]}"
        if withdrawn:
            line += f" · the session's yes to {' and '.join(withdrawn)} is withdrawn"
        await self.transcript.notice(line)

    async def _plan(self, task: str) -> None:
        """``/plan [TASK]``: plan mode, and TASK sent as the prompt to plan (after the turn
        running, if one is)."""
        from dcode.tui.status import MODE_LABELS

        if self.host.mode is not ApprovalMode.PLAN:
            self.host.set_mode(ApprovalMode.PLAN)
            await self.transcript.notice(f"approval mode set to {MODE_LABELS[ApprovalMode.PLAN]}")
        if task.strip():
            self.session.submit(Pending(task.strip(), draft=None))

    async def _set_sandbox_from(self, args: str) -> None:
        """``/sandbox MODE`` or ``/sandbox network on|off`` for the rest of this run (the
        config's ``[sandbox]`` is the default next time); alone, what holds and whether it can
        start here. Turning it on where it cannot start says so at once: commands are refused."""
        from dcode.sandbox.modes import SandboxMode
        from dcode.sandbox.probe import availability

        words = args.strip().lower().split()
        current = self.host.sandbox.settings
        match words:
            case []:
                chosen = current
            case ["network", ("on" | "off") as state]:
                chosen = replace(current, network=state == "on")
            case [word] if word in {mode.value for mode in SandboxMode}:
                chosen = replace(current, mode=SandboxMode(word))
            case _:
                await self.transcript.notice(
                    f"/sandbox takes workspace-write, read-only, off, or network on|off (now: {current.describe()})",
                    NoticeLevel.WARNING,
                )
                return
        self.host.sandbox.settings = chosen
        self.host.status.sandbox = chosen.describe() if chosen.on else ""
        found = await asyncio.to_thread(availability)
        verb = "is" if not words else "set to"
        if chosen.on and not found.works:
            await self.transcript.notice(
                f"sandbox {verb} {chosen.describe()}, but shell commands are refused: {found.problem}",
                NoticeLevel.WARNING,
            )
        elif chosen.on:
            await self.transcript.notice(
                f"sandbox {verb} {chosen.describe()} ({found.kind}) · /sandbox off turns it off"
            )
        else:
            where = "available here" if found.works else f"not available here: {found.problem}"
            await self.transcript.notice(
                f"sandbox {verb} off ({where}) · /sandbox workspace-write turns it on"
            )

    async def _switch_model(self, spec: str) -> None:
        assert self.host.engine is not None
        if not spec:
            await self._pick_model()
            return
        if self.host.served is not None:  # the runs are the server's: its model answers them
            await self.host.served.switch_model(spec)
            return
        try:
            resolved = await asyncio.to_thread(self.host.engine.switch_model, spec)
        except ConfigError as exc:
            await self.transcript.notice(str(exc), NoticeLevel.ERROR)
            return
        self.host.show_model()
        await self.transcript.notice(f"switched to {resolved.spec}; the conversation continues")

    async def _set_effort(self, word: str) -> None:
        """``/effort LEVEL`` asks later turns for that reasoning effort (``default``: the
        model's own); ``/effort`` alone says what is asked now."""
        from dcode.settings.config import ReasoningEffort

        assert self.host.engine is not None
        levels = " · ".join(level.value for level in ReasoningEffort)
        word = word.strip().lower()
        if not word:
            served = self.host.served  # attached: what the server's model is asked for
            current = (
                self.host.engine.resolved.profile.reasoning_effort
                if served is None
                else served.model.effort
                if served.model is not None
                else None
            )
            said = (
                f"reasoning effort is {current}"
                if current
                else "no reasoning effort is asked for: the provider's default applies"
            )
            await self.transcript.notice(f"{said} · /effort {levels} or default")
            return
        if word != "default" and word not in {level.value for level in ReasoningEffort}:
            await self.transcript.notice(
                f"/effort takes {levels} or default, not {word!r}", NoticeLevel.WARNING
            )
            return
        effort = None if word == "default" else ReasoningEffort(word)
        if self.host.served is not None:  # the runs are the server's: its model reasons
            await self.host.served.set_effort(effort.value if effort else None)
            return
        try:
            resolved = await asyncio.to_thread(self.host.engine.set_effort, effort)
        except ConfigError as exc:
            await self.transcript.notice(str(exc), NoticeLevel.ERROR)
            return
        self.host.show_model()
        now = resolved.profile.reasoning_effort
        await self.transcript.notice(
            f"reasoning effort for {resolved.spec}: {now}"
            if now
            else f"{resolved.spec} reasons as the provider does by default"
        )

    async def _pick_model(self) -> None:
        """``/model`` alone: a picker of recent, configured and preset models."""
        from dcode.models.choices import model_choices
        from dcode.tui.screens.model import ModelScreen

        assert self.host.engine is not None
        engine = self.host.engine
        try:
            recent = [info.model for info in await asyncio.to_thread(engine.store.list)]
        except Exception as exc:  # noqa: BLE001 - the presets and the config still make a list
            recent = []
            self.host.notify(
                f"could not read the recent sessions' models: {exc}",
                severity="warning",
                markup=False,
            )
        choices = await asyncio.to_thread(
            model_choices, engine.settings, recent, default=self.host.settings.model
        )

        def chosen(spec: str | None) -> None:
            self.host.prompt_input.focus()
            if not spec:
                return
            if spec.endswith(":"):
                self.session.prefill_prompt(
                    f"/model {spec}"
                )  # the model name is the user's to type
                return
            self.session.run_slash(Invocation(commands.BY_NAME["model"], spec))

        self.host.push_screen(ModelScreen(choices, current=engine.resolved.spec), callback=chosen)

    async def _show_context(self) -> None:
        from dcode.tui.screens.context import ContextScreen

        assert self.host.engine is not None
        try:
            report = await self.host.engine.context_report(
                self.host.runner.session_id if self.host.runner else None
            )
        except Exception as exc:  # noqa: BLE001 - one line; nothing else depends on it
            await self.transcript.notice(f"could not count the context: {exc}", NoticeLevel.ERROR)
            return
        self.host.push_screen(ContextScreen(report, self.host.engine.resolved.spec))

    async def _show_cost(self) -> None:
        """``/cost``: what the session spent, by model and by agent (``usage_lines``)."""
        from dcode.agent.budget import usage_lines

        runner = self.host.runner
        try:
            rows = await runner.usage() if runner is not None else []
        except Exception as exc:  # noqa: BLE001 - one line (a served session's server is down)
            await self.transcript.notice(f"could not read the usage: {exc}", NoticeLevel.ERROR)
            return
        await self.transcript.notice("\n".join(usage_lines(rows)))

    async def _budget(self, args: str) -> None:
        """``/budget``: where the session stands against its limits; ``/budget 5`` or
        ``/budget 200k tokens`` sets one for the rest of the session, and a turn the budget
        ended goes on once it is below its limits again."""
        from dcode.agent.budget import Limits, SessionBudget, budget_line, raised_limits

        engine, runner = self.host.engine, self.host.runner
        assert engine is not None
        settings = engine.settings
        limits = (
            runner.limits
            if runner is not None
            else Limits(settings.budget_usd, settings.budget_tokens)
        )
        if args.strip():
            try:
                limits = raised_limits(limits, args)
            except ValueError as exc:
                await self.transcript.notice(str(exc), NoticeLevel.WARNING)
                return
        if runner is None:  # no session yet: its first prompt starts it with these
            engine.settings = replace(settings, budget_usd=limits.usd, budget_tokens=limits.tokens)
        else:
            runner.limits = limits
        try:
            budget = await runner.budget() if runner is not None else SessionBudget(limits)
        except Exception as exc:  # noqa: BLE001 - one line (a served session's server is down)
            await self.transcript.notice(f"could not read the budget: {exc}", NoticeLevel.ERROR)
            return
        self.host.status.budget = budget.level()
        await self.transcript.notice(budget_line(budget))
        stopped = runner is not None and self.session.stopped_at_budget == runner.session_id
        if args.strip() and stopped and not budget.reached():
            await self.transcript.notice("going on with the turn the budget ended")
            self.session.go_on()

    async def _show_agents(self) -> None:
        from dcode.agent.subagents.definitions import catalog_for
        from dcode.tui.screens.agents import AgentsScreen

        catalog = await asyncio.to_thread(catalog_for, self.host.settings)
        self.host.push_screen(AgentsScreen(catalog))

    async def _show_hooks(self) -> None:
        """``/hooks``: each hook with its source and last result."""
        from dcode.agent.hooks.listing import describe_hooks

        assert self.host.engine is not None
        lines = describe_hooks(self.host.engine.hooks, self.host.settings.skipped_hooks)
        await self.transcript.notice("\n".join(lines))

    async def _permissions(self, args: str) -> None:
        """``/permissions``: the rules and recent denials; ``/permissions remove RULE``."""
        from dcode.agent.permissions.listing import describe_permissions
        from dcode.agent.permissions.load import drop_rule

        assert self.host.engine is not None
        rules = self.host.engine.rules
        verb, _, rest = args.strip().partition(" ")
        if verb == "remove" and rest.strip():
            await self.transcript.notice(await asyncio.to_thread(drop_rule, rules, rest))
            return
        if verb:
            await self.transcript.notice(
                "/permissions lists the rules; /permissions remove RULE removes one",
                NoticeLevel.WARNING,
            )
            return
        denials = self.host.runner.policy.denials if self.host.runner is not None else []
        await self.transcript.notice(
            "\n".join(describe_permissions(rules, self.host.settings.waiting_rules, denials))
        )

    def _show_mcp(self) -> None:
        from dcode.tui.screens.mcp import McpScreen

        assert self.host.engine is not None
        self.host.push_screen(McpScreen(self.host.engine.mcp))

    async def _offload(self, focus: str = "") -> None:
        """Compact the session now; what happened shows as the window's compaction does: the
        messages summarized, the tokens before → after, what stays verbatim and the archive
        (a click opens it), or why it was refused. It holds the session while it runs, and
        while a turn runs it waits in the queue (``holds_session``)."""
        if self.host.runner is None:
            await self.transcript.notice("nothing to compact yet: no conversation in this session")
            return
        self.host.status.activity = "Compacting"
        try:
            events = await self.host.runner.compact(focus)
            for event in events:
                await self.session.apply(event)
            if any(isinstance(event, CompactionFinished) for event in events):
                await self._show_next_request_size()
        except Exception as exc:  # noqa: BLE001 - one line, the session stays as it was
            await self.transcript.notice(
                f"could not compact the conversation: {exc}", NoticeLevel.ERROR
            )
        finally:
            if self.host.is_running:  # not when the app is closing under it
                self.host.status.activity = ""

    async def _show_next_request_size(self) -> None:
        """The status bar's context figure, now: what the next request will hold (estimated,
        as ``/context`` counts it), rather than the last request's until the next turn."""
        engine, runner = self.host.engine, self.host.runner
        if engine is None or runner is None:
            return
        try:
            report = await engine.context_report(runner.session_id)
        except Exception:  # noqa: BLE001 - a figure, not worth a line: the next turn reports it
            return
        if self.host.is_running:  # not when the app is closing under it
            self.host.status.set_usage(report.used, report.window, estimated=True)

    async def _rewind(self) -> None:
        """Pick a prompt, then what to take back to before it; the transcript is painted again
        from the thread, and the prompt goes back into the input to be edited and sent anew.
        It runs as a worker holding the session (``holds_session``), so it may wait on its screens."""
        from dcode.agent.rewind.conversation import RewindError
        from dcode.tui.screens.rewind import (
            CODE,
            CONVERSATION,
            RewindChoiceScreen,
            RewindScreen,
        )

        assert self.host.engine is not None
        runner = self.host.runner
        turns = await runner.turns() if runner is not None else []
        if runner is None or not turns:
            await self.transcript.notice("nothing to rewind yet: no prompt in this session")
            return
        picked = await self.host.push_screen_wait(RewindScreen(turns))
        turn = next((t for t in turns if str(t.id) == picked), None)
        if turn is None:
            self.host.prompt_input.focus()
            return
        shown = self.host.engine.backend.display_path
        choice = await self.host.push_screen_wait(
            RewindChoiceScreen(turn, await runner.code_plan(turn), shown=shown)
        )
        self.host.prompt_input.focus()
        if choice is None:
            return
        self.host.status.activity = "Rewinding"
        try:
            outcome = await runner.rewind(
                turn, conversation=choice != CODE, code=choice != CONVERSATION
            )
        except RewindError as exc:
            await self.transcript.notice(f"could not rewind: {exc}", NoticeLevel.ERROR)
            return
        finally:
            if self.host.is_running:
                self.host.status.activity = ""
        if outcome.messages_left is not None:
            await self.host.paint_session(
                runner.session_id, repaint=True
            )  # what is painted is the thread before the rewind
            report = await self.host.engine.context_report(runner.session_id)
            self.host.status.set_usage(report.used, report.window)
            self.host.prompt_input.restore_sent(turn.prompt)
        first, *rest = outcome.lines(shown)
        await self.transcript.notice(first)
        for line in rest:
            await self.transcript.notice(line, NoticeLevel.WARNING)

    def open_path(self, path: str) -> None:
        """A click on a notice's file (a conversation archive): the file, read-only."""
        from dcode.tui.screens.file_view import FileViewScreen

        self.host.push_screen(FileViewScreen(Path(path)))

    async def new_session(self) -> None:
        self.host.use_runner(None)  # the next prompt starts (and takes) a new session
        self.host.show_mode()  # a new session starts without the old one's "yes for the session"
        await self.transcript.clear()
        self.host.status.set_usage(0, self.host.status.max_tokens)
        self.host.status.cost = self.host.status.cached_share = None
        await self.transcript.notice("new session")

    async def _pick_session(self) -> None:
        from dcode.agent.store import open_store
        from dcode.agent.store.base import SessionDatabaseError

        store = (
            self.host.engine.store
            if self.host.engine is not None
            else open_store(self.host.settings)
        )
        from dcode.tui.screens.resume import ResumeScreen

        try:
            sessions = await asyncio.to_thread(store.list)
        except SessionDatabaseError as exc:
            await self.transcript.notice(str(exc), NoticeLevel.ERROR)
            return

        async def chosen(session_id: str | None) -> None:
            if not session_id:
                self.host.prompt_input.focus()
                return
            if self.host.busy:
                self.session.submit(Pending(f"/resume {session_id}"))
                return
            if self.host.engine is None:
                self.host.resume_when_ready(session_id)
                return
            await self.host.open_session(session_id)
            self.host.prompt_input.focus()

        self.host.push_screen(ResumeScreen(sessions), callback=chosen)
