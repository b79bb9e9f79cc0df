"""What a hook's run means, as Claude Code defines it.

- exit 0 goes on; a JSON object on stdout says more (``decision``/``reason``, ``continue: false``
  with ``stopReason``, ``hookSpecificOutput`` with ``permissionDecision``, ``updatedInput`` and
  ``additionalContext``); other text on stdout is context for ``UserPromptSubmit`` and
  ``SessionStart``, and nothing elsewhere;
- exit 2 blocks, with stderr as the reason;
- any other exit, a timeout or a command that cannot start goes on, with a notice for the user.

Several hooks of one event fold into one ``Outcome``: a block or a deny wins, a rewritten input
is the last one given, contexts add up.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

BLOCK_EXIT = 2
CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})
"""Where plain stdout on exit 0 is context for the model."""
DECISIONS = ("deny", "ask", "allow")
"""``permissionDecision`` values, strongest first: the strongest of several hooks wins."""


@dataclass(frozen=True, slots=True)
class HookRun:
    """One command's run: its exit code (-1 when it timed out or could not start)."""

    command: str
    source: str
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str = ""
    """Why it could not run (it could not start, the sandbox refused it)."""
    duration_ms: int = 0


@dataclass
class Outcome:
    """What the hooks of one event decided together."""

    blocked: bool = False
    reason: str = ""
    """Why it was blocked (or, for ``ask``/``deny``, why the hook decided so)."""
    stop: bool = False
    """``continue: false``: end the turn, saying ``stop_reason`` to the user."""
    stop_reason: str = ""
    decision: str = ""
    """``permissionDecision``: ``allow``, ``deny``, ``ask`` or "" (none given)."""
    updated_input: dict[str, object] | None = None
    context: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    """One line each for the user: a hook that failed, timed out or printed what is not JSON."""

    def fold(self, event: str, run: HookRun) -> str:
        """Add ``run``'s word to this outcome; returns one line of what it did ("": nothing)."""
        name = f"{event} hook `{_short(run.command)}`"
        if run.timed_out:
            self.notices.append(f"{name} timed out and was ended; going on without it")
            return "timed out"
        if run.error:
            self.notices.append(f"{name} could not run: {run.error}")
            return f"failed: {run.error}"
        if run.exit_code == BLOCK_EXIT:
            return self._block(run.stderr.strip() or f"blocked by {name}")
        if run.exit_code != 0:
            why = _first_line(run.stderr) or _first_line(run.stdout) or "no output"
            self.notices.append(f"{name} failed (exit {run.exit_code}): {why}")
            return f"failed (exit {run.exit_code})"
        return self._output(event, name, run.stdout)

    def _block(self, reason: str) -> str:
        self.blocked = True
        self.reason = "\n".join(part for part in (self.reason, reason) if part)
        return f"blocked: {_first_line(reason)}"

    def _output(self, event: str, name: str, stdout: str) -> str:
        text = stdout.strip()
        if not text:
            return ""
        try:
            data: object = json.loads(text)
        except ValueError:
            if event in CONTEXT_EVENTS:
                self.context.append(text)
                return "added context"
            self.notices.append(f"{name} printed what is not JSON; it was ignored")
            return "output ignored"
        if not isinstance(data, dict):
            self.notices.append(f"{name} printed JSON that is not an object; it was ignored")
            return "output ignored"
        return self._json(data)

    def _json(self, data: dict[str, object]) -> str:
        said: list[str] = []
        if data.get("continue") is False:
            self.stop = True
            self.stop_reason = _text(data.get("stopReason")) or self.stop_reason
            said.append("stopped the turn")
        if data.get("decision") == "block":
            said.append(self._block(_text(data.get("reason")) or "blocked by a hook"))
        specific = data.get("hookSpecificOutput")
        if isinstance(specific, dict):
            said.extend(self._specific(specific))
        return "; ".join(part for part in said if part)

    def _specific(self, specific: dict[str, object]) -> list[str]:
        said: list[str] = []
        decision = specific.get("permissionDecision")
        if isinstance(decision, str) and decision in DECISIONS:
            if not self.decision or DECISIONS.index(decision) < DECISIONS.index(self.decision):
                self.decision = decision
                self.reason = _text(specific.get("permissionDecisionReason")) or self.reason
            said.append(f"decided {decision}")
        updated = specific.get("updatedInput")
        if isinstance(updated, dict):
            self.updated_input = {str(k): v for k, v in updated.items()}
            said.append("changed the input")
        context = _text(specific.get("additionalContext"))
        if context:
            self.context.append(context)
            said.append("added context")
        return said


def stopped_line(reason: str, what: str = "turn") -> str:
    """The one line a hook's ``continue: false`` says to the user, with its ``stopReason``."""
    return f"a hook stopped the {what}: {reason or 'no reason given'}"


def fold_all(event: str, runs: Iterable[HookRun]) -> tuple[Outcome, list[str]]:
    """The outcome of ``runs`` together, and each run's one line."""
    outcome = Outcome()
    return outcome, [outcome.fold(event, run) for run in runs]


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _short(command: str, width: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= width else line[: width - 1] + "…"
