"""``@path`` completion through Textual's pilot over big, capped, changing and hostile trees."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from dcode.tui.widgets import file_index as file_index_module
from dcode.tui.widgets.completion import find_mention, mention_completions
from dcode.tui.widgets.file_index import FileMatch
from dcode.tui.widgets.file_sources import showable
from tests.support.file_trees import (
    SOURCES,
    make_files,
    make_hostile_files,
    scratch_directory,
    use_source,
)
from tests.test_tui_input import Host, type_text

BIG = 100_000
WAIT_S = 120.0  # a guard against a hang on a busy machine, not a speed target


async def until(pilot: Pilot[None], condition: Callable[[], bool]) -> None:
    """Let the app run (walks, matches) until ``condition`` holds."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the popup never got there"
        await pilot.pause(0.05)


def values(host: Host) -> list[str]:
    return [completion.value for completion in host.prompt.popup._completions]


def lines(host: Host) -> list[str]:
    """Every option's text as drawn, completions and notes alike."""
    popup = host.prompt.popup
    return [str(popup.get_option_at_index(index).prompt) for index in range(popup.option_count)]


def footer(host: Host) -> str:
    """What the popup's bottom border says."""
    return host.prompt.popup.border_subtitle or ""


@pytest.fixture(scope="module")
def big_workspace() -> Iterator[Path]:
    with scratch_directory() as root:
        make_files(root, BIG)  # d000/f0000.txt … d099/f0999.txt
        yield root


async def test_a_file_past_twenty_thousand_is_offered(big_workspace: Path, tmp_path: Path) -> None:
    host = Host(tmp_path / "home", big_workspace)
    async with host.run_test() as pilot:
        await type_text(pilot, "@d099/f0999")
        await until(
            pilot, lambda: "@d099/f0999.txt " in values(host) and host.prompt.files.complete
        )
        await until(pilot, lambda: not footer(host).startswith("indexing"))
        assert values(host)[0] == "@d099/f0999.txt "
        assert host.prompt.files.files == BIG and not host.prompt.files.capped
        assert footer(host) == ""  # complete: nothing missing


async def test_the_popup_says_where_the_index_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    make_files(workspace, 40, prefix="a")
    (workspace / "zz" / "deep").mkdir(parents=True)
    (workspace / "zz" / "deep" / "needle.txt").write_text("x")
    use_source("walk", monkeypatch, tmp_path / "bin")  # name order, so zz/ is past the cap
    host = Host(tmp_path / "home", workspace)
    async with host.run_test() as pilot:
        host.prompt.files.cap = 25
        await type_text(pilot, "@needle")
        await until(
            pilot, lambda: host.prompt.files.complete and "No matching files" in lines(host)
        )
        assert lines(host) == ["No matching files"]
        assert footer(host) == "index stopped at 25 files; type more of the path"
        # With its directory typed, the file completes from that directory, read directly.
        await pilot.press(*["backspace"] * len("needle"))
        await type_text(pilot, "zz/deep/ne")
        await until(pilot, lambda: values(host) == ["@zz/deep/needle.txt "])
        assert footer(host) == "index stopped at 25 files; type more of the path"
        await pilot.press("tab")
        await pilot.pause()
        assert host.prompt.text == "@zz/deep/needle.txt "


@pytest.mark.parametrize("source", SOURCES)
async def test_hostile_names_neither_break_the_list_nor_reach_the_terminal(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "plain.txt").write_text("x")
    make_hostile_files(workspace)
    if source == "git":
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    use_source(source, monkeypatch, tmp_path / "bin")
    host = Host(tmp_path / "home", workspace)
    async with host.run_test() as pilot:
        await type_text(pilot, "@")
        await until(
            pilot,
            lambda: host.prompt.files.complete and host.prompt.popup.is_open and bool(values(host)),
        )
        assert values(host) == ["@plain.txt "]  # never "@two", "@lines.txt", or an escape
        popup = host.prompt.popup
        drawn = "".join(popup.render_line(y).text for y in range(popup.size.height))
        assert "plain.txt" in drawn and showable(drawn)


async def test_without_ripgrep_git_lists_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    for relative in ("src/app.py", "notes.md", "debug.log", "node_modules/x/index.js"):
        (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
        (workspace / relative).write_text("x")
    (workspace / ".gitignore").write_text("*.log\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    use_source("git", monkeypatch, tmp_path / "bin")
    host = Host(tmp_path / "home", workspace)
    async with host.run_test() as pilot:
        await type_text(pilot, "@")
        await until(pilot, lambda: host.prompt.files.complete and bool(values(host)))
        assert sorted(values(host)) == ["@.gitignore ", "@notes.md ", "@src/", "@src/app.py "]


async def test_a_file_made_during_the_session_is_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "old.txt").write_text("x")
    monkeypatch.setattr(file_index_module, "REFRESH_PER_WALK", 0)
    host = Host(tmp_path / "home", workspace)
    async with host.run_test() as pilot:
        host.prompt.files.max_age = 0.0  # every `@` after a finished walk walks again
        await type_text(pilot, "@fresh")
        await until(
            pilot, lambda: host.prompt.files.complete and "No matching files" in lines(host)
        )
        (workspace / "fresh.txt").write_text("x")
        await pilot.press("backspace", "h")
        await until(pilot, lambda: values(host) == ["@fresh.txt "])


async def test_a_refreshed_list_keeps_the_highlighted_completion(tmp_path: Path) -> None:
    host = Host(tmp_path / "home", tmp_path)
    async with host.run_test() as pilot:
        popup = host.prompt.popup
        target = find_mention("@src/", 5)
        assert target is not None
        popup.show(
            target,
            mention_completions([FileMatch("src/app.py", ()), FileMatch("src/helpers.py", ())]),
        )
        popup.move(1)
        await pilot.pause()
        # More files arrived for the same token: the one under the cursor stays under it.
        grown = [FileMatch(path, ()) for path in ("src/aaa.py", "src/app.py", "src/helpers.py")]
        popup.show(target, mention_completions(grown))
        assert popup.current is not None and popup.current.value == "@src/helpers.py "
        other = find_mention("@src/a", 6)
        assert other is not None
        popup.show(
            other, mention_completions([FileMatch("src/aaa.py", ()), FileMatch("src/app.py", ())])
        )
        assert popup.current is not None and popup.current.value == "@src/aaa.py "
