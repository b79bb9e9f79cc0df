"""One permission rule, as Claude Code spells it: ``Tool`` or ``Tool(specifier)``.

``Bash(npm run test:*)`` (a prefix), ``Bash(git diff)`` (exact), ``Bash(git * main)`` (a
wildcard), ``Read(./secrets/**)``, ``Edit(src/**)``, ``WebFetch(domain:docs.python.org)``,
``mcp__server__tool``, ``mcp__server__*``, ``Task(reviewer)``, or a bare name for every call of
that tool. dcode's own names (``execute``, ``read_file``…) are accepted for Claude's.

A rule is parsed once into what it guards (``Target``) so that matching never re-reads text.
Settings keep rules as text; they are parsed when a session's policy is built, so a bad rule
is one line the user reads, not a failed start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from dcode.agent.tools.claude_names import (
    AGENT_RULE_NAMES,
    EDIT_RULE_NAMES,
    FETCH_RULE_NAMES,
    READ_RULE_NAMES,
    SHELL_RULE_NAMES,
)


class Effect(StrEnum):
    """What a matching rule does; ``deny`` beats ``ask``, which beats ``allow``."""

    DENY = "deny"
    ASK = "ask"
    ALLOW = "allow"


EFFECTS: tuple[Effect, ...] = (Effect.DENY, Effect.ASK, Effect.ALLOW)
"""Strongest first: the order rules are consulted in."""


class Guard(StrEnum):
    """What a rule's specifier is matched against."""

    TOOL = "tool"  # every call of one tool (or, for an MCP server, of its tools)
    SHELL = "shell"  # each simple command a shell call would run
    READ = "read"  # the paths a reading tool names
    EDIT = "edit"  # the paths a writing tool changes
    DOMAIN = "domain"  # the host a fetch would reach
    AGENT = "agent"  # the subagent a task starts


class RuleError(ValueError):
    """A rule that cannot mean anything: the message says how it should look."""


_SHAPE = re.compile(r"^(?P<tool>[A-Za-z0-9_*-]+)(?:\((?P<spec>.*)\))?$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class RuleSource:
    """Where a rule was read: ``label`` as ``/permissions`` shows it (a file's path, or
    ``--allowedTools``); ``project`` when the repository wrote it (its allow rules wait for
    trust)."""

    label: str
    project: bool = False


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    """As the user wrote it (what ``/permissions`` lists and removes)."""
    effect: Effect
    tool: str
    """The tool's name as written (``Bash``, ``execute``, ``mcp__github__*``)."""
    guard: Guard
    specifier: str | None
    """What is inside the parentheses; None for a bare name (every call)."""
    source: RuleSource


def parse_rule(text: str, effect: Effect, source: RuleSource) -> Rule:
    """The rule ``text`` means; raises ``RuleError`` for one that cannot match anything."""
    shape = _SHAPE.match(text.strip())
    if shape is None:
        raise RuleError(
            f"{text!r} is not a rule: write a tool's name, optionally with a specifier, like Bash(npm test:*) or Read(./.env)"
        )
    tool, spec = shape["tool"], shape["spec"]
    if spec is not None:
        spec = spec.strip()
        if not spec or spec == "*":
            spec = None  # Bash() and Bash(*) mean every call, as a bare name does
    return Rule(text.strip(), effect, tool, _guard(tool, spec), spec, source)


def _guard(tool: str, spec: str | None) -> Guard:
    if spec is None:
        return Guard.TOOL
    if tool in SHELL_RULE_NAMES:
        return Guard.SHELL
    if tool in READ_RULE_NAMES:
        return Guard.READ
    if tool in EDIT_RULE_NAMES:
        return Guard.EDIT
    if tool in FETCH_RULE_NAMES:
        if not spec.startswith("domain:") or not spec.removeprefix("domain:").strip():
            raise RuleError(
                f"{tool}({spec}): a fetch rule names a site, like WebFetch(domain:docs.python.org)"
            )
        return Guard.DOMAIN
    if tool in AGENT_RULE_NAMES:
        return Guard.AGENT
    raise RuleError(
        f"{tool}({spec}): only Bash, Read, Edit, Write, WebFetch and Task rules take a specifier"
    )
