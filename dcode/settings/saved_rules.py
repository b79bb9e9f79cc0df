"""Rules the user saves from an approval: for this project, or everywhere.

"This project" is a file of dcode's own, ``$DCODE_HOME/permissions/<digest of the path>.json``
(0600, in Claude Code's shape), never a file in the repository: saving a rule does not change
the project's files or its trust. "Everywhere" is ``[permissions] allow`` in the user's
``config.toml``. Standard library only.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from dcode.regular_files import read_config
from dcode.settings.permission_sources import RulesError, project_file
from dcode.settings.private_files import write_private


def _read_table(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(read_config(path).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise RulesError(f"{path}: cannot read it: {exc}") from None
    table = data.get("permissions", {}) if isinstance(data, dict) else {}
    return {key: [str(v) for v in value] for key, value in table.items() if isinstance(value, list)}


def save_project_rule(home: Path, workspace: Path, effect: str, rule: str) -> Path:
    path = project_file(home, workspace)
    table = _read_table(path)
    items = table.setdefault(effect, [])
    if rule not in items:
        items.append(rule)
    data = {"workspace": str(workspace.resolve()), "permissions": table}
    write_private(path, json.dumps(data, indent=2) + "\n")
    return path


def remove_project_rule(home: Path, workspace: Path, effect: str, rule: str) -> bool:
    path = project_file(home, workspace)
    table = _read_table(path)
    if rule not in table.get(effect, []):
        return False
    table[effect].remove(rule)
    write_private(
        path,
        json.dumps({"workspace": str(workspace.resolve()), "permissions": table}, indent=2) + "\n",
    )
    return True


def save_user_rule(config: Path, effect: str, rule: str) -> None:
    """Add ``rule`` to ``[permissions] <effect>`` in the user's config, keeping the rest of the
    file as it is written."""
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    current = _user_list(text, effect)
    if rule in current:
        return
    line = f"{effect} = {json.dumps([*current, rule])}"
    write_private(config, _with_line(text, effect, line))


def remove_user_rule(config: Path, effect: str, rule: str) -> bool:
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    current = _user_list(text, effect)
    if rule not in current:
        return False
    line = f"{effect} = {json.dumps([item for item in current if item != rule])}"
    write_private(config, _with_line(text, effect, line))
    return True


def _user_list(text: str, effect: str) -> list[str]:
    table = tomllib.loads(text).get("permissions", {}) if text else {}
    items = table.get(effect, []) if isinstance(table, dict) else []
    return [str(item) for item in items] if isinstance(items, list) else []


_HEADER = re.compile(r"^\s*\[permissions\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


def _with_line(text: str, effect: str, line: str) -> str:
    """``text`` with ``effect = [...]`` of ``[permissions]`` replaced by ``line`` (the old value,
    over however many lines it spans), or added, with the table when there is none."""
    lines = text.splitlines()
    start = next((i for i, item in enumerate(lines) if _HEADER.match(item)), None)
    if start is None:
        prefix = text if not text or text.endswith("\n") else text + "\n"
        return f"{prefix}{chr(10) if prefix else ''}[permissions]\n{line}\n"
    end = next((i for i in range(start + 1, len(lines)) if _ANY_HEADER.match(lines[i])), len(lines))
    key = re.compile(rf"^\s*{effect}\s*=")
    found = next((i for i in range(start + 1, end) if key.match(lines[i])), None)
    if found is None:
        lines.insert(start + 1, line)
    else:
        last = found
        while last < end and not _balanced(lines[found : last + 1]):
            last += 1
        lines[found : last + 1] = [line]
    return "\n".join(lines) + "\n"


def _balanced(lines: list[str]) -> bool:
    """Whether an array value that starts on the first line closes by the last."""
    try:
        tomllib.loads("\n".join(lines))
    except tomllib.TOMLDecodeError:
        return False
    return True
