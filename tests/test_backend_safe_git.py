"""git in an untrusted repository: the programs its configuration names never run.

The hostile repository's own check comes first: plain git runs its programs, so the tests
after it (which assert that nothing ran) can fail.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dcode.agent.backends.listing import git_files
from dcode.agent.backends.safe_git import asafe_git, driver_overrides, safe_git
from dcode.tui.widgets.file_index import scan_workspace
from tests.support.hostile_repo import BRANCH, DIRTY, HostileRepo, make_hostile_repo

TRACKED = {".gitattributes", "filtered.txt", "included.txt", "processed.txt", "worktree.txt"}


@pytest.fixture
def hostile(tmp_path: Path) -> HostileRepo:
    return make_hostile_repo(tmp_path / "repo", tmp_path / "marks")


def run(argv: list[str], repo: HostileRepo, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        argv, cwd=repo.path, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    ).stdout


def test_plain_git_runs_what_the_repository_configures(hostile: HostileRepo) -> None:
    assert run(["git", "status", "--porcelain"], hostile).count(" M ") == DIRTY
    assert {
        "fsmonitor",
        "clean",
        "process-filter",
        "included-clean",
        "worktree-clean",
        "post-index-change",
    } <= set(hostile.fired())
    hostile.clear()
    run(["git", "diff"], hostile)
    assert "external-diff" in hostile.fired()
    hostile.clear()
    run(["git", "log", "-1", "-p"], hostile)
    assert "textconv" in hostile.fired()
    hostile.clear()
    run(["git", "ls-files"], hostile)
    assert hostile.fired() == ["fsmonitor"]


@pytest.mark.parametrize(
    "args",
    [
        ("status", "--porcelain"),
        ("diff",),
        ("diff", "--stat"),
        ("log", "-1", "-p"),
        ("ls-files", "--cached", "--others", "--exclude-standard"),
        ("checkout", "--", "filtered.txt"),
    ],
)
def test_safe_git_runs_none_of_it(hostile: HostileRepo, args: tuple[str, ...]) -> None:
    git = safe_git(hostile.path)
    assert git is not None
    output = run(git.argv(*args), hostile, git.env)
    assert hostile.fired() == []
    if args[0] == "status":
        assert output.count(" M ") == DIRTY  # the same answer, read without the filters


async def test_the_async_setup_is_the_same(hostile: HostileRepo) -> None:
    assert await asafe_git(hostile.path) == safe_git(hostile.path)
    assert hostile.fired() == []


def test_a_driver_name_that_cannot_be_overridden_stops_git(hostile: HostileRepo) -> None:
    subprocess.run(
        ["git", "config", "filter.x=y.clean", "touch marker"], cwd=hostile.path, check=True
    )
    assert safe_git(hostile.path) is None
    assert hostile.fired() == []


def test_only_the_repositorys_own_drivers_are_switched_off() -> None:
    listing = "\n".join(
        [
            "global\tfilter.lfs.clean",  # the user's own, left alone
            "local\tfilter.evil.clean",
            "local\tfilter.with.dots.process",
            "worktree\tdiff.conv.textconv",
            "local\tdiff.external",  # no driver name: a fixed override covers it
        ]
    )
    overrides = dict(driver_overrides(listing) or [])
    assert overrides == {
        "filter.evil.clean": "",
        "filter.evil.smudge": "",
        "filter.evil.process": "",
        "filter.evil.required": "false",
        "filter.with.dots.clean": "",
        "filter.with.dots.smudge": "",
        "filter.with.dots.process": "",
        "filter.with.dots.required": "false",
        "diff.conv.textconv": "",
        "diff.conv.command": "",
    }
    assert driver_overrides("local\tfilter.a=b.clean") is None


async def test_search_listing_runs_nothing(hostile: HostileRepo) -> None:
    files = await git_files(hostile.path)
    assert files is not None and {path.name for path in files} == TRACKED
    assert hostile.fired() == []


def test_mention_completion_runs_nothing(hostile: HostileRepo) -> None:
    assert set(scan_workspace(hostile.path)) == TRACKED
    assert hostile.fired() == []


def test_branch_still_reads_as_before(hostile: HostileRepo) -> None:
    git = safe_git(hostile.path)
    assert git is not None
    assert run(git.argv("symbolic-ref", "--short", "HEAD"), hostile, git.env).strip() == BRANCH
