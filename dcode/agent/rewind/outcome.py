"""What a rewind did, in words the TUI and ``dcode sessions rewind`` both use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dcode.agent.rewind.code import CodeReport
from dcode.agent.store.base import Turn
from dcode.agent.tools.formatting import plural

UNTRACKED = "changes made by shell commands or MCP tools are not undone"


@dataclass(frozen=True, slots=True)
class RewindOutcome:
    turn: Turn
    messages_left: int | None
    """The conversation's size after it; None when the conversation was left as it was."""
    code: CodeReport | None
    """What happened to the files; None when they were left as they were."""

    def lines(self, shown: Callable[[Path], str] = str) -> list[str]:
        """The first line says what was rewound; one more for each file that needs a look."""
        parts = []
        if self.messages_left == 0:
            parts.append("the conversation is back to its start")
        elif self.messages_left is not None:
            parts.append(
                f"the conversation is back to before prompt {self.turn.number} ({plural(self.messages_left, 'message')})"
            )
        code = self.code
        if code is not None:
            files = [
                *(shown(p) for p in code.restored),
                *(f"{shown(p)} deleted" for p in code.deleted),
            ]
            if files:
                parts.append(f"{plural(len(files), 'file')} put back: {', '.join(files)}")
            elif not code.failed:
                parts.append("no file needed putting back")
        lines = ["; ".join(parts) if parts else "nothing was rewound"]
        if code is not None:
            lines += [
                f"{shown(path)} was changed since by something else: what it held is kept at {copy}"
                for path, copy in code.copies.items()
            ]
            lines += [
                f"{shown(path)} could not be put back: {why}" for path, why in code.failed.items()
            ]
        return lines
