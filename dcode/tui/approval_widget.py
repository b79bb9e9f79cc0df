"""The inline approval: a question inside the transcript, answered with one key.

``y`` approves; ``a`` approves this kind (edits, shell, web fetches) for the rest of the
session, or, for a tool dcode does not know, that tool; ``s``, for an MCP tool, every tool of its
server; ``p`` and ``e``, when the question offers a rule (``Bash(npm test *)``), approve and keep
that rule for this project or everywhere; ``n`` rejects; Tab opens a one-line input whose text the
model reads as the reason; Esc rejects and stops the turn. The widget resolves the core's future itself and
tells the app what happened. A subagent's question names the agent that asks; when several are
open at once (parallel subagents), they are answered one after the other, the keys going to
the next as each is settled.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static

from dcode.agent.approval import ApprovalDecision, ToolOrigin
from dcode.agent.events import ApprovalKind, ApprovalRequested
from dcode.settings.web_address import canonical_url
from dcode.terminal_text import safe_text
from dcode.tui.transcript.diff import render_diff

DIFF_LINES = 40
ARGS_LINES = 12
ARG_CHARS = 300
URL_CHARS = 2000

# What the question is about, and what ``a`` allows: by approval kind (a tool dcode does not
# know: that tool, see ``origin``).
SUBJECTS: dict[ApprovalKind, tuple[str, str]] = {
    ApprovalKind.EDIT: ("edit", "edits"),
    ApprovalKind.SHELL: ("shell command", "shell commands"),
    ApprovalKind.FETCH: ("web fetch", "web fetches"),
    ApprovalKind.TOOL: ("tool call", "this tool"),
    ApprovalKind.PLAN: ("plan", "plans"),  # asked by ``plan_widget.PlanQuestion``
}


def origin(request: ApprovalRequested) -> ToolOrigin | None:
    """The tool a question about a tool dcode does not know is about (None for other kinds)."""
    if request.kind is not ApprovalKind.TOOL:
        return None
    return (
        ToolOrigin(request.mcp_server, request.mcp_tool)
        if request.mcp_server
        else ToolOrigin("", request.tool)
    )


def granted(request: ApprovalRequested, decision: ApprovalDecision) -> str:
    """What a "yes for the session" to ``request`` allows, as ``[mcp] allow`` spells it
    (``calc__add``, ``calc__*``); "" for the other kinds (the mode line shows them)."""
    tool = origin(request)
    return tool.rule(whole_server=decision.whole_server) if tool and decision.remember else ""


class ApprovalWidget(Vertical, can_focus=True):
    DEFAULT_CSS = """
    ApprovalWidget {
        height: auto;
        margin: 0 0 0 2;
        padding: 0 1;
        border: round $warning;
        border-title-color: $text-warning;
        background: $warning-muted 20%;
    }
    ApprovalWidget:focus {
        border: round $accent;
        border-title-color: $text-accent;
    }
    ApprovalWidget .approval-reason { color: $text-muted; }
    ApprovalWidget .approval-command {
        background: $surface;
        color: $text;
        padding: 0 1;
        margin: 0 0 1 0;
    }
    ApprovalWidget .approval-diff { margin: 0 0 1 0; }
    ApprovalWidget .approval-keys { color: $text-muted; }
    ApprovalWidget Input { display: none; margin: 0; }
    ApprovalWidget.-feedback Input { display: block; }
    ApprovalWidget.-feedback .approval-keys { display: none; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "approve", "Yes", show=False),
        Binding("a", "approve_session", "Yes for the session", show=False),
        Binding("s", "approve_server", "Yes to the server's tools for the session", show=False),
        Binding("p", "keep_rule(False)", "Yes, and always allow this in this project", show=False),
        Binding("e", "keep_rule(True)", "Yes, and always allow this everywhere", show=False),
        Binding("n", "reject", "No", show=False),
        Binding("tab", "feedback", "No, with feedback", show=False, priority=True),
        Binding("escape", "stop", "Stop", show=False),
    ]

    @dataclass
    class Decided(Message):
        widget: ApprovalWidget
        call_id: str
        decision: ApprovalDecision
        stop_turn: bool = False

    @dataclass
    class StrayKey(Message):
        """A printable key that arrived before the widget was armed; it was meant for the prompt."""

        character: str

    def __init__(
        self,
        request: ApprovalRequested,
        future: asyncio.Future[ApprovalDecision],
        *,
        arm_delay: float = 0.0,
        asker: str = "",
    ) -> None:
        super().__init__(classes=f"-{request.kind.value}")
        self.request = request
        self.future = future
        self._armed_at = time.monotonic() + arm_delay
        question = f"Allow this {SUBJECTS[request.kind][0]}?"
        # A subagent's question names it: "task:1 · general-purpose asks: allow this edit?"
        asks = (
            f"{safe_text(asker)} asks: {question[0].lower()}{question[1:]}" if asker else question
        )
        self.border_title = Content(asks)  # not markup: an agent's name is the model's

    def compose(self) -> ComposeResult:
        request = self.request
        head = Content.assemble(
            (safe_text(request.summary or request.tool), "bold"),
            ("  " + safe_text(request.reason), "$text-muted"),
        )
        yield Static(head, classes="approval-reason")
        match request.kind:
            case ApprovalKind.SHELL:
                command = str(request.args.get("command") or request.summary)
                yield Static(
                    Content.styled(f"$ {safe_text(command)}", "bold"), classes="approval-command"
                )
            case (
                ApprovalKind.FETCH
            ):  # the whole URL, as it would be fetched: what it carries is what is being approved
                written = str(request.args.get("url") or request.summary)
                url = canonical_url(written) or written
                if len(url) > URL_CHARS:  # a URL this long is a message of its own: say so
                    url = f"{url[:URL_CHARS]}… ({len(url) - URL_CHARS:,} more characters)"
                yield Static(
                    Content.styled(f"GET {safe_text(url)}", "bold"), classes="approval-command"
                )
            case ApprovalKind.TOOL:
                yield Static(Content(_arguments(request.args)), classes="approval-command")
            case _ if request.diff:
                yield Static(render_diff(request.diff, DIFF_LINES), classes="approval-diff")
        yield Static(Content.assemble(*self._keys()), classes="approval-keys")
        yield Input(placeholder="Tell the model what to do instead, then Enter (Esc to go back)")

    def _keys(self) -> list[tuple[str, str] | str]:
        """The answers: ``a`` names what it allows; ``s`` is there for an MCP tool only."""
        tool = origin(self.request)
        allowed = SUBJECTS[self.request.kind][1] if tool is None else tool.rule()
        yes = "bold $text-success"
        if (
            self.request.every_time
        ):  # an ask rule, a settings file, outside the sandbox: asked each time
            return [
                ("y", yes),
                " yes, this once   ",
                ("n", "bold $text-error"),
                " no   ",
                ("tab", "bold $text-warning"),
                " no, and say why   ",
                ("esc", "bold"),
                " stop",
            ]
        keys: list[tuple[str, str] | str] = [
            ("y", yes),
            " yes   ",
            ("a", yes),
            f" yes, and allow {allowed} for this session   ",
        ]
        if tool is not None and tool.server:
            keys += [("s", yes), f" yes, and all of {tool.server}'s tools   "]
        if rule := self.request.suggestion:
            keys += [
                "\n",
                ("p", yes),
                f" always allow {safe_text(rule)} in this project   ",
                ("e", yes),
                " …everywhere\n",
            ]
        return [
            *keys,
            ("n", "bold $text-error"),
            " no   ",
            ("tab", "bold $text-warning"),
            " no, and say why   ",
            ("esc", "bold"),
            " stop",
        ]

    @property
    def decided(self) -> bool:
        return self.future.done()

    def _armed(self) -> bool:
        """Keys typed into the prompt a moment before the question appeared must not answer it."""
        return time.monotonic() >= self._armed_at

    def on_key(self, event: events.Key) -> None:
        if (
            not self._armed()
            and event.is_printable
            and event.character
            and not self.has_class("-feedback")
        ):
            event.stop()
            event.prevent_default()
            self.post_message(self.StrayKey(event.character))

    def decide(self, decision: ApprovalDecision, *, stop_turn: bool = False) -> None:
        if self.future.done():
            return
        self.future.set_result(decision)
        self.post_message(self.Decided(self, self.request.call_id, decision, stop_turn))

    def action_approve(self) -> None:
        if self._armed():
            self.decide(ApprovalDecision(True))

    def action_approve_session(self) -> None:
        if self._armed() and not self.request.every_time:
            self.decide(ApprovalDecision(True, remember=True))

    def action_approve_server(self) -> None:
        tool = origin(self.request)
        if self._armed() and tool is not None and tool.server and not self.request.every_time:
            self.decide(ApprovalDecision(True, remember=True, whole_server=True))

    def action_keep_rule(self, everywhere: bool) -> None:
        if self._armed() and self.request.suggestion:
            self.decide(
                ApprovalDecision(True, save_rule=self.request.suggestion, everywhere=everywhere)
            )

    def action_reject(self) -> None:
        if self._armed():
            self.decide(ApprovalDecision(False))

    def with_feedback(self, feedback: str) -> ApprovalDecision:
        """The answer the text typed after Tab gives."""
        return ApprovalDecision(False, feedback)

    def action_feedback(self) -> None:
        if self.has_class("-feedback"):
            self.query_one(Input).focus()
            return
        self.add_class("-feedback")
        self.query_one(Input).focus()

    def action_stop(self) -> None:
        if self.has_class("-feedback"):
            self.remove_class("-feedback")
            self.focus()
            return
        self.decide(ApprovalDecision(False, "the user stopped the turn"), stop_turn=True)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if not self.has_class("-feedback"):
            self.focus()

    @on(Input.Submitted)
    def _send_feedback(self, event: Input.Submitted) -> None:
        event.stop()
        self.decide(self.with_feedback(event.value.strip()))


def open_approvals(root: Widget) -> list[ApprovalWidget]:
    """The questions under ``root`` still waiting for an answer, top first."""
    return [widget for widget in root.query(ApprovalWidget) if not widget.decided]


def _arguments(args: dict[str, object]) -> str:
    """An unknown tool's arguments, whole enough to judge: one ``key: value`` line each."""
    lines = [
        _clip(f"{key}: {json.dumps(value, ensure_ascii=False, default=str)}")
        for key, value in args.items()
    ]
    lines = lines or ["(no arguments)"]
    if len(lines) > ARGS_LINES:
        lines = [*lines[:ARGS_LINES], f"… {len(lines) - ARGS_LINES} more arguments"]
    return safe_text("\n".join(lines))


def _clip(line: str) -> str:
    return line if len(line) <= ARG_CHARS else f"{line[: ARG_CHARS - 1]}…"
