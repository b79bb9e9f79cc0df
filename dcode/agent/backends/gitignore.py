"""A ``.gitignore`` matcher for workspaces that git cannot list for us.

Inside a git work tree the backend asks git itself (exact); this covers a plain directory or a
machine without git. It implements what real ignore files use: comments, ``!`` negation, a
trailing ``/`` for directories only, anchoring by a leading or inner ``/``, ``**``, escapes and
trailing-space stripping, with deeper files overriding shallower ones and the last match winning.
Like git, it cannot re-include a file whose directory is ignored: the walker never descends.

The same rule form doubles as the grep ``glob`` filter (ripgrep's ``--glob`` has these semantics).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dcode.agent.backends.globbing import translate


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool

    def matches(self, rel_path: str, *, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.match(rel_path) is not None


def compile_rule(line: str, *, braces: bool = False) -> IgnoreRule | None:
    """One ignore-file line as a rule; ``None`` for blanks and comments."""
    pattern = line.rstrip("\r\n")
    if pattern.startswith("#"):
        return None
    while pattern.endswith(" ") and not pattern.endswith("\\ "):
        pattern = pattern[:-1]
    negated = pattern.startswith("!")
    if negated:
        pattern = pattern[1:]
    dir_only = pattern.endswith("/") and not pattern.endswith("\\/")
    pattern = pattern.rstrip("/") if dir_only else pattern
    if not pattern:
        return None
    anchored = "/" in pattern
    pattern = pattern.lstrip("/")
    body = translate(pattern, braces=braces)
    prefix = "" if anchored else "(?:.*/)?"
    regex = re.compile(f"^{prefix}(?:{body})$", re.DOTALL)
    return IgnoreRule(regex=regex, negated=negated, dir_only=dir_only)


def parse_ignore_file(text: str) -> tuple[IgnoreRule, ...]:
    rules = (compile_rule(line) for line in text.splitlines())
    return tuple(rule for rule in rules if rule is not None)


@dataclass(frozen=True, slots=True)
class IgnoreMatcher:
    """Ignore rules layered by the directory (relative, ``""`` for the top) they came from.

    Immutable so a directory walk can hand each subtree its own matcher without copying back.
    """

    layers: tuple[tuple[str, tuple[IgnoreRule, ...]], ...] = field(default=())

    def with_rules(self, base: str, rules: tuple[IgnoreRule, ...]) -> IgnoreMatcher:
        if not rules:
            return self
        return IgnoreMatcher(layers=(*self.layers, (base, rules)))

    def is_ignored(self, rel_path: str, *, is_dir: bool) -> bool:
        ignored = False
        for base, rules in self.layers:
            if base and not rel_path.startswith(base + "/"):
                continue
            local = rel_path[len(base) + 1 :] if base else rel_path
            for rule in rules:
                if rule.matches(local, is_dir=is_dir):
                    ignored = not rule.negated
        return ignored


@dataclass(frozen=True, slots=True)
class PathFilter:
    """The grep ``glob`` argument: keep files it matches, or drop them with a leading ``!``."""

    rule: IgnoreRule

    @classmethod
    def parse(cls, glob: str) -> PathFilter | None:
        rule = compile_rule(glob, braces=True)
        return None if rule is None else cls(rule)

    def keeps(self, rel_path: str) -> bool:
        hit = self.rule.matches(rel_path, is_dir=False)
        return not hit if self.rule.negated else hit
