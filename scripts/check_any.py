"""Fail when a module uses ``typing.Any`` without saying which framework hands it untyped data.

``Any`` belongs only at a framework's edge (LangChain message content, LangGraph stream chunks,
JSON from a server, the MCP SDK, Textual events…). A module that uses it carries one comment
line near the top, before its first function or class, naming that edge::

    # Any: LangGraph's stream chunks are untyped tuples and dicts

A module that uses ``Any`` without the line fails, listed by path with the number of uses; so
does one with the line and no use left (the line is then stale), or with the line twice.

Uses are read from the syntax tree, not the text: ``Any`` imported from ``typing`` (or
``typing_extensions``) under any name, ``typing.Any``, and the same inside a quoted annotation
or ``cast``'s quoted type. The word in a docstring, another string or a comment is no use.

    python scripts/check_any.py              # dcode
    python scripts/check_any.py dcode/tui x.py
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TYPING_MODULES = frozenset({"typing", "typing_extensions"})
REASON = re.compile(r"#\s*Any:(.*)$")
MIN_REASON = 12  # characters: a framework and what it hands over, not a placeholder


@dataclass(frozen=True)
class Finding:
    path: Path
    message: str

    def __str__(self) -> str:
        resolved, shown = self.path.resolve(), self.path
        if resolved.is_relative_to(ROOT):
            shown = resolved.relative_to(ROOT)
        return f"{shown}: {self.message}"


class _Uses(ast.NodeVisitor):
    """Counts the references to ``typing.Any`` in one module."""

    def __init__(self) -> None:
        self.any_names: set[str] = set()  # what `Any` is called here: Any, or an alias
        self.typing_names: set[str] = set()  # what `typing` is called here: typing, t…
        self.count = 0
        self.imported = False

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name in TYPING_MODULES:
                self.typing_names.add(alias.asname or alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module in TYPING_MODULES:
            for alias in node.names:
                if alias.name == "Any":
                    self.any_names.add(alias.asname or "Any")
                    self.imported = True

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.any_names:
            self.count += 1

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if (
            node.attr == "Any"
            and isinstance(node.value, ast.Name)
            and node.value.id in self.typing_names
        ):
            self.count += 1
        self.generic_visit(node)

    def quoted(self, node: ast.expr | None) -> None:
        """A type written as a string (a forward reference, ``cast("dict[str, Any]", …)``)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                parsed = ast.parse(node.value, mode="eval")
            except SyntaxError:
                return
            self.visit(parsed)


def _quoted_types(tree: ast.AST) -> Iterator[ast.expr | None]:
    """The places a string is read as a type: annotations, and ``cast``'s first argument."""
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            yield node.annotation
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "cast") or (
                isinstance(func, ast.Attribute) and func.attr == "cast"
            ):
                yield node.args[0]


def count_any(source: str) -> int:
    """How many times the module's code refers to ``typing.Any``."""
    tree = ast.parse(source)
    uses = _Uses()
    uses.visit(tree)
    for node in _quoted_types(tree):
        uses.quoted(node)
    return uses.count


def reason_lines(source: str) -> list[tuple[int, str]]:
    """The ``# Any: <reason>`` comments before the module's first function or class, as
    (line, reason); real comments only, never text inside a string."""
    tree = ast.parse(source)
    first_def = next(
        (
            node.lineno
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ),
        None,
    )
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        line = token.start[0]
        if first_def is not None and line >= first_def:
            break
        match = REASON.match(token.string)
        if match:
            found.append((line, match.group(1).strip()))
    return found


def check_source(path: Path, source: str) -> list[Finding]:
    uses = count_any(source)
    reasons = reason_lines(source)
    if uses and not reasons:
        plural = "use" if uses == 1 else "uses"
        return [Finding(path, f"{uses} {plural} of Any without a '# Any: <framework edge>' line")]
    if not uses and reasons:
        return [Finding(path, f"line {reasons[0][0]}: '# Any:' but no use of Any left")]
    if len(reasons) > 1:
        return [Finding(path, f"lines {', '.join(str(n) for n, _ in reasons)}: one '# Any:' line")]
    if reasons and len(reasons[0][1]) < MIN_REASON:
        return [Finding(path, f"line {reasons[0][0]}: the reason must name the framework edge")]
    return []


def modules(paths: Iterable[Path]) -> Iterator[Path]:
    """The ``.py`` files under ``paths``."""
    for path in paths:
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def check(paths: Iterable[Path]) -> list[Finding]:
    findings = []
    for path in modules(paths):
        findings.extend(check_source(path, path.read_text(encoding="utf-8")))
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.paths or [ROOT / "dcode"]
    findings = check(paths)
    for finding in findings:
        print(finding)
    if findings:
        print(f"check_any: {len(findings)} module(s) to fix", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
