"""The input box's parts that need no UI: history, placeholders, the file index, the parsers."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dcode.tui.history import PromptHistory
from dcode.tui.widgets.completion import (
    CompletionKind,
    find_mention,
    find_slash,
    match_commands,
)
from dcode.tui.widgets.file_index import FileIndex, rank_paths, scan_workspace
from dcode.tui.widgets.placeholders import (
    Draft,
    PastedTextSource,
    PlaceholderRegistry,
    PlaceholderSource,
)
from dcode.tui.widgets.prompt_input import ShellMode, find_mentions, split_prompt
from tests.support.file_trees import use_source

# --- history


def test_history_append_load_and_navigate(tmp_path: Path) -> None:
    path = tmp_path / "h" / "history.jsonl"
    history = PromptHistory(path, cwd=tmp_path)
    assert history.load() == []
    assert history.append("one")
    assert not history.append("one")  # consecutive duplicate
    assert not history.append("   ")
    assert history.append("two")
    assert history.append("one")  # not consecutive: kept

    again = PromptHistory(path)
    assert [entry.text for entry in again.load()] == ["one", "two", "one"]
    assert again.entries[0].cwd == str(tmp_path)
    assert not again.navigating
    assert again.previous().text == "one"  # type: ignore[union-attr]
    assert again.previous().text == "two"  # type: ignore[union-attr]
    assert again.previous().text == "one"  # type: ignore[union-attr]
    assert again.previous() is None  # oldest
    assert again.next().text == "two"  # type: ignore[union-attr]
    assert again.next().text == "one"  # type: ignore[union-attr]
    assert again.next() is None and not again.navigating  # back on the draft


def test_history_skips_corrupt_lines_and_caps(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    lines = [json.dumps({"text": f"p{n}", "ts": n, "cwd": "/"}) for n in range(30)]
    lines[5] = "{broken"
    lines[6] = json.dumps({"no": "text"})
    lines[7] = json.dumps(["not", "a", "dict"])
    path.write_text("\n".join(lines) + "\n\n")
    history = PromptHistory(path, limit=10)
    texts = [entry.text for entry in history.load()]
    assert texts == [f"p{n}" for n in range(20, 30)]


def test_history_compacts_a_long_file(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps({"text": f"p{n}"}) + "\n" for n in range(40)))
    history = PromptHistory(path, limit=10)
    assert len(history.load()) == 10
    assert len(path.read_text().splitlines()) == 10
    assert history.append("new")
    assert [entry.text for entry in PromptHistory(path, limit=10).load()][-1] == "new"


def test_history_merges_prompts_sent_while_loading(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps({"text": "old", "ts": 1.0}) + "\n")
    history = PromptHistory(path)
    history.append("sent early")  # written to the file before load reads it
    assert [entry.text for entry in history.load()] == ["old", "sent early"]


def test_history_keeps_huge_prompts_out_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    history = PromptHistory(path)
    assert history.append("x" * 200_000)
    assert not path.exists()
    assert history.previous() is not None


def test_history_unwritable_file_does_not_raise(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    history = PromptHistory(blocker / "history.jsonl")
    assert history.load() == []
    assert history.append("still works")


# --- placeholders


def _registry_with(text: str, label: str, at: int) -> tuple[PlaceholderRegistry, str]:
    registry = PlaceholderRegistry([PastedTextSource()])
    registry.next_number("paste")
    registry.add("paste", label, at, "PAYLOAD")
    return registry, text


def test_apply_edit_shifts_keeps_and_drops() -> None:
    label = "[Pasted text #1 +3 lines]"
    registry, _ = _registry_with(f"ab{label}cd", label, 2)
    registry.apply_edit(0, 0, 3)  # insert 3 before
    assert [t.start for t in registry] == [5]
    registry.apply_edit(5, 5, 1)  # insert exactly at the start edge: token moves
    assert [t.start for t in registry] == [6]
    end = 6 + len(label)
    registry.apply_edit(end, end, 4)  # at the end edge: untouched
    assert [t.start for t in registry] == [6]
    registry.apply_edit(7, 8, 0)  # cut into it: gone
    assert len(registry) == 0


def test_expand_only_bound_tokens_and_validate() -> None:
    label = "[Pasted text #1 +3 lines]"
    text = f"{label} and {label}"
    registry, _ = _registry_with(text, label, 0)
    assert registry.expand(text) == f"PAYLOAD and {label}"  # the second one is a lookalike
    assert registry.validate("changed") and len(registry) == 0


def test_resync_follows_an_edit_from_text_alone() -> None:
    label = "[Pasted text #1 +3 lines]"
    registry, text = _registry_with(f"xx {label} yy", label, 3)
    registry.resync(text, f"xxzz {label} yy")
    assert [t.start for t in registry] == [5]
    registry.resync(f"xxzz {label} yy", "xxzz yy")
    assert len(registry) == 0


def test_widen_and_containing() -> None:
    label = "[Pasted text #1 +3 lines]"
    registry, _ = _registry_with(f"ab{label}", label, 2)
    end = 2 + len(label)
    assert registry.widen(end - 1, end) == (2, end)
    assert registry.widen(0, 3) == (0, end)
    assert registry.widen(0, 2) == (0, 2)
    assert registry.containing(2) is None and registry.containing(end) is None
    assert registry.containing(3) is not None


def test_removed_is_reported_to_the_source() -> None:
    class Recording(PlaceholderSource):
        kind = "image"

        def __init__(self) -> None:
            self.gone: list[str] = []

        def removed(self, placeholder) -> None:  # type: ignore[no-untyped-def]
            self.gone.append(placeholder.label)

    source = Recording()
    registry = PlaceholderRegistry([source])
    registry.add("image", "[image 1]", 0, b"")
    registry.apply_edit(0, 3, 0)
    assert source.gone == ["[image 1]"]


def test_draft_round_trips_through_json() -> None:
    label = "[Pasted text #2 +3 lines]"
    registry, text = _registry_with(f"see {label}", label, 4)
    sources = registry.sources_by_kind
    raw = registry.snapshot(text).to_json(sources)
    assert raw is not None
    draft = Draft.from_json(json.loads(json.dumps(raw)), sources)
    assert draft is not None and draft.text == text
    assert [(t.label, t.start, t.payload) for t in draft.placeholders] == [(label, 4, "PAYLOAD")]
    raw["placeholders"][0]["start"] = 0  # label not there: nothing to restore
    assert Draft.from_json(raw, sources) is None
    assert Draft.from_json({"text": 3}, sources) is None


def test_pasted_text_threshold() -> None:
    source = PastedTextSource()
    assert not source.should_collapse("a\nb")
    assert not source.should_collapse("a\nb\n")
    assert source.should_collapse("a\nb\nc")
    assert source.should_collapse("x" * 801)
    assert not source.should_collapse("x" * 800)


# --- prefixes and tokens


def test_split_prompt() -> None:
    assert split_prompt("!ls", "!ls") == (ShellMode.CONTEXT, "ls")
    assert split_prompt("  !! git log ", "  !! git log ") == (ShellMode.PRIVATE, "git log")
    assert split_prompt("\n\nhi  \n", "\n\nhi  \n") == (None, "hi")
    # A paste that starts with "!" is not a shell command: the prefix is read from the typed text.
    assert split_prompt("[Pasted text #1 +3 lines]", "!rm -rf\nx\ny") == (None, "!rm -rf\nx\ny")


def test_find_mention_and_slash() -> None:
    mention = find_mention("see @src/a", 10)
    assert mention is not None and mention.kind is CompletionKind.MENTION
    assert (mention.start, mention.end, mention.query) == (4, 10, "src/a")
    assert find_mention("mail me@host", 12) is None
    assert find_mention("@a b", 4) is None
    slash = find_slash("/mod", 4)
    assert slash is not None and slash.query == "mod"
    assert find_slash("/model x", 8) is None
    assert find_slash("a /mod", 6) is None


def test_match_commands_prefers_prefix() -> None:
    commands = [("help", "Show help"), ("model", "Switch model"), ("remodel", "x")]
    assert [name for name, _ in match_commands("mod", commands)] == ["model", "remodel"]
    assert [name for name, _ in match_commands("", commands)] == ["help", "model", "remodel"]


# --- file index


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_scan_uses_git_and_respects_gitignore(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_source("git", monkeypatch, tmp_path_factory.mktemp("bin"))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "build.log").write_text("")
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "x.py").write_text("")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    paths = scan_workspace(tmp_path)
    assert "pkg/mod.py" in paths and "pkg/" in paths and ".gitignore" in paths
    assert "build.log" not in paths
    assert not any(path.startswith(".venv") for path in paths)


def test_scan_without_git_prunes_and_caps(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_source("walk", monkeypatch, tmp_path_factory.mktemp("bin"))
    for n in range(30):
        (tmp_path / f"f{n:02d}.txt").write_text("")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.js").write_text("")
    (tmp_path / "skip.log").write_text("")
    (tmp_path / ".gitignore").write_text("*.log\n")
    paths = scan_workspace(tmp_path, cap=10)
    assert len(paths) == 10
    assert all(not path.startswith("node_modules") for path in paths)
    everything = scan_workspace(tmp_path)
    assert "skip.log" not in everything


def test_rank_paths_orders_by_quality() -> None:
    paths = ["docs/app-notes.md", "src/app.py", "src/main/application.py", "xappy.txt", "a/p/p.c"]
    ranked = [match.path for match in rank_paths("app", paths)]
    assert ranked[:2] == ["src/app.py", "docs/app-notes.md"]
    assert ranked[-1] == "a/p/p.c"  # subsequence only
    top = rank_paths("app", paths)[0]
    assert top.positions == (4, 5, 6)
    index = FileIndex(Path("."))
    index.set_paths(paths)
    assert index.match("zzz") == []
    assert [match.path for match in index.match("", limit=2)] == ["xappy.txt", "docs/app-notes.md"]


def test_find_mentions(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    text = "see @src/a.py, @src/ and @missing.py; mail me@src/a.py and @src/a.py @../ @/etc"
    assert find_mentions(text, tmp_path) == ("src/a.py", "src/")
