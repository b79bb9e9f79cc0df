"""The App's components (session work, slash commands, MCP start-up, trust, the first-run
screen, an attached session's model and spend) are owned by ``DcodeApp`` and typed against
what they need of it: none imports the App module back, not even for type checking, and the
App is one class, not a stack of mixins."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from textual.app import App

from dcode.tui import (
    app_commands,
    app_host,
    app_mcp,
    app_served,
    app_session,
    app_setup,
    app_trust,
)
from dcode.tui.app import DcodeApp

COMPONENTS = [app_commands, app_host, app_mcp, app_served, app_session, app_setup, app_trust]


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top, in a function or under ``TYPE_CHECKING``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        match node:
            case ast.Import(names=names):
                found.update(alias.name for alias in names)
            case ast.ImportFrom(module=module, names=names, level=0) if module:
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in names)
    return found


@pytest.mark.parametrize(
    "module", COMPONENTS, ids=lambda module: module.__name__.rsplit(".", 1)[-1]
)
def test_a_component_never_imports_the_app(module: object) -> None:
    path = Path(inspect.getfile(module))  # type: ignore[arg-type]
    assert "dcode.tui.app" not in imported_modules(path), f"{path.name} imports dcode.tui.app"


def test_the_app_is_one_class_over_textual_app() -> None:
    assert DcodeApp.__bases__ == (App,)
    own = {name for name, value in vars(DcodeApp).items() if callable(value)}
    for module in COMPONENTS:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                assert cls not in DcodeApp.__mro__, f"DcodeApp inherits {cls.__name__}"
    assert {"on_approval_needed", "on_approval_withdrawn", "on_approval_widget_decided"} <= own
