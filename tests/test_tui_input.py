"""PromptInput through Textual's pilot, with real files in tmp_path."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.pilot import Pilot

from dcode.tui.widgets import PromptInput, ShellMode
from dcode.tui.widgets.placeholders import Draft, Placeholder, PlaceholderHost, PlaceholderSource
from tests.support.file_trees import use_source

LONG_PASTE = "\n".join(f"line {n}" for n in range(40))


class Host(App[None]):
    def __init__(self, home: Path, workspace: Path) -> None:
        super().__init__()
        self.home = home
        self.workspace = workspace
        self.sent: list[PromptInput.Submitted] = []

    def compose(self) -> ComposeResult:
        yield PromptInput(self.home / "history.jsonl", self.workspace, id="prompt")

    def on_mount(self) -> None:
        self.prompt.focus()

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.sent.append(message)


@pytest.fixture
def host(tmp_path: Path) -> Host:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Host(tmp_path / "home", workspace)


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def type_text(pilot: Pilot[None], text: str) -> None:
    keys = ["space" if char == " " else char for char in text]
    await pilot.press(*keys)


async def enter_text(pilot: Pilot[None], text: str) -> None:
    """Quick set-up: all but the last character go in directly, the last one is a real key."""
    app = pilot.app
    assert isinstance(app, Host)
    app.prompt.insert_text(text[:-1])
    await type_text(pilot, text[-1:])


async def paste(pilot: Pilot[None], text: str) -> None:
    app = pilot.app
    assert isinstance(app, Host)
    app.prompt.area.post_message(events.Paste(text))
    await pilot.pause()


def sent_texts(app: Host) -> list[tuple[str, ShellMode | None]]:
    return [(message.text, message.shell) for message in app.sent]


# --- sending and newlines


async def test_enter_sends_and_clears(host: Host) -> None:
    async with host.run_test() as pilot:
        await enter_text(pilot, "hello there")
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [("hello there", None)]
        assert host.prompt.text == ""


@pytest.mark.parametrize("key", ["shift+enter", "alt+enter", "ctrl+j", "ctrl+enter"])
async def test_newline_keys_insert_newline(host: Host, key: str) -> None:
    async with host.run_test() as pilot:
        await type_text(pilot, "one")
        await pilot.press(key)
        await type_text(pilot, "two")
        assert host.prompt.text == "one\ntwo"
        assert host.sent == []
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [("one\ntwo", None)]


async def test_trailing_backslash_then_enter_is_a_newline(host: Host) -> None:
    async with host.run_test() as pilot:
        await type_text(pilot, "one\\")
        await pilot.press("enter")
        await type_text(pilot, "two")
        assert host.prompt.text == "one\ntwo"
        assert host.sent == []


async def test_blank_input_is_not_sent(host: Host) -> None:
    async with host.run_test() as pilot:
        await pilot.press("enter")
        await type_text(pilot, "   ")
        await pilot.press("shift+enter", "enter")
        await pilot.pause()
        assert host.sent == []


async def test_shell_prefixes(host: Host) -> None:
    async with host.run_test() as pilot:
        await enter_text(pilot, "!ls -la")
        await pilot.press("enter")
        await enter_text(pilot, "!!git status")
        await pilot.press("enter")
        await type_text(pilot, "!")
        await pilot.press("enter")  # a bare "!" has nothing to run
        await pilot.pause()
        assert sent_texts(host) == [
            ("ls -la", ShellMode.CONTEXT),
            ("git status", ShellMode.PRIVATE),
        ]
        assert host.sent[0].shell == "context" and host.sent[1].shell == "private"


# --- history


async def test_history_walk_keeps_the_draft(host: Host) -> None:
    async with host.run_test() as pilot:
        for prompt in ("first", "second"):
            await enter_text(pilot, prompt)
            await pilot.press("enter")
        await type_text(pilot, "draft")
        await pilot.press("up")
        assert host.prompt.text == "second"
        await pilot.press("up")
        assert host.prompt.text == "first"
        await pilot.press("up")  # already the oldest
        assert host.prompt.text == "first"
        await pilot.press("down")
        assert host.prompt.text == "second"
        await pilot.press("down")
        assert host.prompt.text == "draft"


async def test_up_inside_a_multiline_draft_moves_the_cursor(host: Host) -> None:
    async with host.run_test() as pilot:
        await type_text(pilot, "old")
        await pilot.press("enter")
        await type_text(pilot, "a")
        await pilot.press("shift+enter")
        await type_text(pilot, "b")
        await pilot.press("up")  # cursor was on the second row: just move up
        assert host.prompt.text == "a\nb"
        await pilot.press("up")  # now on the first row: history
        assert host.prompt.text == "old"


async def test_history_persists_and_skips_duplicates_and_corrupt_lines(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home.mkdir()
    (home / "history.jsonl").write_text(
        json.dumps({"text": "from disk", "ts": 1.0, "cwd": "/x"}) + "\n{not json\n"
    )
    first = Host(home, workspace)
    async with first.run_test() as pilot:
        await settle(pilot)
        for prompt in ("alpha", "alpha", "beta"):
            await enter_text(pilot, prompt)
            await pilot.press("enter")
    lines = (home / "history.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if not line.startswith("{not")]
    assert [record["text"] for record in records] == ["from disk", "alpha", "beta"]
    assert records[-1]["cwd"] == str(workspace)
    assert isinstance(records[-1]["ts"], float)

    second = Host(home, workspace)
    async with second.run_test() as pilot:
        await settle(pilot)
        await pilot.press("up")
        assert second.prompt.text == "beta"
        await pilot.press("up")
        assert second.prompt.text == "alpha"
        await pilot.press("up")
        assert second.prompt.text == "from disk"


async def test_history_recalls_a_paste_collapsed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = Host(tmp_path / "home", workspace)
    async with first.run_test() as pilot:
        await type_text(pilot, "see ")
        await paste(pilot, LONG_PASTE)
        await pilot.press("enter")
    second = Host(tmp_path / "home", workspace)
    async with second.run_test() as pilot:
        await settle(pilot)
        await pilot.press("up")
        assert second.prompt.text == "see [Pasted text #1 +40 lines]"
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(second) == [(f"see {LONG_PASTE}", None)]


# --- pastes


async def test_long_paste_collapses_and_expands_on_send(host: Host) -> None:
    async with host.run_test() as pilot:
        await type_text(pilot, "fix ")
        await paste(pilot, LONG_PASTE)
        await type_text(pilot, " please")
        assert host.prompt.text == "fix [Pasted text #1 +40 lines] please"
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [(f"fix {LONG_PASTE} please", None)]
        assert host.sent[0].placeholders[0].kind == "paste"


async def test_long_single_line_paste_collapses(host: Host) -> None:
    async with host.run_test() as pilot:
        await paste(pilot, "x" * 900)
        assert host.prompt.text == "[Pasted text #1 +1 lines]"


async def test_short_paste_stays_inline(host: Host) -> None:
    async with host.run_test() as pilot:
        await paste(pilot, "two\nlines")
        assert host.prompt.text == "two\nlines"
        assert len(host.prompt.placeholders) == 0


async def test_backspace_and_delete_remove_a_placeholder_whole(host: Host) -> None:
    async with host.run_test() as pilot:
        await type_text(pilot, "a ")
        await paste(pilot, LONG_PASTE)
        await type_text(pilot, " b")
        await pilot.press("left", "left", "backspace")
        assert host.prompt.text == "a  b"
        assert len(host.prompt.placeholders) == 0
        await pilot.press("ctrl+z")  # undo brings the paste back, still bound
        assert host.prompt.text == "a [Pasted text #1 +40 lines] b"
        assert len(host.prompt.placeholders) == 1
        await pilot.press("home", "right", "right", "delete")
        assert host.prompt.text == "a  b"


async def test_cursor_skips_over_a_placeholder(host: Host) -> None:
    async with host.run_test() as pilot:
        await paste(pilot, LONG_PASTE)
        label = host.prompt.text
        await pilot.press("home", "right")
        assert host.prompt.area.cursor_offset == len(label)
        await pilot.press("left")
        assert host.prompt.area.cursor_offset == 0
        await type_text(pilot, "x")
        assert host.prompt.text == "x" + label
        assert len(host.prompt.placeholders) == 1


async def test_a_selection_that_cuts_into_a_placeholder_takes_it_whole(host: Host) -> None:
    async with host.run_test() as pilot:
        await paste(pilot, LONG_PASTE)
        await type_text(pilot, "ab")
        await pilot.press("left", "left", "shift+left", "shift+left", "x")
        assert host.prompt.text == "xab"
        assert len(host.prompt.placeholders) == 0
        await paste(pilot, LONG_PASTE)
        assert host.prompt.text == "x[Pasted text #2 +40 lines]ab"  # numbers never repeat
        await pilot.press("ctrl+w")  # word-left stops inside the label: the token goes whole
        assert host.prompt.text == "xab"


async def test_a_click_inside_a_placeholder_lands_on_its_edge(host: Host) -> None:
    async with host.run_test() as pilot:
        await paste(pilot, LONG_PASTE)
        area = host.prompt.area
        area.move_cursor((0, 3))
        assert area.cursor_offset in (0, len(host.prompt.text))


async def test_typed_lookalike_is_sent_literally(host: Host) -> None:
    async with host.run_test() as pilot:
        lookalike = "[Pasted text #1 +40 lines]"
        await type_text(pilot, lookalike)
        assert len(host.prompt.placeholders) == 0
        await pilot.press("backspace")
        assert host.prompt.text == lookalike[:-1]  # plain text: one character at a time
        await type_text(pilot, "]")
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [(lookalike, None)]


async def test_lookalike_next_to_a_real_placeholder(host: Host) -> None:
    async with host.run_test() as pilot:
        await paste(pilot, LONG_PASTE)
        await enter_text(pilot, " [Pasted text #1 +40 lines]")
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [(f"{LONG_PASTE} [Pasted text #1 +40 lines]", None)]


async def test_restore_last_brings_the_paste_back(host: Host) -> None:
    async with host.run_test() as pilot:
        await paste(pilot, LONG_PASTE)
        await pilot.press("enter")
        await pilot.pause()
        assert host.prompt.text == ""
        assert host.prompt.restore_last()
        assert host.prompt.text == "[Pasted text #1 +40 lines]"
        await pilot.press("enter")
        await pilot.pause()
        assert [m.text for m in host.sent] == [LONG_PASTE, LONG_PASTE]


async def test_restore_and_clear(host: Host) -> None:
    async with host.run_test() as pilot:
        host.prompt.restore("queued prompt")
        assert host.prompt.text == "queued prompt"
        await type_text(pilot, "!")  # cursor is at the end
        assert host.prompt.text == "queued prompt!"
        host.prompt.clear()
        assert host.prompt.text == ""
        await type_text(pilot, "new")
        host.prompt.restore(Draft("interrupted"))
        assert host.prompt.text == "interrupted\nnew"


async def test_double_escape_clears_an_idle_draft(host: Host) -> None:
    async with host.run_test() as pilot:
        await type_text(pilot, "draft")
        prompt = host.prompt
        assert prompt.escape() is False
        assert prompt.escape() is True
        assert prompt.text == ""
        await type_text(pilot, "again")
        prompt.busy = True
        assert prompt.has_class("-busy")
        assert prompt.escape() is False
        assert prompt.escape() is False  # never while a turn is running
        assert prompt.text == "again"


# --- @path completion


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _make_repo(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("app")
    (root / "src" / "helpers.py").write_text("h")
    (root / "README.md").write_text("readme")
    (root / "secret.log").write_text("ignored")
    (root / ".gitignore").write_text("*.log\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)


@needs_git
async def test_mention_popup_lists_files_and_tab_accepts(host: Host) -> None:
    _make_repo(host.workspace)
    async with host.run_test() as pilot:
        await enter_text(pilot, "look at @app")
        await settle(pilot)
        popup = host.prompt.popup
        assert popup.is_open
        assert popup.current is not None and popup.current.value == "@src/app.py "
        await pilot.press("tab")
        await pilot.pause()
        assert host.prompt.text == "look at @src/app.py "
        assert not popup.is_open


@needs_git
async def test_mention_excludes_gitignored_files(host: Host) -> None:
    _make_repo(host.workspace)
    async with host.run_test() as pilot:
        await type_text(pilot, "@")
        await settle(pilot)
        values = [c.value for c in host.prompt.popup._completions]
        assert "@README.md " in values and "@src/" in values
        assert not any("secret.log" in value for value in values)
        assert not any(".git/" in value for value in values)


@needs_git
async def test_mention_popup_keys(host: Host) -> None:
    _make_repo(host.workspace)
    async with host.run_test() as pilot:
        await type_text(pilot, "@src/")
        await settle(pilot)
        popup = host.prompt.popup
        assert [c.value for c in popup._completions] == ["@src/app.py ", "@src/helpers.py "]
        await pilot.press("down")
        assert popup.current is not None and popup.current.value == "@src/helpers.py "
        await pilot.press("enter")  # accepts, does not send
        await pilot.pause()
        assert host.prompt.text == "@src/helpers.py "
        assert host.sent == []
        await type_text(pilot, "@READ")
        await settle(pilot)
        assert popup.is_open
        await pilot.press("escape")
        assert not popup.is_open
        await type_text(pilot, "M")  # same token: stays closed after Esc
        await pilot.pause()
        assert not popup.is_open


async def test_mention_without_git_walks_and_prunes(
    host: Host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_source("walk", monkeypatch, tmp_path / "bin")  # neither ripgrep nor git on PATH
    (host.workspace / "node_modules" / "pkg").mkdir(parents=True)
    (host.workspace / "node_modules" / "pkg" / "index.js").write_text("x")
    (host.workspace / "main.py").write_text("x")
    async with host.run_test() as pilot:
        await type_text(pilot, "@")
        await settle(pilot)
        values = [c.value for c in host.prompt.popup._completions]
        assert values == ["@main.py "]


@needs_git
async def test_enter_on_a_complete_path_sends_with_mentions(host: Host) -> None:
    _make_repo(host.workspace)
    async with host.run_test() as pilot:
        await enter_text(pilot, "explain @src/app.py")
        await settle(pilot)
        assert host.prompt.popup.is_open
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [("explain @src/app.py", None)]
        assert host.sent[0].mentions == ("src/app.py",)


@needs_git
async def test_at_sign_inside_a_word_is_not_a_mention(host: Host) -> None:
    _make_repo(host.workspace)
    async with host.run_test() as pilot:
        await enter_text(pilot, "mail me@src")
        await settle(pilot)
        assert not host.prompt.popup.is_open


# --- slash popup

COMMANDS = [("model", "Switch model"), ("mode", "Approval mode"), ("help", "Show help")]


async def test_slash_popup_completes_then_enter_sends(host: Host) -> None:
    async with host.run_test() as pilot:
        host.prompt.set_commands(COMMANDS)
        await type_text(pilot, "/mo")
        await pilot.pause()
        popup = host.prompt.popup
        assert popup.is_open
        assert [c.value for c in popup._completions] == ["/model ", "/mode "]
        await pilot.press("down", "tab")
        await pilot.pause()
        assert host.prompt.text == "/mode "
        assert not popup.is_open
        await type_text(pilot, "all")
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [("/mode all", None)]


async def test_slash_enter_on_incomplete_completes_and_on_complete_sends(host: Host) -> None:
    async with host.run_test() as pilot:
        host.prompt.set_commands(COMMANDS)
        await type_text(pilot, "/he")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert host.prompt.text == "/help "
        assert host.sent == []
        host.prompt.clear()
        await type_text(pilot, "/help")
        await pilot.pause()
        assert host.prompt.popup.is_open
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [("/help", None)]


async def test_slash_popup_only_at_the_start(host: Host) -> None:
    async with host.run_test() as pilot:
        host.prompt.set_commands(COMMANDS)
        await type_text(pilot, "use /mo")
        await pilot.pause()
        assert not host.prompt.popup.is_open
        assert host.prompt.escape() is False


async def test_double_escape_clear_can_be_undone(host: Host) -> None:
    async with host.run_test() as pilot:
        await paste(pilot, LONG_PASTE)
        assert not host.prompt.escape() and host.prompt.escape()
        assert host.prompt.text == ""
        await pilot.press("ctrl+z")
        assert host.prompt.text == "[Pasted text #1 +40 lines]"
        await pilot.press("enter")
        await pilot.pause()
        assert sent_texts(host) == [(LONG_PASTE, None)]


# --- keys the app shares


class KeyHost(Host):
    BINDINGS: ClassVar[list[BindingType]] = [
        ("ctrl+d", "record('quit')"),
        ("ctrl+x", "record('editor')"),
    ]

    def __init__(self, home: Path, workspace: Path) -> None:
        super().__init__(home, workspace)
        self.actions: list[str] = []

    def action_record(self, name: str) -> None:
        self.actions.append(name)


async def test_ctrl_d_and_ctrl_x_reach_the_app_when_the_editor_has_no_use(tmp_path: Path) -> None:
    app = KeyHost(tmp_path / "home", tmp_path)
    async with app.run_test() as pilot:
        await pilot.press("ctrl+d", "ctrl+x")
        assert app.actions == ["quit", "editor"]
        await type_text(pilot, "ab")
        await pilot.press("home", "ctrl+d")  # with text, Ctrl+D deletes forward
        assert app.prompt.text == "b"
        await pilot.press("ctrl+x")  # no selection: the app's binding
        assert app.actions == ["quit", "editor", "editor"]
        await pilot.press("shift+end", "ctrl+x")  # a selection: cut
        assert app.prompt.text == ""
        assert app.actions == ["quit", "editor", "editor"]


# --- the seam for media: one new source class


class FakeImages(PlaceholderSource):
    kind = "image"

    def __init__(self) -> None:
        self.dropped: list[str] = []

    def on_paste(self, text: str, host: PlaceholderHost) -> bool:
        if not text.endswith(".png"):
            return False
        number = host.placeholders.next_number(self.kind)
        host.insert_placeholder(self.kind, f"[image {number}]", Path(text))
        host.insert_text(" ")
        return True

    def expand(self, placeholder: Placeholder) -> str:
        return ""  # media is sent as its own block, not as text

    def removed(self, placeholder: Placeholder) -> None:
        self.dropped.append(placeholder.label)


async def test_a_media_source_plugs_in(host: Host) -> None:
    images = FakeImages()
    async with host.run_test() as pilot:
        host.prompt.add_source(images)
        await paste(pilot, "/tmp/shot.png")
        await paste(pilot, "/tmp/other.png")
        assert host.prompt.text == "[image 1] [image 2] "
        await pilot.press("left", "backspace")  # removes "[image 2]" whole
        assert host.prompt.text == "[image 1]  "
        assert images.dropped == ["[image 2]"]
        await enter_text(pilot, "what is this")
        await pilot.press("enter")
        await pilot.pause()
        message = host.sent[0]
        assert message.text == "what is this"
        assert [(t.kind, t.payload) for t in message.placeholders] == [
            ("image", Path("/tmp/shot.png"))
        ]
        assert images.dropped == ["[image 2]"]  # sending is not dropping
        assert host.prompt.restore_last()
        assert host.prompt.text.startswith("[image 1]")
