"""scripts/check_import_cycles.py: a package whose modules import each other fails the check,
whichever way the import is made; an acyclic one passes; an exception holds only while its
cycle does."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_import_cycles.py"


def load_script():
    spec = importlib.util.spec_from_file_location("dcode_check_import_cycles", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_package(root: Path, name: str, modules: dict[str, str]) -> None:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, text in modules.items():
        (package / f"{module}.py").write_text(dedent(text))


def run_check(root: Path, package: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), package],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "closing_import",
    [
        "from hostile import a\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hostile.a import A\n",
        "def later():\n    from hostile import a\n    return a\n",
    ],
    ids=["top-level", "type-checking", "in-a-function"],
)
def test_a_cycle_through_three_modules_fails_the_check(tmp_path: Path, closing_import: str) -> None:
    make_package(
        tmp_path,
        "hostile",
        {
            "a": "from hostile import b\nclass A: ...\n",
            "b": "from hostile import c\n",
            "c": closing_import,
            "d": "from hostile import a\n",  # imports into the cycle, is not part of it
        },
    )
    done = run_check(tmp_path, "hostile")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "import cycle between hostile.a, hostile.b, hostile.c:" in done.stdout
    assert "hostile.d" not in done.stdout.splitlines()[0]
    assert "hostile.c:" in done.stdout  # the import that closes it, with its line


def test_an_acyclic_package_passes(tmp_path: Path) -> None:
    make_package(
        tmp_path,
        "calm",
        {"a": "from calm import b\n", "b": "from calm import c\n", "c": "import json\n"},
    )
    done = run_check(tmp_path, "calm")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "no import cycles in calm"


def test_an_exception_holds_only_while_its_cycle_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script()
    monkeypatch.syspath_prepend(str(tmp_path))
    make_package(tmp_path, "pair", {"a": "from pair import b\n", "b": "from pair import a\n"})
    excepted = {frozenset({"pair.a", "pair.b"}): "being merged"}
    assert script.problems("pair", excepted) == []
    assert script.problems("pair", {})[0] == "import cycle between pair.a, pair.b:"
    gone = {frozenset({"pair.a", "pair.c"}): "long merged"}
    assert script.problems("pair", gone)[-1] == (
        "no cycle between pair.a, pair.c any more (long merged): remove its exception"
    )


def test_dcode_has_no_cycle_but_its_named_exception() -> None:
    script = load_script()
    assert script.problems("dcode") == []
