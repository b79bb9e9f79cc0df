"""Writing the prompt in your own editor (Ctrl+G): ``$VISUAL``, else ``$EDITOR``, else one found.

The draft goes to a private file under ``$DCODE_HOME``; the editor runs in the terminal the app
gives up for it (``App.suspend``); what the file holds when the editor exits becomes the draft.
The tokens bound in the draft (``[image 1]``, ``[Pasted text #1 +40 lines]``) stay bound where
their labels are still found, in order; a label deleted in the editor lets its token go. An
editor that fails (not found, non-zero exit) leaves the draft as it was, with one line saying why.
"""

# Any: Textual's App is generic in its return value, and this works with any App

from __future__ import annotations

import asyncio
import os
import secrets
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, SuspendNotSupported

from dcode.settings.private_files import write_private
from dcode.tui.widgets.placeholders import Draft, Placeholder

if TYPE_CHECKING:
    from dcode.tui.widgets.prompt_input import PromptInput

FALLBACK_EDITORS = ("nano", "vim", "vi")
DRAFTS_DIR = "drafts"


class EditorUnavailable(Exception):
    """No editor can be run; the message says what to set."""


def editor_command(environ: Mapping[str, str]) -> list[str]:
    """The editor to run, as argv without the file: ``$VISUAL``, ``$EDITOR``, or the first of
    ``FALLBACK_EDITORS`` on ``PATH``."""
    for variable in ("VISUAL", "EDITOR"):
        value = environ.get(variable, "").strip()
        if value:
            try:
                argv = shlex.split(value)
            except ValueError as exc:
                raise EditorUnavailable(
                    f"${variable} cannot be read as a command ({exc}): {value!r}"
                ) from None
            if argv:
                return argv
    for name in FALLBACK_EDITORS:
        found = shutil.which(name, path=environ.get("PATH"))
        if found:
            return [found]
    raise EditorUnavailable("no editor found: set $EDITOR (export EDITOR=nano, say)")


def edited_draft(before: Draft, text: str) -> Draft:
    """The draft after editing: ``text``, with each of ``before``'s tokens still bound where
    its label is found again (searching on from the previous token, so order is kept)."""
    text = text.removesuffix("\n")  # editors end a file with a newline the prompt did not have
    tokens: list[Placeholder] = []
    start = 0
    for token in sorted(before.placeholders, key=lambda t: t.start):
        found = text.find(token.label, start)
        if found < 0:
            continue
        moved = token.copy()
        moved.start = found
        tokens.append(moved)
        start = found + len(token.label)
    return Draft(text, tuple(tokens))


def draft_file(home: Path, text: str) -> Path:
    """A new private file holding ``text`` (0600, in ``$DCODE_HOME/drafts``, 0700)."""
    path = home / DRAFTS_DIR / f"prompt-{os.getpid()}-{secrets.token_hex(4)}.md"
    write_private(path, text)
    return path


async def edit_in_editor(
    app: App[Any], prompt: PromptInput, home: Path, environ: Mapping[str, str]
) -> str | None:
    """Hand the terminal to the editor with the prompt's draft, then take back what it saved;
    returns the line to show when the draft was left as it was (None when it was replaced)."""
    try:
        editor = editor_command(environ)
    except EditorUnavailable as exc:
        return str(exc)
    before = prompt.area.snapshot()
    path = await asyncio.to_thread(draft_file, home, before.text)
    try:
        try:
            # Nothing is drawn while the editor has the terminal (a turn may still be streaming).
            with app.batch_update(), app.suspend():
                process = await asyncio.create_subprocess_exec(*editor, str(path))
                status = await process.wait()
        except SuspendNotSupported:
            return "this terminal cannot be handed to an editor"
        except OSError as exc:
            return f"could not run {editor[0]}: {exc.strerror or exc}"
        finally:
            app.refresh(layout=True)
        if status != 0:
            return f"{shlex.join(editor)} exited with status {status}: the prompt is as it was"
        text = await asyncio.to_thread(path.read_text, encoding="utf-8", errors="replace")
    finally:
        path.unlink(missing_ok=True)
    prompt.replace(edited_draft(before, text))
    return None
