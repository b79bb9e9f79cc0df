"""The status bar: what the agent is doing, what it may do, and what it costs.

Line 1: activity (a spinner with elapsed seconds and tokens streamed while a turn runs, the
queued count) on the left; ``Context N% · X tokens`` and the session cost on the right.
Line 2: the approval mode (with what is approved for the rest of the session: kinds, ``manual
+shell``, and MCP tools or servers, ``+calc__add``, ``+web__*``), the sandbox when it is on, and
the model on the left; cwd and git branch on the right.

The clock and the spinner are injectable so snapshot tests see the same frame every time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from textual.app import RenderResult
from textual.content import Content
from textual.reactive import reactive, var
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from dcode.agent.events import ApprovalKind
from dcode.regular_files import read_regular
from dcode.settings.config import ApprovalMode
from dcode.terminal_text import safe_text

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

# What each mode asks about, by approval kind; a kind answered "yes for the session" drops out.
# A tool dcode does not know (an MCP tool) asks in both; ``a`` on one allows that tool alone,
# shown as a tag of its own, so "other tools" stays in the list.
_STILL_ASKS: dict[ApprovalMode, tuple[tuple[ApprovalKind, str], ...]] = {
    ApprovalMode.MANUAL: (
        (ApprovalKind.EDIT, "edits"),
        (ApprovalKind.SHELL, "shell"),
        (ApprovalKind.FETCH, "web fetches"),
        (ApprovalKind.TOOL, "other tools"),
    ),
    ApprovalMode.EDITS: (
        (ApprovalKind.EDIT, "edits outside the workspace"),
        (ApprovalKind.SHELL, "shell"),
        (ApprovalKind.FETCH, "web fetches"),
        (ApprovalKind.TOOL, "other tools"),
    ),
}


def _asks(
    mode: ApprovalMode, allowed: Collection[ApprovalKind] = (), sandboxed: bool = False
) -> str:
    if sandboxed and mode is ApprovalMode.EDITS:  # sandboxed commands run unasked in edits
        allowed = {*allowed, ApprovalKind.SHELL}
    asks = [what for kind, what in _STILL_ASKS.get(mode, ()) if kind not in allowed]
    if not asks:
        return (
            "approve everything"
            if mode is ApprovalMode.ALL
            else "no questions for the rest of the session"
        )
    listed = f"{', '.join(asks[:-1])} and {asks[-1]}" if len(asks) > 1 else asks[0]
    return f"ask before {listed}"


PLAN_LABEL = "plan: read only, until you approve a plan"

MODE_LABELS: dict[ApprovalMode, str] = {
    mode: f"{mode.value}: {_asks(mode)}" for mode in ApprovalMode
} | {ApprovalMode.PLAN: PLAN_LABEL}


SHOWN_TOOLS = 2
_GIT_FILE_BYTES = 4096  # a HEAD or a gitdir line; a longer one is cut, never read whole
"""Tools and servers tagged one by one; more are counted."""


def mode_label(
    mode: ApprovalMode,
    allowed: Collection[ApprovalKind] = (),
    tools: Sequence[str] = (),
    sandboxed: bool = False,
) -> str:
    """The mode as the status bar shows it. The kinds answered "yes for the session" (``a`` at
    an approval) are tagged, ``manual +shell``, and drop out of what the mode asks about; so are
    the tools dcode does not know and the MCP servers answered so (``tools``, as ``[mcp] allow``
    spells them: ``+calc__add``, ``+web__*``). ``all`` asks about nothing, so it has no tags;
    ``plan`` refuses what they allow, so it has none either. ``sandboxed``: the shell runs in
    the sandbox, which ``edits`` does not ask about."""
    if mode is ApprovalMode.PLAN:
        return PLAN_LABEL
    kinds = sorted(allowed) if mode is not ApprovalMode.ALL else []
    tools = tools if mode is not ApprovalMode.ALL else ()
    if not kinds and not tools and not sandboxed:
        return MODE_LABELS[mode]
    tags = "".join(f" +{kind.value}" for kind in kinds) + tool_tags(tools)
    return f"{mode.value}{tags}: {_asks(mode, allowed, sandboxed)}"


def tool_tags(tools: Sequence[str]) -> str:
    shown = "".join(f" +{tool}" for tool in tools[:SHOWN_TOOLS])
    more = len(tools) - SHOWN_TOOLS
    return shown + (f" +{more} more" if more > 0 else "")


def _small_text(path: Path) -> str:
    """The head of a small git file. Only a regular file is opened: the repository is the
    user's untrusted input, and a named pipe as its ``.git/HEAD`` would freeze the UI thread."""
    return read_regular(path, _GIT_FILE_BYTES).decode("utf-8", errors="replace").strip()


def read_git_branch(start: Path) -> str | None:
    """The branch checked out at ``start`` (or its short commit when detached), from .git/HEAD.

    A few small file reads, so it is safe on the UI thread; no git subprocess.
    """
    for folder in (start, *start.parents):
        marker = folder / ".git"
        try:
            if marker.is_file():
                line = _small_text(marker)
                if not line.startswith("gitdir:"):
                    return None
                git_dir = Path(line.split(":", 1)[1].strip())
                marker = git_dir if git_dir.is_absolute() else folder / git_dir
            elif not marker.is_dir():
                continue
            head = _small_text(marker / "HEAD")
        except OSError:
            return None
        if head.startswith("ref:"):
            ref = head.split(":", 1)[1].strip()
            return ref.removeprefix("refs/heads/")
        return head[:7] or None
    return None


def display_path(path: Path) -> str:
    home = Path.home()
    try:
        return "~/" + str(path.relative_to(home)) if path != home else "~"
    except ValueError:
        return str(path)


def human_tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 100_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{count / 1_000_000:.1f}M"


def context_label(tokens: int, limit: int | None, estimated: bool = False) -> str:
    """The provider's figure for the last request (``UsageUpdated``), against the window; an
    estimate (the provider sent no figures) is marked ``~``."""
    if tokens <= 0:
        return "Context –"
    about = "~" if estimated else ""
    amount = f"{about}{human_tokens(tokens)} tokens"
    if not limit:
        return f"Context {amount}"
    percent = min(999, round(100 * tokens / limit))
    return f"Context {about}{percent}% · {amount}"


def cost_label(cost: float | None) -> str:
    if cost is None:
        return ""
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


class StatusBar(Widget):
    DEFAULT_CSS = """
    StatusBar {
        height: 2;
        padding: 0 1;
        color: $text-muted;
        background: $background;
    }
    """

    mode: reactive[ApprovalMode] = reactive(ApprovalMode.MANUAL)
    allowed: reactive[frozenset[ApprovalKind]] = reactive(frozenset())
    """The kinds approved for the rest of the session."""
    tools: reactive[tuple[str, ...]] = reactive(())
    """The tools and MCP servers approved for the rest of the session (``calc__add``, ``web__*``)."""
    model: reactive[str] = reactive("")
    sandbox: reactive[str] = reactive("")
    """The sandbox as ``SandboxSettings.describe`` says it; "" while it is off."""
    cwd: reactive[str] = reactive("")
    branch: reactive[str | None] = reactive(None)
    activity: reactive[str] = reactive("")
    context_tokens: reactive[int] = reactive(0)
    max_tokens: reactive[int | None] = reactive(None)
    estimated: reactive[bool] = reactive(False)
    """Whether the context figure is dcode's estimate (the provider reported no usage)."""
    cost: reactive[float | None] = reactive(None)
    budget: reactive[int] = reactive(0)
    """The highest level of the session's budget crossed (50, 80, 100 %); 0: none."""
    cached_share: reactive[float | None] = reactive(None)
    """The part of the last request's input the provider read from its prompt cache."""
    queued: reactive[int] = reactive(0)
    async_tasks: reactive[int] = reactive(0)
    """The session's async tasks running on their servers, as last seen."""
    mcp: reactive[tuple[int, int]] = reactive((0, 0))
    """MCP servers (connected, configured); shown while not all are connected."""
    # Counted on every streamed delta: the spinner's tick repaints it while it turns, so a
    # stream of hundreds of deltas a second does not ask for as many repaints.
    streamed_tokens: reactive[int] = reactive(0, repaint=False)
    busy = var(False, toggle_class="-busy")
    _tick: reactive[int] = reactive(0)

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        animate: bool = True,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._clock = clock
        self._animated = animate
        self._started = 0.0
        self._timer: Timer | None = None

    def start_turn(self) -> None:
        self._started = self._clock()
        self.streamed_tokens = 0
        self.busy = True
        if self._animated and self._timer is None:
            self._timer = self.set_interval(0.1, self._advance)
        self.refresh()

    def end_turn(self) -> None:
        self.busy = False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.refresh()

    def _advance(self) -> None:
        self._tick += 1

    def watch_streamed_tokens(self) -> None:
        if self._timer is None:
            self.refresh()  # no spinner ticking: show the count now

    def set_usage(
        self, context_tokens: int, max_tokens: int | None, estimated: bool = False
    ) -> None:
        self.context_tokens, self.max_tokens, self.estimated = context_tokens, max_tokens, estimated

    def _left_top(self) -> Content:
        parts: list[Content] = []
        if self.busy:
            elapsed = int(self._clock() - self._started)
            frame = SPINNER[self._tick % len(SPINNER)]
            text = f"{frame} {self.activity or 'Working'} · {elapsed}s"
            if self.streamed_tokens:
                text += f" · ↓ {human_tokens(self.streamed_tokens)} tokens"
            parts.append(Content.styled(text, "$accent"))
            parts.append(Content.styled("  esc to interrupt", "$text-muted"))
        elif self.activity:
            parts.append(Content.styled(self.activity, "$text-muted"))
        if self.queued:
            parts.append(Content.styled(f"  {self.queued} queued", "$text-warning"))
        if self.async_tasks:
            parts.append(Content.styled(f"  {self.async_tasks} async running", "$text-accent"))
        return Content("").join(parts) if parts else Content("")

    def _right_top(self) -> Content:
        context = context_label(self.context_tokens, self.max_tokens, self.estimated)
        limit = self.max_tokens or 0
        share = self.context_tokens / limit if limit else 0.0
        style = "$text-error" if share > 0.8 else "$text-warning" if share > 0.6 else "$text-muted"
        pieces = [Content.styled(context, style)]
        connected, configured = self.mcp
        if connected < configured:
            pieces.insert(0, Content.styled(f"MCP {connected}/{configured} · ", "$text-warning"))
        if self.cached_share:
            pieces.append(Content.styled(f" · {self.cached_share:.0%} cached", "$text-muted"))
        cost = cost_label(self.cost)
        if cost:
            pieces.append(Content.styled(f" · {cost}", "$text-muted"))
        if self.budget:
            style = "$text-error" if self.budget >= 100 else "$text-warning"
            pieces.append(Content.styled(f" · budget {self.budget}%", style))
        return Content("").join(pieces)

    def _left_bottom(self, hint: bool = True) -> Content:
        mode_style = {
            ApprovalMode.MANUAL: "$text-primary",
            ApprovalMode.EDITS: "$text-warning",
            ApprovalMode.ALL: "$text-error",
            ApprovalMode.PLAN: "$text-accent",
        }[self.mode]
        return Content.assemble(
            (
                f"⏵ {mode_label(self.mode, self.allowed, self.tools, bool(self.sandbox))}",
                mode_style,
            ),
            (" (shift+tab)" if hint else "", "$text-muted"),
            ("  ", ""),
            (f"sandbox: {self.sandbox}  " if self.sandbox else "", "$text-success"),
            (safe_text(self.model), "$text-secondary"),  # a name a server may have given
        )

    def _right_bottom(self, cwd: bool = True) -> Content:
        text = (self.cwd if cwd else "") + (
            f"  {self.branch}" if self.branch else ""
        )  # a directory's name, .git/HEAD's words
        return Content.styled(safe_text(text.strip()), "$text-muted")

    def _bottom(self, width: int) -> Content:
        """The mode line: all of it when it fits; else without the key hint, then without the
        directory (the header says it), before anything is cut."""
        for hint, cwd in ((True, True), (False, True), (False, False)):
            left, right = self._left_bottom(hint), self._right_bottom(cwd)
            if left.cell_length + right.cell_length + 1 <= width:
                break
        return self._line(left, right, width)

    def _line(self, left: Content, right: Content, width: int) -> Content:
        room = width - left.cell_length - right.cell_length
        if room < 1:
            left = left.truncate(max(0, width - right.cell_length - 1), ellipsis=True)
            room = max(1, width - left.cell_length - right.cell_length)
        line = Content.assemble(left, " " * room, right)
        return line.truncate(width, ellipsis=True) if line.cell_length > width else line

    def render(self) -> RenderResult:
        width = max(10, self.content_size.width)
        top = self._line(self._left_top(), self._right_top(), width)
        bottom = self._bottom(width)
        return Content("\n").join([top, bottom])


class QueuedStrip(Static):
    """Prompts and commands waiting for the turn (or the engine) to finish, oldest first."""

    DEFAULT_CSS = """
    QueuedStrip {
        display: none;
        padding: 0 2;
        color: $text-muted;
        max-height: 6;
    }
    QueuedStrip.-visible { display: block; }
    """

    def show(self, texts: list[str]) -> None:
        self.set_class(bool(texts), "-visible")
        lines = []
        for text in texts:
            first = text.strip().splitlines()[0] if text.strip() else ""
            more = " …" if len(text.strip().splitlines()) > 1 else ""
            lines.append(
                Content.assemble(("⧗ queued ", "$text-warning"), safe_text(first[:200]) + more)
            )
        if len(lines) > 1:
            lines.append(Content.styled("esc removes the last one", "$text-muted italic"))
        elif lines:
            lines[0] = Content.assemble(lines[0], ("  (esc to edit)", "$text-muted italic"))
        self.update(Content("\n").join(lines))
