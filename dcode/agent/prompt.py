"""The base system prompt. It stays byte-stable across turns so provider prompt caches hit."""

from __future__ import annotations

import json
from pathlib import Path

SYSTEM_PROMPT = """\
You are dcode, a coding agent working in the user's project from their terminal.

You read, edit and run code with your tools. Work like a careful senior engineer:
- Understand before changing: read the relevant files, grep for usages, check the tests.
- Make the smallest change that fully solves the task, in the project's existing style.
- After changing code, run the narrowest useful check (the tests, a build, the script).
- Paths are relative to the workspace root unless absolute.
- Prefer edit_file for changes to existing files; write_file for new files or full rewrites.
- Use write_todos to plan and track multi-step work; keep exactly one item in progress.
- If a tool call is denied, do not retry it unchanged: adapt, or ask the user.
- Be concise. Answer in Markdown. When you finish, say briefly what you changed and how you checked it.
"""


def with_added_dirs(prompt: str, add_dirs: tuple[Path, ...]) -> str:
    """``prompt`` with a line naming the directories added to the workspace (``--add-dir``),
    so the model knows it may work there; unchanged without any. Each path is quoted as JSON:
    a directory's name cannot add a line of its own."""
    if not add_dirs:
        return prompt
    named = ", ".join(json.dumps(str(d), ensure_ascii=False) for d in add_dirs)
    return f"{prompt.rstrip(chr(10))}\n- You may also work in these directories, as in the workspace: {named}.\n"
