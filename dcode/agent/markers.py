"""The flags dcode puts on the messages it writes into a thread itself.

A denied call's result and a call or answer cut short by an interrupt are ordinary messages to
the model; these keys in their ``additional_kwargs`` let the live stream and a saved thread's
replay say "denied" or "interrupted" by an explicit mark, never by matching the message's text.
This module imports nothing, so reading a saved thread does not pull in the engine.
"""

from __future__ import annotations

from typing import Final

DENIED_MARKER: Final = "dcode_denied"
CANCELLED_MARKER: Final = "dcode_cancelled"
SAVED_TO_MARKER: Final = "dcode_saved_to"
"""On a tool result evicted from the history: the file that holds its full output."""
ATTACHED_FILES_MARKER: Final = "dcode_attached_files"
"""On a user's prompt: the files attached with ``@path`` and their blocks (``attached_files``)."""
END_TURN_MARKER: Final = "dcode_end_turn"
"""On a denied call's result: the turn ends there, the model is not asked again (a plan
rejected, or put to a user who answers outside the run)."""
SHELL_COMMAND_MARKER: Final = "dcode_shell_command"
"""On the note a user's ``!cmd`` leaves in the thread: the command and its exit code
(``dcode.agent.shell_note``)."""
HOOK_MARKER: Final = "dcode_hook"
"""On a user-role message a hook put in the thread: the event's name (a ``Stop`` hook that asked
the agent to go on, with its reason as the message)."""
