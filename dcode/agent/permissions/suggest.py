"""The rule an approval offers to remember: ``Bash(npm test *)`` from ``npm test -k foo``.

Derived from what the call does, never from its text alone: a shell line is parsed first, and a
line with more than one command, or anything the words cannot show, offers nothing (a rule for
its first command would not cover it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from dcode.agent.tools.claude_names import CLAUDE_EDIT, CLAUDE_FETCH, CLAUDE_SHELL, FETCH, SHELL
from dcode.agent.tools.spec import ToolKind, spec_for
from dcode.settings.web_address import BadAddress, parse_address


def suggest_rule(
    name: str, args: dict[str, object], inside: Callable[[str], bool] = lambda path: False
) -> str:
    """A rule allowing calls like this one, or ``""`` when none would be both useful and narrow
    (``inside``: whether a redirection's path is in the workspace)."""
    if name == SHELL.name:
        return _shell_rule(args.get("command"), inside)
    if name == FETCH.name:
        try:
            return f"{CLAUDE_FETCH}(domain:{parse_address(str(args.get('url'))).host})"
        except BadAddress:
            return ""
    if spec_for(name).kind is ToolKind.WRITE:
        return _edit_rule(spec_for(name).target_paths(args))
    return name if spec_for(name).kind is ToolKind.OTHER else ""


def _shell_rule(command: object, inside: Callable[[str], bool]) -> str:
    if not isinstance(command, str) or not command.strip():
        return ""
    from dcode.agent.permissions.shell_words import plan_command

    plan = plan_command(command, inside)
    if plan.unsafe or len(plan.commands) != 1:
        return ""
    words = plan.commands[0]
    prefix = list(words[:1])
    for word in words[1:3]:  # "npm test", and the script "npm run lint" names, not every script
        if not _subcommand(word) or (len(prefix) == 2 and prefix[1] not in _RUNNERS):
            break
        prefix.append(word)
    return f"{CLAUDE_SHELL}({' '.join(prefix)} *)"


_RUNNERS = frozenset({"run", "run-script", "exec", "x"})
"""Second words that run whatever the third names (``npm run lint``, ``uv run pytest``)."""


def _subcommand(word: str) -> bool:
    """``test`` in ``npm test``; not a flag, a path or anything with a wildcard or a quote."""
    return word.replace("-", "").replace("_", "").replace(
        ":", ""
    ).isalnum() and not word.startswith("-")


def _edit_rule(targets: list[str]) -> str:
    """``Edit(./src/**)`` for ``src/app/main.py``: the top folder it writes in, inside the
    workspace; nothing for a path that is absolute or climbs out."""
    if len(targets) != 1:
        return ""
    parts = PurePosixPath(targets[0].removeprefix("./")).parts
    if (
        not parts
        or parts[0] in ("/", "~", "..")
        or ".." in parts
        or any(c in targets[0] for c in "*?[]()")
    ):
        return ""
    return f"{CLAUDE_EDIT}(./{parts[0]}/**)" if len(parts) > 1 else f"{CLAUDE_EDIT}(./{parts[0]})"
