"""scripts/check_any.py: a module using ``typing.Any`` must say which framework edge hands it
untyped data; the word in a string or a comment is no use of it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_any.py"


def load_script():
    spec = importlib.util.spec_from_file_location("dcode_check_any", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


BARE = '''\
    """A module that uses Any and does not say why."""
    from typing import Any

    def load(text: str) -> dict[str, Any]:
        return {"text": text}
'''
WITH_REASON = '''\
    """The same module, saying why."""
    from typing import Any

    # Any: json.loads hands back whatever the server sent

    def load(text: str) -> dict[str, Any]:
        return {"text": text}
'''
WORD_ONLY = '''\
    """Any reader may ask: is Any used here? No: only "Any" in strings and comments."""
    # Any value will do; see typing.Any.
    MESSAGE = "dict[str, Any]"

    def load(text: str) -> str:
        return f"Any: {text}"
'''


def run_check(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write(path: Path, text: str) -> Path:
    path.write_text(dedent(text))
    return path


def test_a_bare_use_fails_and_is_listed_with_its_count(tmp_path: Path) -> None:
    bare = write(tmp_path / "bare.py", BARE)
    done = run_check(bare)
    assert done.returncode == 1
    assert f"{bare}: 1 use of Any without a '# Any: <framework edge>' line" in done.stdout


def test_the_reason_line_makes_it_pass(tmp_path: Path) -> None:
    done = run_check(write(tmp_path / "reasoned.py", WITH_REASON))
    assert done.returncode == 0, done.stdout
    assert done.stdout == ""


def test_the_word_in_strings_and_comments_is_no_use(tmp_path: Path) -> None:
    done = run_check(write(tmp_path / "words.py", WORD_ONLY))
    assert done.returncode == 0, done.stdout


def test_a_directory_is_checked_file_by_file(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    write(package / "ok.py", WITH_REASON)
    bare = write(package / "sub" / "bare.py", BARE)
    done = run_check(package)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{bare}: 1 use of Any without a '# Any: <framework edge>' line"
    ]


@pytest.mark.parametrize(
    ("source", "uses"),
    [
        ("from typing import Any as A\nx: A = 1\ny: list[A] = []\n", 2),
        ("import typing\nx: typing.Any = 1\n", 1),
        ("import typing as t\nx: t.Any = 1\n", 1),
        ("from typing_extensions import Any\nx: Any = 1\n", 1),
        ('from typing import Any, cast\ny = cast("dict[str, Any]", {})\n', 1),
        ('from typing import Any\ndef f(x: "list[Any]") -> "Any": ...\n', 2),
        ("from other import Any\nx: Any = 1\n", 0),  # some other Any
        ('x = "Any"  # Any\n', 0),
    ],
)
def test_uses_are_read_from_the_syntax_tree(source: str, uses: int) -> None:
    assert load_script().count_any(source) == uses


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('"""Doc."""\n# Any: json.loads hands back anything\nx = 1\n', "but no use of Any left"),
        (
            (
                "from typing import Any\n# Any: the MCP SDK's arguments\n"
                "# Any: LangChain's message content\nx: Any = 1\n"
            ),
            "lines 2, 3: one '# Any:' line",
        ),
        ("from typing import Any\n# Any: it\nx: Any = 1\n", "must name the framework edge"),
        (
            "from typing import Any\ndef f(x: Any) -> None: ...\n# Any: too late to count\n",
            "1 use of Any without",
        ),
        ('from typing import Any\nS = """\n# Any: inside a string\n"""\nx: Any = 1\n', "without"),
    ],
    ids=["stale", "twice", "no-reason", "after-the-first-def", "in-a-string"],
)
def test_the_reason_line_is_one_real_comment_near_the_top(source: str, message: str) -> None:
    [finding] = load_script().check_source(Path("m.py"), source)
    assert message in finding.message


def test_the_packages_done_so_far_pass() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout
