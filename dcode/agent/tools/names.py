"""Tool names: part of the contract the model sees, and what policies and the UI key on.

Kept free of LangChain imports so the approval policy and the UI helpers can use them cheaply.
"""

from __future__ import annotations

from typing import Final

LS: Final = "ls"
READ_FILE: Final = "read_file"
WRITE_FILE: Final = "write_file"
EDIT_FILE: Final = "edit_file"
GLOB: Final = "glob"
GREP: Final = "grep"
EXECUTE: Final = "execute"
COMPACT_CONVERSATION: Final = "compact_conversation"
