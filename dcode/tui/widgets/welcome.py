"""The header the transcript opens with: the version, the model, the workspace, and /help.

What a new user needs before the first prompt: which dcode this is, which model answers, in
which directory it works (and the directories added to it), and where the commands are. It stays at the top of the transcript
(a new session keeps it) and names the model the session actually uses once the engine has
resolved it.
"""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from dcode import __version__
from dcode.terminal_text import safe_text

HINTS = "/help for the commands · /model to switch models · shift+tab for what needs your approval"


class Welcome(Static):
    DEFAULT_CSS = """
    Welcome {
        width: auto;
        max-width: 100%;
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border: round $primary 60%;
        border-title-color: $text-primary;
        border-title-style: bold;
        color: $text-muted;
    }
    """

    model: reactive[str] = reactive("")
    workspace: reactive[str] = reactive("")

    def __init__(
        self, model: str, workspace: str, *, added: tuple[str, ...] = (), id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.border_title = f"dcode {__version__}"
        self.added = added
        """The directories added to the workspace (``--add-dir``), as shown."""
        self.set_reactive(Welcome.model, model)
        self.set_reactive(Welcome.workspace, workspace)

    def on_mount(self) -> None:
        self._show()

    def watch_model(self) -> None:
        self._show()

    def watch_workspace(self) -> None:
        self._show()

    def _show(self) -> None:
        label = "$text"
        self.update(
            Content("\n").join(
                [
                    Content.assemble(
                        ("model      ", label), (safe_text(self.model) or "–", "$text-secondary")
                    ),  # a server may name it
                    Content.assemble(("workspace  ", label), safe_text(self.workspace)),
                    *(
                        [Content.assemble(("also in    ", label), safe_text(", ".join(self.added)))]
                        if self.added
                        else []
                    ),
                    Content(HINTS),
                ]
            )
        )
