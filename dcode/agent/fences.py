"""Fences in the prompt: text dcode did not write, kept inside the tag that says what it is.

The AGENTS.md files, the skills index, the local context (file names, the Makefile's head,
the branch), conversation summaries and the files a prompt attaches with ``@path`` go to the
model between tags such as
``<agent_memory>`` … ``</agent_memory>``, and the model relies on the tags to tell where such
text ends. A file holding ``</agent_memory>`` followed by instructions would put those
instructions outside the fence, where they read as if dcode had written them; one holding
``<memory_guidelines>`` would open a fence of its own.

So everything fenced is escaped first (``escape_fenced``): a tag of any fence named here,
opening or closing, in any case, with spaces, attributes, ``-`` for ``_`` or invisible
characters, loses its ``<`` (written ``&lt;`` instead). Other angle brackets (``List<T>``,
``git checkout <branch>``) are left alone, so code and commands read as written. A new fence
gets a name here, which escapes it in every fence at once.

Names the project chooses (file and directory names, paths, a branch) are listed in Markdown
code blocks and spans, where a name holding a newline and a run of backquotes would end the
block and write a line of its own. So every name is written on one line (``escape_name``):
each control character as ``?``, as ``ls -q`` shows it (and as a glob, ``?`` still matches
it), and a backslash before each backquote. The local context's script does the same in the
shell.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Fence(StrEnum):
    AGENT_MEMORY = "agent_memory"
    MEMORY_GUIDELINES = "memory_guidelines"
    SKILLS = "skills"
    LOCAL_CONTEXT = "local_context"
    SUMMARY = "summary"
    MCP_SERVERS = "mcp_servers"
    MCP_INSTRUCTIONS = "mcp_instructions"
    ERROR = "error"
    ATTACHED_FILE = "attached_file"


_INVISIBLE = "\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff"  # soft hyphen, zero widths, bidi marks
_GAP = f"[\\s{_INVISIBLE}]*"
_OPEN = "[<\uff1c\ufe64]"  # "<" and its full-width and small forms


def _name(fence: Fence) -> str:
    """The fence's name as a pattern: any case, ``_`` as ``-``, a space or nothing, and
    invisible characters anywhere in it."""
    return f"[{_INVISIBLE}]*".join(
        f"[\\s_{_INVISIBLE}-]*" if char == "_" else re.escape(char) for char in fence.value
    )


_TAG = re.compile(
    f"{_OPEN}(?={_GAP}/?{_GAP}(?:{'|'.join(_name(fence) for fence in Fence)})(?![A-Za-z0-9]))",
    re.IGNORECASE,
)


_CONTROL = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u2028\u2029]"
)  # C0, DEL, C1 and the Unicode line breaks


def escape_name(name: str) -> str:
    """``name`` on one line, unable to end the code block or span it is listed in."""
    return _CONTROL.sub("?", name).replace("`", "\\`")


def escape_fenced(text: str) -> str:
    """``text`` with every tag of a dcode fence in it disarmed (see the module's docstring)."""
    return _TAG.sub("&lt;", text)


def fenced(fence: Fence, text: str) -> str:
    """``text``, escaped, between ``fence``'s opening and closing tags."""
    return f"<{fence}>\n{escape_fenced(text)}\n</{fence}>"
