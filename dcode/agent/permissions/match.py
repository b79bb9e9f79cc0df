"""Which rule, if any, decides a tool call: ``deny`` first, then ``ask``, then ``allow``.

A shell call is judged command by command (``shell_words``): a ``deny`` or ``ask`` rule that
matches any command of the line decides it; ``allow`` needs every command covered, and nothing
in the line that the words cannot show. Path rules see the paths a call reads or writes
(``paths``), a fetch rule the host the request would reach, an MCP rule the server and tool the
call really is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dcode.agent.permissions.paths import call_paths, path_pattern
from dcode.agent.permissions.rules import EFFECTS, Effect, Guard, Rule
from dcode.agent.tools.claude_names import (
    AGENTS,
    FETCH,
    READ_RULE_NAMES,
    SHELL,
    UMBRELLAS,
    dcode_name,
    read_paths,
)
from dcode.agent.tools.spec import READ_FILE, ToolKind, spec_for
from dcode.settings.web_address import BadAddress, parse_address


@dataclass(frozen=True, slots=True)
class RuleMatch:
    rule: Rule
    reason: str
    """What it matched, in words: ``rm -rf ~``, ``.env``."""

    @property
    def effect(self) -> Effect:
        return self.rule.effect


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What a call is beyond its name: the MCP server and tool it really is (None: not MCP),
    and the workspace test a redirection is judged by."""

    server: str | None = None
    tool: str | None = None
    inside: Callable[[str], bool] = lambda path: False


@dataclass
class PermissionRules:
    """The rules in force for one session, strongest effect first; ``home`` is the user's home
    directory (``~/`` in a path rule)."""

    rules: tuple[Rule, ...]
    workspace: Path
    home: Path = field(default_factory=Path.home)
    dcode_home: Path | None = None
    """Where rules the user saves from an approval go (None: they cannot be saved)."""

    def read_refusal(self, raw: str) -> str | None:
        """Why a ``deny`` rule keeps the file at ``raw`` from being read (an ``@`` mention), or None."""
        found = self.decide(READ_FILE.name, {"file_path": raw}, CallFacts())
        if found is None or found.effect is not Effect.DENY:
            return None
        return f"denied by the rule {found.rule.text} ({found.rule.source.label})"

    def add(self, rule: Rule) -> None:
        """A rule saved during the session: it applies from the next call on."""
        if rule not in self.rules:
            self.rules = (*self.rules, rule)

    def remove(self, rule: Rule) -> None:
        self.rules = tuple(r for r in self.rules if r != rule)

    def decide(self, name: str, args: dict[str, object], facts: CallFacts) -> RuleMatch | None:
        for effect in EFFECTS:
            rules = [rule for rule in self.rules if rule.effect is effect]
            if rules and (found := self._first(effect, rules, name, args, facts)):
                return found
        return None

    def _first(
        self,
        effect: Effect,
        rules: list[Rule],
        name: str,
        args: dict[str, object],
        facts: CallFacts,
    ) -> RuleMatch | None:
        if name == SHELL.name:
            return self._shell(effect, rules, args.get("command"), facts)
        for rule in rules:
            if reason := self._matches(rule, name, args, facts):
                return RuleMatch(rule, reason)
        return None

    def _matches(
        self, rule: Rule, name: str, args: dict[str, object], facts: CallFacts
    ) -> str | None:
        match rule.guard:
            case Guard.TOOL:
                return name if _names_tool(rule.tool, name, facts) else None
            case Guard.READ if (
                spec_for(name).kind is ToolKind.READ and rule.tool in READ_RULE_NAMES
            ):
                return self._path_match(rule, read_paths(name, args))
            case Guard.EDIT if spec_for(name).kind is ToolKind.WRITE:
                return self._path_match(rule, spec_for(name).target_paths(args))
            case Guard.DOMAIN if name == FETCH.name:
                return _domain_match(rule.specifier or "", args.get("url"))
            case Guard.AGENT if name == AGENTS.name:
                agent = str(args.get("subagent_type") or "")
                return agent if rule.specifier in (agent, "*") else None
            case _:
                return None

    def _path_match(self, rule: Rule, raw_paths: Iterable[str]) -> str | None:
        pattern = path_pattern(rule.specifier or "", self.workspace, self.home)
        for raw in raw_paths:
            if any(pattern.matches(path) for path in call_paths(self.workspace, raw)):
                return raw
        return None

    def _shell(
        self, effect: Effect, rules: list[Rule], command: object, facts: CallFacts
    ) -> RuleMatch | None:
        shell_rules = [rule for rule in rules if dcode_name(rule.tool) == SHELL.name]
        if bare := next((rule for rule in shell_rules if rule.guard is Guard.TOOL), None):
            return RuleMatch(bare, "every shell command")
        specific = [rule for rule in shell_rules if rule.guard is Guard.SHELL]
        if not specific or not isinstance(command, str):
            return None
        from dcode.agent.permissions.shell_words import plan_command

        plan = plan_command(command, facts.inside)
        if effect is not Effect.ALLOW:
            if plan.too_deep:  # what it runs cannot be read, so no rule can be said to miss it
                return RuleMatch(specific[0], "a line nested too deep to check against the rules")
            return next(
                (
                    RuleMatch(r, " ".join(words))
                    for words in plan.every_form
                    for r in specific
                    if shell_matches(r.specifier or "", words)
                ),
                None,
            )
        if plan.unsafe or not plan.commands:
            return None
        covering = [
            next((r for r in specific if shell_matches(r.specifier or "", words)), None)
            for words in plan.commands
        ]
        if any(rule is None for rule in covering):
            return None
        first = covering[0]
        return RuleMatch(first, command) if first is not None else None


def _names_tool(rule_tool: str, name: str, facts: CallFacts) -> bool:
    """A bare rule: this tool by either of its names, or an MCP tool or server (``mcp__s__t``,
    ``mcp__s__*``, ``mcp__s``) judged by what the call really is, not by a name that may clash."""
    if rule_tool.startswith("mcp__") and facts.server is not None:
        server, _, tool = rule_tool.removeprefix("mcp__").partition("__")
        return server == facts.server and tool in ("", "*", facts.tool)
    if rule_tool in UMBRELLAS:
        return name in UMBRELLAS[rule_tool]
    return dcode_name(rule_tool) == name


def shell_matches(specifier: str, words: tuple[str, ...]) -> bool:
    """Whether one simple command (its words) matches a ``Bash(…)`` specifier: ``npm test:*``
    (that prefix, by whole words), ``npm test *`` or ``git * main`` (``*`` any text), or the
    exact command."""
    text = " ".join(words)
    spec = " ".join(specifier.split())
    if spec.endswith(":*"):
        prefix = spec[:-2].rstrip()
        return text == prefix or text.startswith(prefix + " ")
    if "*" not in spec:
        return text == spec
    if spec.endswith(" *") and text == spec[:-2].rstrip():
        return True  # "npm test *" covers plain "npm test" too
    regex = ".*".join(re.escape(part) for part in spec.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


def _domain_match(specifier: str, url: object) -> str | None:
    domain = specifier.removeprefix("domain:").strip().lower().rstrip(".")
    if not isinstance(url, str):
        return None
    try:
        host = parse_address(url).host
    except BadAddress:
        return None
    if host == domain or (domain.startswith("*.") and host.endswith(domain[1:])):
        return host
    return None
