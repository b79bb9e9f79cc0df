"""``dcode --help`` and ``--version`` must not pay for the heavy stack."""

import subprocess
import sys

import pytest

HEAVY = ("textual", "langchain", "langchain_core", "langgraph", "openai")

PROBE = """
import sys
from dcode.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
loaded = sorted({{name.split('.')[0] for name in sys.modules}} & set({heavy!r}))
print("HEAVY:" + ",".join(loaded))
"""


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["sessions", "--help"]])
def test_light_commands_skip_heavy_imports(argv: list[str], tmp_path) -> None:
    code = PROBE.format(argv=argv, heavy=HEAVY)
    env = {"DCODE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "HEAVY:\n" in result.stdout or result.stdout.strip().endswith("HEAVY:"), result.stdout
    assert "dcode" in result.stdout


def test_version_output(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dcode.cli", "--version"], capture_output=True, text=True, env={"DCODE_HOME": str(tmp_path)}, timeout=60
    )
    from dcode import __version__

    assert result.stdout.strip() == f"dcode {__version__}"
