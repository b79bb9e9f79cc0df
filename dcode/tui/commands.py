"""The one registry of slash commands.

The same table feeds the input's ``/`` popup (``PromptInput.set_commands``), Textual's command
palette (``SlashCommandProvider``) and ``/help``. Each command says whether it may run while a
turn is in flight; the others wait in the queue behind the turn, like a typed prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from dcode.prompts.commands import PromptCommands
from dcode.settings.config import ApprovalMode


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str
    description: str
    usage: str = ""
    """The arguments, as /help shows them; in brackets when the command also runs without."""
    busy_safe: bool = False
    """True when the command may run at once while the agent works (it touches no thread state)."""
    needs_engine: bool = False
    """True when the command needs the loaded engine, so it waits for it like a prompt does."""
    holds_session: bool = False
    """True when the command changes the thread: while it runs, prompts and commands wait for it
    as they wait for a turn."""

    @property
    def synopsis(self) -> str:
        """The name and its arguments, without the slash: ``model [SPEC]``."""
        return f"{self.name} {self.usage}".rstrip()

    @property
    def label(self) -> str:
        return f"/{self.synopsis}"

    @property
    def args_required(self) -> bool:
        return bool(self.usage) and not self.usage.startswith("[")


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "Show commands and keys", busy_safe=True),
    SlashCommand("clear", "Start a new session (the old one stays resumable)"),
    SlashCommand("resume", "Pick a past session to continue"),
    SlashCommand(
        "model",
        "Switch the model, keeping the conversation (alone: pick one)",
        usage="[SPEC]",
        needs_engine=True,
    ),
    SlashCommand(
        "effort",
        "How hard the model reasons: low, high… or default (alone: show it)",
        usage="[LEVEL]",
        needs_engine=True,
    ),
    SlashCommand("context", "Show where the tokens go", busy_safe=True, needs_engine=True),
    SlashCommand(
        "cost",
        "The session's spend by model and by agent: input, cached, output, reasoning, USD",
        busy_safe=True,
        needs_engine=True,
    ),
    SlashCommand(
        "budget",
        "Show the session's budget, or set it: USD (5, $0.50) or tokens (200k tokens)",
        usage="[USD|tokens]",
        needs_engine=True,
    ),
    SlashCommand(
        "agents",
        "List the agents the task tool can hand a job to, and the files left out",
        busy_safe=True,
    ),
    SlashCommand(
        "mcp",
        "The MCP servers: state, tools, last error; reconnect or disable one",
        busy_safe=True,
        needs_engine=True,
    ),
    SlashCommand(
        "offload",
        "Compact now: summarize and archive the older messages (FOCUS: what the summary keeps in detail)",
        usage="[FOCUS]",
        needs_engine=True,
        holds_session=True,
    ),
    SlashCommand(
        "rewind",
        "Go back to before one of your prompts: the conversation, the files dcode changed, or both",
        needs_engine=True,
        holds_session=True,
    ),
    SlashCommand(
        "permissions",
        "List the permission rules with their sources and the recent denials (remove RULE: drop a rule you saved)",
        usage="[remove RULE]",
        busy_safe=True,
        needs_engine=True,
    ),
    SlashCommand(
        "hooks",
        "List the hooks with their sources and last results, and the project's hooks waiting for trust",
        busy_safe=True,
        needs_engine=True,
    ),
    SlashCommand(
        "approve",
        "Set the approval mode: manual, edits, all or plan (alone: show it)",
        usage="[MODE]",
        busy_safe=True,
    ),
    SlashCommand(
        "plan",
        "Plan mode: the model only reads, then puts a plan to you (TASK: the task to plan)",
        usage="[TASK]",
        busy_safe=True,
    ),
    SlashCommand(
        "sandbox",
        "Run shell commands in a sandbox: workspace-write, read-only, off; network on or off (alone: show it)",
        usage="[MODE|network on|off]",
        busy_safe=True,
    ),
    SlashCommand("theme", "Choose a colour theme", busy_safe=True),
    SlashCommand("copy", "Copy the last answer to the clipboard", busy_safe=True),
    SlashCommand("paste", "Attach the image on the clipboard", busy_safe=True),
    SlashCommand("quit", "Quit dcode", busy_safe=True),
)

BY_NAME: dict[str, SlashCommand] = {command.name: command for command in COMMANDS}
ALIASES: dict[str, str] = {"exit": "quit", "new": "clear", "?": "help", "compact": "offload"}

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "Send the prompt (queued while the agent works)"),
    ("Shift+Enter / Alt+Enter / Ctrl+J", "New line"),
    ("Up / Down", "Prompt history"),
    ("Esc", "Close a dialog, reject an approval, put the last queued message back, or interrupt"),
    ("Esc Esc", "Clear the draft; on an empty prompt, rewind to before one of your prompts"),
    ("Ctrl+C", "Copy the selection, or interrupt; twice to quit"),
    ("Ctrl+D", "Quit"),
    ("Shift+Tab", "Cycle the approval mode: manual, edits, all"),
    ("PageUp / PageDown", "Scroll the transcript (earlier messages load at the top)"),
    ("Ctrl+O", "Expand or collapse tool output"),
    ("Ctrl+G / Ctrl+X", "Write the prompt in $VISUAL or $EDITOR"),
    ("Ctrl+P", "Command palette"),
    ("y / a / n / Tab", "At an approval: yes, yes for the session, no, no with feedback"),
    ("!cmd / !!cmd", "Run a shell command (!! keeps its output out of the model's context)"),
    ("@path", "Mention a file"),
)


@dataclass(frozen=True, slots=True)
class Invocation:
    command: SlashCommand
    args: str


class UnknownCommand(ValueError):
    pass


def parse(text: str) -> Invocation | None:
    """``/name args`` → an Invocation; None when the text is not a command at all.

    ``//text`` and ``/`` followed by a path (``/usr/bin``) are prompts, not commands.
    Raises UnknownCommand for ``/word`` that names no command.
    """
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, args = stripped[1:].partition(" ")
    if not head or "/" in head:
        return None
    name = ALIASES.get(head.lower(), head.lower())
    command = BY_NAME.get(name)
    if command is None:
        raise UnknownCommand(head)
    return Invocation(command, args.strip())


def popup_entries(custom: PromptCommands | None = None) -> list[tuple[str, str]]:
    """What ``PromptInput.set_commands`` takes: (name, description) pairs, the user's own
    commands after the built-in ones."""
    return [(command.name, command.description) for command in COMMANDS] + custom_entries(custom)


def custom_entries(custom: PromptCommands | None) -> list[tuple[str, str]]:
    return (
        [
            (command.name, command.label)
            for command in sorted(custom.commands.values(), key=lambda c: c.name)
        ]
        if custom
        else []
    )


RESERVED: frozenset[str] = frozenset([*BY_NAME, *ALIASES])
"""Names a file's command cannot take."""


def help_entries() -> list[tuple[str, str]]:
    """(synopsis, description) rows; ``HelpScreen`` writes the slash."""
    return [(command.synopsis, command.description) for command in COMMANDS]


def _palette_entries() -> Iterable[tuple[str, str, str, str]]:
    """(display, help, command name, args) rows; ``/approve`` gets one row per mode."""
    for command in COMMANDS:
        if command.name == "approve":
            for mode in ApprovalMode:
                yield (
                    f"/approve {mode.value}",
                    f"Approval mode: {mode.value}",
                    command.name,
                    mode.value,
                )
        elif command.usage:
            yield command.label, command.description, command.name, ""
        else:
            yield f"/{command.name}", command.description, command.name, ""


@runtime_checkable
class RunsSlashCommands(Protocol):
    """What the palette needs of its App (``DcodeApp``): named here, so this registry, which
    the App imports, imports nothing of the App."""

    def run_slash(self, invocation: Invocation) -> None: ...

    def prefill_prompt(self, text: str) -> None: ...


class SlashCommandProvider(Provider):
    """The slash commands in Textual's command palette (Ctrl+P)."""

    def _run(self, name: str, args: str) -> None:
        app = self.app
        # Textual types a provider's app as any App; this provider is only ever given dcode's.
        assert isinstance(app, RunsSlashCommands)
        command = BY_NAME[name]
        if command.args_required and not args:
            # It needs an argument: put it in the input for the user to finish.
            app.prefill_prompt(f"/{name} ")
            return
        app.run_slash(Invocation(command, args))

    async def discover(self) -> Hits:
        for display, help_text, name, args in _palette_entries():
            yield DiscoveryHit(display, partial(self._run, name, args), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for display, help_text, name, args in _palette_entries():
            score = max(matcher.match(display), matcher.match(help_text) * 0.5)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(display),
                    partial(self._run, name, args),
                    text=display,
                    help=help_text,
                )
