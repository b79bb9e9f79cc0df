"""A session's spend against its limits (``budget_usd``, ``budget_tokens``), and where it went.

Every model request of a session counts: its own agent's, its subagents', and the summaries
compaction asks for. Each answer is charged to a ``UsageRow`` keyed by model and agent (the
session's own ``main``, a subagent by its agent's name, ``compaction``), priced with that
model's profile; a model without prices (a local one) costs $0, so ``budget_tokens`` is what
bounds it. The session's stored rows are the figure a turn starts from, so a resumed session
counts what it spent before.

The limit is checked before each model request (``check``, from ``BudgetMiddleware``): a
session at its cap ends the turn with ``BudgetReached`` before spending more, and nothing
already done is lost. Crossing 50 %, 80 % and 100 % of a limit is said once each
(``BudgetWarning``); a level already behind when a turn starts, or when the limit is raised,
is not said again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from dcode.agent.events import BudgetWarning, Event

if TYPE_CHECKING:  # the store and the TUI read usage rows without the model stack
    from langchain_core.messages import AIMessage

    from dcode.models.profiles import ModelProfile

LEVELS = (50, 80, 100)
"""The percentages of a limit that are announced, once each."""
MAIN_AGENT = "main"
COMPACTION = "compaction"
"""The agent a compaction's summary is charged to, whoever's conversation it summarized."""


def usd_text(amount: float) -> str:
    """Dollars as the budget's lines say them: cents from $1 on, up to four decimals below
    (a cheap model's turn costs fractions of a cent)."""
    if amount >= 1:
        return f"${amount:.2f}"
    digits = f"{amount:.4f}".rstrip("0")
    return "$" + digits + "0" * max(0, 2 - len(digits.partition(".")[2]))


class BudgetReached(RuntimeError):
    """The session is at its cap: the next model request is not sent (the message is the
    line the user reads). A ``RuntimeError``: LangGraph's server passes the message of one on
    to its client (it hides the text of other errors), so that a served run's client reads the
    same line."""


@dataclass(frozen=True, slots=True)
class Limits:
    """A session's caps; None: no cap of that kind."""

    usd: float | None = None
    tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Tariff:
    """The model a graph's requests go to, and its prices (its profile's)."""

    model: str
    profile: ModelProfile


@dataclass(slots=True)
class UsageRow:
    """What one model spent for one agent of a session. ``cost_usd`` is None when the model
    has no prices; ``cached_tokens`` and ``reasoning_tokens`` are parts of the input and the
    output."""

    model: str
    agent: str
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: UsageRow) -> None:
        self.input_tokens += other.input_tokens
        self.cached_tokens += other.cached_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd


def charge_of(tariff: Tariff, agent: str, answer: AIMessage) -> UsageRow | None:
    """What ``answer`` cost, as a row; None when it reports no usage."""
    from dcode.models.usage import cached_input_tokens

    usage = answer.usage_metadata
    if not usage:
        return None
    spent_in, spent_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    cached = cached_input_tokens(usage)
    details = usage.get("output_token_details") or {}
    reasoning = details.get("reasoning", 0)
    return UsageRow(
        tariff.model,
        agent,
        spent_in,
        cached,
        spent_out,
        reasoning if isinstance(reasoning, int) else 0,
        tariff.profile.cost(spent_in, spent_out, cached),
    )


class UsageBook(Protocol):
    """Where a budget reads the session's spend and writes each answer's, as the run goes
    (a served run's: no runner around it reads the spend before it or records it after)."""

    async def spent(self) -> list[UsageRow]: ...

    async def record(self, rows: Sequence[UsageRow]) -> None: ...


@dataclass
class SessionBudget:
    """One turn's view of the session's spend: what was spent before it (``before``, from the
    store), what it spends (``rows``), and the limits (which ``/budget`` may raise).

    ``book``: where the spend before is read on the first check (under a limit) and each charge
    is handed at once (a served run); without one the runner does both around the turn."""

    limits: Limits
    spent_usd: float = 0.0
    spent_tokens: int = 0
    rows: dict[tuple[str, str], UsageRow] = field(default_factory=dict)
    _said: set[tuple[str, int]] = field(default_factory=set)
    book: UsageBook | None = None
    _read: bool = False
    _reading: asyncio.Future[list[UsageRow]] | None = None

    def __post_init__(self) -> None:
        self._said = set(self._levels())

    async def settle(self) -> None:
        """Read the spend before this run from the book, once (nothing without a book, nor
        without a limit, which is all the spend before is counted for)."""
        if self.book is None or self._read or not self._limited():
            return
        if self._reading is None:  # agents checking at once share one read
            self._reading = asyncio.ensure_future(self.book.spent())
        stored = await self._reading
        if self._read:
            return
        self._read = True
        self.spent_usd += sum(row.cost_usd or 0.0 for row in stored)
        self.spent_tokens += sum(row.tokens for row in stored)
        self._said |= set(self._levels())

    async def keep(self) -> None:
        """Write the rows charged since the last write to the book (nothing without one)."""
        if self.book is None or not self.rows:
            return
        rows = list(self.rows.values())
        self.rows.clear()  # before the write: a parallel charge is not written twice
        await self.book.record(rows)

    @classmethod
    def starting(cls, limits: Limits, stored: Iterable[UsageRow]) -> SessionBudget:
        rows = list(stored)
        return cls(
            limits,
            spent_usd=sum(row.cost_usd or 0.0 for row in rows),
            spent_tokens=sum(row.tokens for row in rows),
        )

    def raise_to(self, limits: Limits) -> None:
        """New limits; the levels already crossed under them are not announced again."""
        self.limits = limits
        self._said |= set(self._levels())

    def charge(self, row: UsageRow) -> list[Event]:
        """Count ``row``; the warnings for the levels it crossed."""
        self.spent_tokens += row.tokens
        self.spent_usd += row.cost_usd or 0.0
        key = (row.model, row.agent)
        if key in self.rows:
            self.rows[key].add(row)
        else:
            self.rows[key] = replace(row)
        return [self._warning(kind, level) for kind, level in self._new_levels()]

    def level(self) -> int:
        """The highest of ``LEVELS`` crossed under either limit; 0 below them all."""
        return max((level for _, level in self._levels()), default=0)

    def check(self) -> None:
        """Raise ``BudgetReached`` when a limit is reached."""
        line = self.reached()
        if line:
            raise BudgetReached(line)

    def reached(self) -> str:
        """The line saying which limit is reached, or ``""``."""
        usd, tokens = self.limits.usd, self.limits.tokens
        if usd is not None and self.spent_usd >= usd:
            return (
                f"budget reached ({usd_text(self.spent_usd)} of {usd_text(usd)}); /budget to raise"
            )
        if tokens is not None and self.spent_tokens >= tokens:
            return f"budget reached ({self.spent_tokens:,} of {tokens:,} tokens); /budget to raise"
        return ""

    def _limited(self) -> bool:
        return self.limits.usd is not None or self.limits.tokens is not None

    def _levels(self) -> Iterable[tuple[str, int]]:
        for kind, spent, limit in (
            ("usd", self.spent_usd, self.limits.usd),
            ("tokens", self.spent_tokens, self.limits.tokens),
        ):
            if limit:
                yield from ((kind, level) for level in LEVELS if spent >= limit * level / 100)

    def _new_levels(self) -> list[tuple[str, int]]:
        new = [pair for pair in self._levels() if pair not in self._said]
        self._said.update(new)
        return new

    def _warning(self, kind: str, level: int) -> BudgetWarning:
        if kind == "usd":
            figures = f"{usd_text(self.spent_usd)} of {usd_text(self.limits.usd or 0)}"
        else:
            figures = f"{self.spent_tokens:,} of {self.limits.tokens or 0:,} tokens"
        return BudgetWarning(
            level=level,
            message=f"{level}% of the session's budget spent ({figures})",
            spent_usd=self.spent_usd,
            limit_usd=self.limits.usd,
            spent_tokens=self.spent_tokens,
            limit_tokens=self.limits.tokens,
        )


@dataclass(frozen=True, slots=True)
class AgentBudget:
    """The session's budget as one agent of it sees it: its charges go under ``agent``."""

    session: SessionBudget
    agent: str = MAIN_AGENT

    def for_agent(self, agent: str) -> AgentBudget:
        return AgentBudget(self.session, agent)

    def check(self) -> None:
        self.session.check()

    async def acheck(self) -> None:
        """``check``, once the spend before the run is known (``SessionBudget.settle``)."""
        await self.session.settle()
        self.session.check()

    async def acharge(
        self, tariff: Tariff, answer: AIMessage, emit: Callable[[Event], None], agent: str = ""
    ) -> None:
        """``charge``, then the charge kept in the session's book, if it has one."""
        self.charge(tariff, answer, emit, agent)
        await self.session.keep()

    def charge(
        self, tariff: Tariff, answer: AIMessage, emit: Callable[[Event], None], agent: str = ""
    ) -> None:
        """Count ``answer`` (under ``agent``, else this view's), and say the levels crossed."""
        row = charge_of(tariff, agent or self.agent, answer)
        if row is not None:
            for warning in self.session.charge(row):
                emit(warning)


def usage_lines(rows: Sequence[UsageRow]) -> list[str]:
    """A session's spend by model and by agent, as ``/cost`` and ``dcode sessions show
    --usage`` print it."""
    if not rows:
        return ["no usage recorded for this session"]
    width = max(12, *(len(row.model) for row in rows), *(len(row.agent) for row in rows))
    lines = ["by model:", *_table(_merged(rows, lambda row: row.model), width)]
    agents = sorted(_merged(rows, lambda row: row.agent), key=_agent_order)
    lines += ["by agent:", *_table(agents, width)]
    return lines + _table(_merged(rows, lambda row: "total"), width, header=False)


def _agent_order(row: UsageRow) -> tuple[bool, bool, str]:
    """The session's own agent first, compaction last, the subagents by name between."""
    return (row.agent != MAIN_AGENT, row.agent == COMPACTION, row.agent)


def _merged(rows: Sequence[UsageRow], key: Callable[[UsageRow], str]) -> list[UsageRow]:
    """``rows`` summed by ``key``; a sum's dollars are those of its rows with prices."""
    merged: dict[str, UsageRow] = {}
    for row in rows:
        name = key(row)
        merged.setdefault(name, UsageRow(name, name)).add(row)
    return list(merged.values())


def _table(rows: Sequence[UsageRow], width: int, *, header: bool = True) -> list[str]:
    head = (
        f"  {'':<{width}} {'input':>12} {'cached':>12} {'output':>12} {'reasoning':>12} {'USD':>10}"
    )
    lines = [head] if header else []
    for row in rows:
        usd = "—" if row.cost_usd is None else usd_text(row.cost_usd)
        lines.append(
            f"  {row.model:<{width}} {row.input_tokens:>12,} {row.cached_tokens:>12,}"
            f" {row.output_tokens:>12,} {row.reasoning_tokens:>12,} {usd:>10}"
        )
    return lines


def raised_limits(limits: Limits, words: str) -> Limits:
    """``/budget``'s argument applied to ``limits``: ``5`` or ``$5`` (USD), ``200000 tokens``
    or ``200k tokens``. Raises ``ValueError`` with the line to show for anything else."""
    text = words.strip().lower().replace(",", "").replace("_", "")
    if text.endswith("tokens"):
        figure = text.removesuffix("tokens").strip()
        scale = {"k": 1_000, "m": 1_000_000}.get(figure[-1:], 1)
        try:
            tokens = int(float(figure[:-1] if scale > 1 else figure) * scale)
        except ValueError:
            tokens = 0
        if tokens < 1:
            raise ValueError(f"/budget takes a number of tokens, not {words.strip()!r}")
        return replace(limits, tokens=tokens)
    try:
        usd = float(text.removeprefix("$"))
    except ValueError:
        usd = 0.0
    if not 0 < usd < float("inf"):
        raise ValueError(f"/budget takes USD (5, $0.50) or tokens (200k tokens), not {words!r}")
    return replace(limits, usd=usd)


def budget_line(budget: SessionBudget) -> str:
    """Where the session stands against its limits, in one line (``/budget``)."""
    limits = budget.limits
    parts = [
        f"{usd_text(budget.spent_usd)} of {usd_text(limits.usd)}"
        if limits.usd is not None
        else f"{usd_text(budget.spent_usd)} (no USD cap)",
        f"{budget.spent_tokens:,} of {limits.tokens:,} tokens"
        if limits.tokens is not None
        else f"{budget.spent_tokens:,} tokens (no token cap)",
    ]
    return f"budget: {' · '.join(parts)}"
