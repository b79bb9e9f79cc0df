"""``/context``: where the next request's tokens go, category by category."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from dcode.context.accounting import ContextReport, Spend
from dcode.terminal_text import safe_text

BAR_WIDTH = 24


def _bar(tokens: int, window: int, style: str) -> Content:
    cells = round(BAR_WIDTH * tokens / window) if window else 0
    if tokens and not cells:
        cells = 1  # something, however small, shows
    return Content.assemble(("█" * cells, style), ("·" * (BAR_WIDTH - cells), "$text-muted"))


def report_lines(report: ContextReport) -> Content:
    """The report as aligned lines: a bar, the tokens (``~`` marks an estimate) and the share
    of the window for each category (and under it, each of its parts: the memory files read),
    then the totals and what is left."""
    rows: list[tuple[str, int, str, str, bool]] = []
    for category in report.categories:
        # A detail may name a project's files, skills or servers.
        rows.append(
            (safe_text(category.name), category.tokens, safe_text(category.detail), "$accent", True)
        )
        rows += [
            (safe_text(f"  {part.name}"), part.tokens, safe_text(part.detail), "$text-muted", True)
            for part in category.parts
        ]
    rows += [
        (
            "free before compaction",
            report.before_compaction,
            f"until {report.trigger:,}",
            "$success",
            True,
        ),
        (
            "reserve",
            report.reserve,
            f"past {round(100 * report.trigger / max(report.window, 1))}%",
            "$warning",
            False,
        ),
    ]
    width = max(len(name) for name, *_ in rows) + 2
    lines = []
    for name, tokens, detail, style, estimated in rows:
        share = f"{100 * tokens / report.window:5.1f}%" if report.window else ""
        figure = f"{'~' if estimated else ' '}{tokens:,}".rjust(9)
        lines.append(
            Content.assemble(
                (name.ljust(width), "$foreground"),
                _bar(tokens, report.window, style),
                " ",
                (figure, "bold"),
                f"  {share}  ",
                (detail, "$text-muted"),
            )
        )
    return Content("\n").join(lines)


def summary_line(report: ContextReport, model: str) -> Content:
    used = f"~{report.used:,} of {report.window:,} tokens estimated for the next request"
    if report.reported is not None:
        provider = f"; the provider reported {report.reported:,} input tokens for the last one"
        if report.cached:
            provider += f" ({report.cached:,} of them from its prompt cache)"
    else:
        provider = "; no request has been sent yet"
    compacted = " · older messages are sent as a summary (/offload)" if report.compacted else ""
    return Content.assemble(
        (safe_text(model), "bold"), f" · {used}{provider}", (compacted, "$text-muted")
    )


def spend_line(spend: Spend, label: str = "This session") -> Content:
    """The session's tokens as reported, the cached part of its input, and their cost."""
    tokens = f"{label}: {spend.input_tokens:,} input tokens ({spend.cached_tokens:,} cached) · {spend.output_tokens:,} output"
    if spend.cost is None:
        return Content.assemble(tokens, (" · no price known for this model", "$text-muted"))
    note = ""
    if spend.cached_tokens and not spend.cached_priced:
        note = " · cached input priced as other input (no cached price known for this model)"
    return Content.assemble(tokens, " · ", (f"${spend.cost:,.4f}", "bold"), (note, "$text-muted"))


class ContextScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ContextScreen {
        align: center middle;
    }
    ContextScreen > #context-dialog {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 85%;
        border: round $primary;
        background: $surface;
        padding: 0 2;
    }
    ContextScreen #context-title {
        text-style: bold;
        color: $primary;
        margin: 1 0 0 0;
    }
    ContextScreen #context-summary, ContextScreen #context-hint {
        margin: 1 0 0 0;
    }
    ContextScreen #context-hint {
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
    ]

    def __init__(self, report: ContextReport, model: str) -> None:
        super().__init__()
        self.report = report
        self.model = model

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="context-dialog"):
            yield Label("Context", id="context-title")
            yield Static(summary_line(self.report, self.model), id="context-summary")
            if self.report.spend is not None:
                yield Static(spend_line(self.report.spend), id="context-spend")
                if self.report.spend.subagents is not None:
                    yield Static(
                        spend_line(self.report.spend.subagents, "  of which subagents"),
                        id="context-subagents",
                    )
            yield Static(report_lines(self.report), id="context-table")
            how = f" {self.report.counting}" if self.report.counting else ""
            yield Static(
                f"~ marks dcode's estimate.{how}\nEsc or q to close",
                id="context-hint",
                markup=False,
            )

    def action_close(self) -> None:
        self.dismiss(None)
