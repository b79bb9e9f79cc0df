"""The note a user's ``!cmd`` leaves in the thread, and reading it back.

The model reads the note as a user message; the mark on it lets a replay show the command as
the user saw it run, never by matching the note's wording.
"""

from __future__ import annotations

from dcode.agent.markers import SHELL_COMMAND_MARKER


def _lead(command: str, exit_code: int) -> str:
    return f"I ran a shell command myself: `{command}` (exit code {exit_code}). Its output:\n```\n"


_END = "\n```"


def shell_note(command: str, exit_code: int, output: str) -> tuple[str, dict[str, object]]:
    """The note's text for the model, and the mark its message carries."""
    return f"{_lead(command, exit_code)}{output}{_END}", {
        SHELL_COMMAND_MARKER: {"command": command, "exit_code": exit_code}
    }


def read_shell_note(text: str, marks: dict[str, object]) -> tuple[str, int, str] | None:
    """The command, exit code and output of a marked note; None for any other message."""
    match marks.get(SHELL_COMMAND_MARKER):
        case {"command": str(command), "exit_code": int(exit_code)}:
            lead = _lead(command, exit_code)
            if text.startswith(lead) and text.endswith(_END):
                return command, exit_code, text[len(lead) : len(text) - len(_END)]
    return None
