"""The string replacement behind edit_file, pure so the approval diff can preview it exactly.

Requiring a unique ``old_string`` is what makes an edit safe to apply blind: the model must
quote enough context to pin down one place, or say ``replace_all`` explicitly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t", re.MULTILINE)


class EditError(ValueError):
    """Why an edit cannot be applied, worded for the model."""


@dataclass(frozen=True, slots=True)
class EditOutcome:
    text: str
    replacements: int


def apply_edit(text: str, old: str, new: str, *, replace_all: bool = False) -> EditOutcome:
    if old == new:
        raise EditError("old_string and new_string are identical; there is nothing to change")
    if not old:
        raise EditError("old_string is empty; to create or rewrite a whole file use write_file")
    old, new = _match_line_endings(text, old, new)
    count = text.count(old)
    if count == 0:
        raise EditError(_not_found_message(old))
    if count > 1 and not replace_all:
        raise EditError(
            f"old_string occurs {count} times; include more surrounding lines so it matches "
            "exactly one place, or set replace_all=true to replace every occurrence"
        )
    if replace_all:
        return EditOutcome(text=text.replace(old, new), replacements=count)
    return EditOutcome(text=text.replace(old, new, 1), replacements=1)


def _match_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """Models write ``\\n``; a CRLF file needs ``\\r\\n`` for the quote to match and stay CRLF."""
    if "\r\n" not in text or "\r\n" in old or "\n" not in old or old in text:
        return old, new
    return old.replace("\n", "\r\n"), new.replace("\n", "\r\n")


def _not_found_message(old: str) -> str:
    message = (
        "old_string was not found in the file. Read the file first and copy the text exactly: "
        "whitespace, indentation and line breaks must match"
    )
    if _LINE_NUMBER_PREFIX.search(old):
        message += " (do not include the line-number prefixes that read_file shows)"
    return message
