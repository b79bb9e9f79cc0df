"""Widgets of the dcode TUI. Import them from here; the modules behind are free to move."""

from dcode.tui.widgets.completion import Completion, CompletionKind, CompletionPopup
from dcode.tui.widgets.file_index import FileIndex, scan_workspace
from dcode.tui.widgets.placeholders import (
    Draft,
    PastedTextSource,
    Placeholder,
    PlaceholderHost,
    PlaceholderRegistry,
    PlaceholderSource,
)
from dcode.tui.widgets.prompt_area import PromptArea
from dcode.tui.widgets.prompt_input import PromptInput, ShellMode

__all__ = [
    "Completion",
    "CompletionKind",
    "CompletionPopup",
    "Draft",
    "FileIndex",
    "PastedTextSource",
    "Placeholder",
    "PlaceholderHost",
    "PlaceholderRegistry",
    "PlaceholderSource",
    "PromptArea",
    "PromptInput",
    "ShellMode",
    "scan_workspace",
]
