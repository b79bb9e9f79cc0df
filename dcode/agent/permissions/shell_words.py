"""What a shell command line will run, read with a real bash parser (tree-sitter-bash).

A shell rule is matched against each simple command the line runs, not against the text: in
``npm test; rm -rf ~`` an allow rule for ``npm test`` covers the first command only. Words are
taken as bash will pass them (quotes removed, escapes applied), leading ``VAR=value``
assignments are set aside, and ``bash -c '…'`` (``sh``, ``zsh``, ``dash``) is read inside, as is
the command a wrapper runs (``timeout 5 npm test``, ``sudo rm``, ``find -exec``: ``wrappers``).

Whatever the words alone cannot show makes the line ``unsafe`` for allow rules: command or
process substitution, a variable's value, ``eval``, backgrounding, compound statements, a
redirection to a path outside the workspace, text the parser cannot read. An unsafe line still
lists every command found in it, substitutions included, so ``deny`` and ``ask`` rules see them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dcode.agent.permissions.shell_writes import paths_written
from dcode.agent.permissions.wrappers import Unwrapped, unwrap

if TYPE_CHECKING:  # tree-sitter loads on the first command read
    from tree_sitter import Node, Parser

_SEPARATORS = frozenset({"&&", "||", ";", "|", "|&", ";;", "\n", "comment"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_EVALUATORS = frozenset({"eval", "source", ".", "exec", "command", "builtin"})
_LOADERS = (
    "PATH",
    "LD_",
    "DYLD_",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "IFS",
    "PROMPT_COMMAND",
)
"""Assignments that change which program runs, or what the shell runs first: never vouched for."""
_WRITING = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&"})
"""Redirections that write their path."""
_HARMLESS_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
MAX_NESTING = 6
"""``bash -c`` inside ``sudo`` inside ``bash -c``…: deeper than this is not read, and no rule
can say what the line runs (``ShellPlan.too_deep``)."""


@dataclass(frozen=True, slots=True)
class ShellPlan:
    commands: tuple[tuple[str, ...], ...]
    """Each simple command's words, as it will run (assignments left out)."""
    unsafe: tuple[str, ...]
    """Why no allow rule can vouch for the line; empty when each command alone decides."""
    too_deep: bool = False
    """Shells and wrappers nest deeper than ``MAX_NESTING``: a deny rule cannot be checked, so
    it refuses the line."""
    writes: tuple[str, ...] = ()
    """Paths the line plainly writes (``> path``, ``tee path``, ``cp a path``), as written."""
    written: tuple[tuple[str, ...], ...] = ()
    """Commands as written that ``commands`` shows by what they run (``nice rm x``, whose
    command is ``rm x``; ``rm x`` for ``/bin/rm x``): deny and ask rules see these too."""

    @property
    def every_form(self) -> tuple[tuple[str, ...], ...]:
        """What deny and ask rules are matched against: each command, both ways."""
        return (*self.commands, *self.written)


@dataclass
class _Walk:
    inside: Callable[[str], bool]
    depth: int
    commands: list[tuple[str, ...]] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)
    written: list[tuple[str, ...]] = field(default_factory=list)
    too_deep: bool = False
    writes: list[str] = field(default_factory=list)

    def flag(self, reason: str) -> None:
        if reason not in self.unsafe:
            self.unsafe.append(reason)


@functools.cache
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def plan_command(command: str, inside: Callable[[str], bool]) -> ShellPlan:
    """The commands ``command`` runs; ``inside`` says whether a redirection's path is in the
    workspace."""
    walk = _Walk(inside, 0)
    _read_script(command, walk)
    return ShellPlan(
        tuple(walk.commands),
        tuple(walk.unsafe),
        too_deep=walk.too_deep,
        writes=tuple(walk.writes),
        written=tuple(walk.written),
    )


def _read_script(text: str, walk: _Walk) -> None:
    tree = _parser().parse(text.encode("utf-8", errors="surrogateescape"))
    root = tree.root_node
    if root.has_error:
        walk.flag("the shell cannot parse it")
    for node in _descendants(root):
        if node.type in _SUBSTITUTIONS:
            walk.flag("it runs a command substitution")
    _statement(root, walk)


def _text(node: Node, errors: str) -> str:
    """The node's source. tree-sitter leaves it None only in a tree parsed without one, which
    ``_read_script`` never makes."""
    return (node.text or b"").decode(errors=errors)


def _descendants(node: Node) -> Iterator[Node]:
    for child in node.children:
        yield child
        yield from _descendants(child)


def _statement(node: Node, walk: _Walk) -> None:
    match node.type:
        case "program" | "list" | "pipeline" | "negated_command" | "!":
            for child in node.children:
                if child.type == "&":
                    walk.flag("it runs a command in the background")
                elif child.type not in _SEPARATORS:
                    _statement(child, walk)
        case "command":
            _command(node, walk)
        case "redirected_statement":
            for child in node.children:
                if child.type.endswith("redirect"):
                    _redirect(child, walk)
                else:
                    _statement(child, walk)
        case _:
            walk.flag(f"it is more than simple commands ({node.type.replace('_', ' ')})")
            _inner_commands(node, walk)


def _inner_commands(node: Node, walk: _Walk) -> None:
    """The commands inside a construct dcode does not vouch for, for deny and ask rules."""
    for child in _descendants(node):
        if child.type == "command":
            _command(child, walk)


def _command(node: Node, walk: _Walk) -> None:
    words: list[str] = []
    for child in node.children:
        if child.type == "variable_assignment":
            _assignment(child, walk)  # FOO=1 npm test runs npm
            continue
        if child.type.endswith("redirect"):
            _redirect(child, walk)
            continue
        target = child.children[0] if child.type == "command_name" and child.children else child
        word = _literal(target)
        if word is None:
            walk.flag(f"{_text(target, 'replace')} is only known when it runs")
            word = _text(target, "replace")
        words.append(word)
    for inner in _descendants(node):
        if inner.type in _SUBSTITUTIONS:
            _inner_commands(inner, walk)
    if words:
        _simple(tuple(words), walk)


def _assignment(node: Node, walk: _Walk) -> None:
    name = node.child_by_field_name("name")
    _check_assignment(_text(name, "replace") if name is not None else "", walk)


def _check_assignment(text: str, walk: _Walk) -> None:
    if text == "ENV" or any(text.startswith(prefix) for prefix in _LOADERS if prefix != "ENV"):
        walk.flag(f"setting {text} changes what runs")


def _simple(words: tuple[str, ...], walk: _Walk) -> None:
    name = words[0].rsplit("/", 1)[-1]
    if name != words[0] and name:
        walk.written.append((name, *words[1:]))  # Bash(rm:*) in deny sees /bin/rm
    if name in _EVALUATORS:
        walk.flag(f"{name} runs text or a program the words do not show")
    if name == "coproc":
        walk.flag("it runs a command in the background")
    script = _inline_script(words) if name in _SHELLS else None
    unwrapped = unwrap(name, words) if script is None else None
    if script is None and unwrapped is None:
        walk.commands.append(words)
        walk.writes.extend(paths_written(words))
        return
    if walk.depth >= MAX_NESTING:
        walk.flag("shells and wrappers nest too deep to read")
        walk.too_deep = True
        walk.commands.append(words)
        return
    inner = _Walk(walk.inside, walk.depth + 1)
    if unwrapped is None:
        _read_script(script or "", inner)
    else:
        _wrapped(words, unwrapped, walk, inner)
    walk.commands.extend(inner.commands)
    walk.written.extend(inner.written)
    walk.writes.extend(inner.writes)
    walk.too_deep = walk.too_deep or inner.too_deep
    for reason in inner.unsafe:
        walk.flag(reason)


def _wrapped(words: tuple[str, ...], unwrapped: Unwrapped, walk: _Walk, inner: _Walk) -> None:
    """A wrapper's command read into ``inner``: its words as written go to deny and ask rules
    only when the wrapper is transparent, and are a command of the line otherwise."""
    (walk.written if unwrapped.transparent else walk.commands).append(words)
    for name in unwrapped.assignments:
        _check_assignment(name, walk)  # env LD_PRELOAD=x npm test
    if unwrapped.script is not None:
        walk.flag("it runs a command line given as one word")
        _read_script(unwrapped.script, inner)
    for command in unwrapped.inner:
        _simple(command, inner)


def _inline_script(words: tuple[str, ...]) -> str | None:
    """The script of ``bash -c SCRIPT`` (``-lc``, ``-ec``…), or None when the shell runs a file."""
    for index, word in enumerate(words[1:], start=1):
        if not word.startswith("-") or word == "-":
            return None
        if word.startswith("--"):
            continue
        if "c" in word[1:]:
            return words[index + 1] if index + 1 < len(words) else ""
    return None


def _redirect(node: Node, walk: _Walk) -> None:
    for child in node.children:
        if child.type.endswith("redirect"):
            _redirect(child, walk)
    operators = {c.type for c in node.children}
    if node.type == "heredoc_redirect" or node.type == "herestring_redirect":
        return  # text given to the command; a substitution in it was flagged already
    if operators & {">&", "<&", ">&-", "<&-"} and node.child_by_field_name("destination") is None:
        return
    destination = node.child_by_field_name("destination")
    if destination is None:
        return
    if destination.type == "number" or (destination.text in (b"-",) and operators & {">&", "<&"}):
        return  # 2>&1, >&2: another descriptor of the same command
    for inner in _descendants(node):
        if inner.type in _SUBSTITUTIONS:
            _inner_commands(inner, walk)  # > >(curl x): deny and ask rules see curl
    path = _literal(destination)
    if path is not None and operators & _WRITING:
        walk.writes.append(path)
    if path is None:
        walk.flag("it redirects to a path only known when it runs")
    elif path not in _HARMLESS_FILES and not walk.inside(path):
        walk.flag(f"it redirects to {path}, outside the workspace")


def _literal(node: Node) -> str | None:
    """The word bash would pass, or None when it depends on what happens when it runs."""
    match node.type:
        case "word" | "number":
            return _unescape(_text(node, "surrogateescape"))
        case "raw_string":
            return _text(node, "surrogateescape")[1:-1]
        case "string":
            parts = [c for c in node.children if c.type != '"']
            if any(c.type != "string_content" for c in parts):
                return None
            return "".join(_unescape_quoted(_text(c, "surrogateescape")) for c in parts)
        case "concatenation":
            pieces = [_literal(c) for c in node.children]
            return (
                None
                if any(p is None for p in pieces)
                else "".join(p for p in pieces if p is not None)
            )
        case _:
            return None


def _unescape(text: str) -> str:
    out, escaped = [], False
    for char in text:
        if escaped:
            out.append("" if char == "\n" else char)
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(char)
    return "".join(out)


def _unescape_quoted(text: str) -> str:
    """Inside double quotes a backslash escapes only ``$ ` " \\`` and a newline."""
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            nxt = text[index + 1]
            out.append("" if nxt == "\n" else nxt)
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)
