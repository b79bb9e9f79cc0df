"""Your own slash commands: Markdown files whose text becomes the prompt (``/review src/app.py``).

A command is a ``.md`` file in, lowest priority first, ``$DCODE_HOME/commands``,
``~/.claude/commands``, ``.dcode/commands`` and ``.claude/commands`` (Claude Code's format, so
its commands work as they are). Its name is the file's name; a file in a subdirectory is named
``dir:name``. An optional YAML frontmatter gives ``description`` and ``argument-hint``; without
one, the description is the body's first line. The body is the prompt: ``$ARGUMENTS`` stands
for everything typed after the name, ``$1`` … ``$9`` for its words (quotes group them); when
the body names neither, what was typed is added after it.

A command is text and nothing else: it is sent as if typed. Frontmatter fields that would do
more in other tools (``allowed-tools``, ``model``, shell lines) grant nothing and change nothing
here, so a cloned project's commands cannot widen what dcode may do. A project's files that
lead outside the project are not read. A command named as a built-in one is left out, with the
reason. Standard library and PyYAML only: ``dcode -p`` and the TUI's first frame do not wait
on it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from dcode.regular_files import open_regular, read_regular
from dcode.settings.project_files import OUTSIDE_PROJECT, inside, real_path

COMMANDS_DIR = "commands"
MAX_COMMAND_BYTES = 256 * 1024
MAX_FILES_PER_SOURCE = 500
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_POSITIONAL = re.compile(r"\$([1-9])")


@dataclass(frozen=True, slots=True)
class PromptCommand:
    name: str
    description: str
    body: str
    path: Path
    scope: str
    """``user`` or ``project``: where it was found."""
    argument_hint: str = ""

    def expand(self, arguments: str) -> str:
        """The prompt this command sends with ``arguments`` (what was typed after its name)."""
        arguments = arguments.strip()
        body = self.body.strip()
        uses = "$ARGUMENTS" in body or _POSITIONAL.search(body) is not None
        try:
            words = shlex.split(arguments)
        except ValueError:  # an unclosed quote: the words are what the spaces give
            words = arguments.split()
        text = _POSITIONAL.sub(
            lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", body
        )
        text = text.replace("$ARGUMENTS", arguments)
        if arguments and not uses:
            text = f"{text}\n\n{arguments}"
        return text

    @property
    def label(self) -> str:
        """What the ``/`` popup and ``/help`` say of it."""
        hint = f" {self.argument_hint}" if self.argument_hint else ""
        return f"{self.description}{hint} ({self.scope})"


@dataclass(frozen=True, slots=True)
class PromptCommands:
    commands: dict[str, PromptCommand] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(path, why it was left out)."""

    def get(self, name: str) -> PromptCommand | None:
        return self.commands.get(name)

    def find(self, typed: str) -> tuple[PromptCommand, str] | None:
        """The command ``/name arguments`` names and its arguments, when it is one of these."""
        stripped = typed.strip()
        if not stripped.startswith("/"):
            return None
        name, _, arguments = stripped[1:].partition(" ")
        command = self.commands.get(name)
        return (command, arguments) if command is not None else None

    def expand(self, typed: str) -> str | None:
        """The prompt ``/name arguments`` sends when ``name`` is one of these; None otherwise."""
        found = self.find(typed)
        return found[0].expand(found[1]) if found is not None else None


def command_sources(
    home: Path, workspace: Path, user: Path | None = None
) -> list[tuple[Path, str]]:
    """Where commands are looked for, lowest priority first, each with its scope. A directory
    reached twice (the workspace is the home directory) counts once, as the user's."""
    user = user or Path.home()
    found: dict[Path, tuple[Path, str]] = {}
    for path, scope in (
        (home / COMMANDS_DIR, "user"),
        (user / ".claude" / COMMANDS_DIR, "user"),
        (workspace / ".dcode" / COMMANDS_DIR, "project"),
        (workspace / ".claude" / COMMANDS_DIR, "project"),
    ):
        found.setdefault(real_path(path), (path, scope))
    return list(found.values())


def load_commands(
    home: Path, workspace: Path, *, reserved: Collection[str] = (), user: Path | None = None
) -> PromptCommands:
    """Every command of this user and workspace; a later source replaces an earlier one of the
    same name; ``reserved`` names (the built-in commands) are left out."""
    commands: dict[str, PromptCommand] = {}
    problems: list[tuple[str, str]] = []
    root = real_path(workspace)
    for source, scope in command_sources(home, workspace, user):
        for path, name in _files(source, problems):
            if scope == "project" and not inside(path, root):
                problems.append((str(path), OUTSIDE_PROJECT))
                continue
            if name.lower() in reserved:
                problems.append((str(path), f"/{name} is a built-in command"))
                continue
            command = _parse(path, name, scope, problems)
            if command is not None:
                commands[name] = command
    return PromptCommands(commands, problems)


def _files(source: Path, problems: list[tuple[str, str]]) -> list[tuple[Path, str]]:
    """The ``.md`` files under ``source`` (one level of subdirectories), with their names."""
    try:
        if not source.is_dir():
            return []
        entries: list[tuple[Path, str]] = []
        for entry in sorted(source.iterdir()):
            if entry.is_dir():
                entries += [
                    (inner, f"{entry.name}:{inner.stem}")
                    for inner in sorted(entry.iterdir())
                    if inner.suffix == ".md" and inner.is_file()
                ]
            elif entry.suffix == ".md" and entry.is_file():
                entries.append((entry, entry.stem))
    except OSError as exc:
        problems.append((str(source), f"could not be listed ({exc.strerror or exc})"))
        return []
    named = []
    for path, name in entries:
        if all(_NAME.match(part) for part in name.split(":")):
            named.append((path, name))
        else:
            problems.append(
                (str(path), "its name is not a command name (letters, digits, '.', '_' and '-')")
            )
    if len(named) > MAX_FILES_PER_SOURCE:
        problems.append(
            (
                str(source),
                f"only the first {MAX_FILES_PER_SOURCE} of its {len(named)} commands are read",
            )
        )
    return named[:MAX_FILES_PER_SOURCE]


def _parse(
    path: Path, name: str, scope: str, problems: list[tuple[str, str]]
) -> PromptCommand | None:
    from dcode.agent.frontmatter import FrontmatterError, cut, read_document

    try:
        with open_regular(path) as handle:  # a named pipe would hang the start
            head = handle.read(3)
        if head == b"---":
            document = read_document(path, MAX_COMMAND_BYTES, required=())
            meta, body = document.meta, document.body
        else:
            if path.stat().st_size > MAX_COMMAND_BYTES:
                raise FrontmatterError(f"skipped, larger than {MAX_COMMAND_BYTES // 1024} KiB")
            meta, body = {}, read_regular(path).decode("utf-8", errors="replace")
    except FrontmatterError as exc:
        problems.append((str(path), str(exc)))
        return None
    except OSError as exc:
        problems.append((str(path), f"could not be read ({exc.strerror or exc})"))
        return None
    if not body.strip():
        problems.append((str(path), "it holds no prompt"))
        return None
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        description = next(
            (line.strip().lstrip("#").strip() for line in body.splitlines() if line.strip()), name
        )
    hint = meta.get("argument-hint")
    if isinstance(hint, list):  # `argument-hint: [file]` reads as a YAML list
        hint = " ".join(f"[{item}]" for item in hint)
    return PromptCommand(
        name,
        cut(description, 80),
        body,
        path,
        scope,
        cut(hint, 40) if isinstance(hint, str) else "",
    )
