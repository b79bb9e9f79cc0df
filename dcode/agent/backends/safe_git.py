"""git in a repository nobody has trusted yet: nothing the repository configures gets to run.

git reads the repository's own configuration (``.git/config``, the files it includes, the
worktree's ``config.worktree``), and several keys there name programs that plain read-only
commands run: ``core.fsmonitor`` on every index read (``status``, ``ls-files``); the clean,
smudge and process filters ``.gitattributes`` selects (``status`` hashes a changed file
through them); hooks (``status`` refreshing the index runs ``post-index-change``); the pager;
external diff and textconv drivers. A cloned repository would run its own code the moment
dcode looked at it: at session start, before any approval, in every mode.

So every git call dcode makes by itself (the local context's ``status``, the file lists for
search and ``@`` completion) overrides those keys on the command line, which beats every
file: the fixed ``OVERRIDES``, and each filter and diff driver that the repository's own
config defines, made inert (found with ``git config --get-regexp``, which reads files and
runs nothing). The system config is skipped (``GIT_CONFIG_NOSYSTEM``); the user's global
config is theirs and applies as usual. No optional locks are taken, so ``status`` never
writes the index. A driver whose name ``-c`` cannot spell (it holds ``=``) means git is not
run at all: the caller falls back to reading files, or reports nothing.

``shell_function`` is the same rule in POSIX sh, for scripts a backend runs on its own
machine (the local context).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from dcode.agent.backends.procs import run_capture

ENV: Mapping[str, str] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
}
OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("diff.external", ""),
)
# The keys of a driver that name a program, and what makes each inert (an empty command is
# no command; a filter that is "required" would then fail, so it no longer is).
DRIVER_KEYS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("textconv", ""), ("command", "")),
}
REPOSITORY_SCOPES = frozenset({"local", "worktree"})
DRIVER_QUERY: tuple[str, ...] = (
    "config",
    "--show-scope",
    "--includes",
    "--name-only",
    "--get-regexp",
    r"^(filter|diff)\.",
)
QUERY_TIMEOUT_S = 10.0


def driver_overrides(listing: str) -> list[tuple[str, str]] | None:
    """What makes inert every driver that ``listing`` (``DRIVER_QUERY``'s output: a scope, a
    tab and a key per line) shows the repository's own config defining; None when a driver's
    name cannot be written as a ``-c`` key."""
    overrides: dict[tuple[str, str], None] = {}
    for line in listing.splitlines():
        scope, _, key = line.partition("\t")
        if scope not in REPOSITORY_SCOPES:
            continue
        if "=" in key:
            return None
        section, _, rest = key.partition(".")
        name, dot, _ = rest.rpartition(".")
        if not dot or section not in DRIVER_KEYS:
            continue  # a key without a driver name (diff.external) is a fixed override
        for option, value in DRIVER_KEYS[section]:
            overrides[(f"{section}.{name}.{option}", value)] = None
    return list(overrides)


def git_argv(git: str, overrides: Sequence[tuple[str, str]], args: Sequence[str]) -> list[str]:
    pairs = [*OVERRIDES, *overrides]
    return [
        git,
        "--no-pager",
        *(part for key, value in pairs for part in ("-c", f"{key}={value}")),
        *args,
    ]


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment by default) with ``ENV`` on top."""
    return {**(os.environ if base is None else base), **ENV}


@dataclass(frozen=True, slots=True)
class SafeGit:
    """git, set up for one directory with everything its repository configures made inert."""

    git: str
    overrides: tuple[tuple[str, str], ...]
    env: dict[str, str]

    def argv(self, *args: str) -> list[str]:
        return git_argv(self.git, self.overrides, args)


def _prepared(git: str, env: dict[str, str], returncode: int, stdout: bytes) -> SafeGit | None:
    if returncode not in (0, 1):  # 1: no driver defined anywhere
        return None
    overrides = driver_overrides(os.fsdecode(stdout))
    return None if overrides is None else SafeGit(git, tuple(overrides), env)


def safe_git(
    cwd: Path, git: str = "git", *, env: Mapping[str, str] | None = None
) -> SafeGit | None:
    """git for ``cwd``, starting from the environment ``env`` (blocking); None when git is
    missing or the repository cannot be made safe."""
    full = git_env(env)
    try:
        done = subprocess.run(
            git_argv(git, (), DRIVER_QUERY),
            cwd=cwd,
            env=full,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=QUERY_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return _prepared(git, full, done.returncode, done.stdout)


async def asafe_git(
    cwd: Path, git: str = "git", *, env: Mapping[str, str] | None = None
) -> SafeGit | None:
    """``safe_git`` for the event loop."""
    full = git_env(env)
    try:
        done = await asyncio.wait_for(
            run_capture(git_argv(git, (), DRIVER_QUERY), cwd=cwd, env=full), QUERY_TIMEOUT_S
        )
    except (OSError, TimeoutError):
        return None
    return _prepared(git, full, done.returncode, done.stdout)


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def shell_function(name: str = "safe_git") -> str:
    """A POSIX sh function ``name`` that runs git as ``SafeGit`` does; it returns 125, running
    nothing, when the repository cannot be made safe."""
    env = " ".join(f"{key}={_sh_quote(value)}" for key, value in ENV.items())
    fixed = " ".join(f"-c {_sh_quote(f'{key}={value}')}" for key, value in OVERRIDES)
    query = " ".join(_sh_quote(part) for part in DRIVER_QUERY)
    scopes = "|".join(f'"{scope}$_tab"*' for scope in sorted(REPOSITORY_SCOPES))
    arms = "\n".join(
        f"      {section}.*) set -- "
        + " ".join(f'-c "{section}.$_name.{option}={value}"' for option, value in options)
        + ' "$@" ;;'
        for section, options in DRIVER_KEYS.items()
    )
    return f"""\
{name}() {{
  _listing=$({env} git --no-pager {fixed} {query} 2>/dev/null) || [ $? -eq 1 ] || return 125
  _tab=$(printf '\\t')
  while IFS= read -r _line; do
    case $_line in {scopes}) ;; *) continue ;; esac
    _key=${{_line#*"$_tab"}}
    case $_key in *=*) return 125 ;; esac
    _name=${{_key#*.}}
    [ "$_name" = "${{_name%.*}}" ] && continue
    _name=${{_name%.*}}
    case $_key in
{arms}
    esac
  done <<DCODE_GIT_DRIVERS
$_listing
DCODE_GIT_DRIVERS
  {env} git --no-pager {fixed} "$@"
}}
"""
