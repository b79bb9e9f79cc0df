"""Modal screens of the dcode TUI."""

from dcode.tui.screens.first_run import FirstRunScreen
from dcode.tui.screens.help import HelpScreen
from dcode.tui.screens.model import ModelScreen
from dcode.tui.screens.resume import ResumeScreen, format_age
from dcode.tui.screens.session_held import SessionHeldScreen
from dcode.tui.screens.theme import ThemeScreen, pick_theme

__all__ = [
    "FirstRunScreen",
    "HelpScreen",
    "ModelScreen",
    "ResumeScreen",
    "SessionHeldScreen",
    "ThemeScreen",
    "format_age",
    "pick_theme",
]
