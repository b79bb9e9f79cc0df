"""``dcode --help`` and ``--version`` must not pay for the heavy stack."""

import os
import pty
import subprocess
import sys

import pytest

HEAVY = ("textual", "langchain", "langchain_core", "langgraph", "openai")

PROBE = """
import sys
from dcode.cli.app import main
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
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "HEAVY:\n" in result.stdout or result.stdout.strip().endswith("HEAVY:"), result.stdout
    assert "dcode" in result.stdout


def test_version_output(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dcode.cli.app", "--version"],
        capture_output=True,
        text=True,
        env={"DCODE_HOME": str(tmp_path)},
        timeout=60,
    )
    from dcode import __version__

    assert result.stdout.strip() == f"dcode {__version__}"


LAUNCH_PROBE = """
import sys
import textual.app

def run(self, *args, **kwargs):
    print("MODULES:" + ",".join(sorted({{name.split('.')[0] for name in sys.modules}} & set({heavy!r}))), file=sys.stderr)
    raise SystemExit(0)

textual.app.App.run = run
from dcode.cli.app import main
main(["-m", "openai:test-model", "--base-url", "http://127.0.0.1:9/v1"])
"""


def test_the_tui_starts_without_the_heavy_stack(tmp_path) -> None:
    """From the command line to the app's first frame: no langchain, and no pydantic (which some
    argument parsers pull in just to read the flags)."""
    code = LAUNCH_PROBE.format(heavy=(*HEAVY, "pydantic", "PIL", "av"))
    env = {"DCODE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "test"}
    primary, secondary = pty.openpty()  # the TUI runs only on a terminal
    try:
        result = subprocess.run(
            [sys.executable, "-c", code],
            stdin=secondary,
            stdout=secondary,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert result.returncode == 0, result.stderr
    assert "MODULES:textual\n" in result.stderr, result.stderr


INSPECT_PROBE = """
import sys
from dcode.cli.app import main
try:
    main({argv!r})
except SystemExit as exc:
    print("EXIT:" + str(exc.code))
print("MODULES:" + ",".join(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))
"""


def test_media_inspect_finds_the_profile_without_langchain_or_openai(tmp_path) -> None:
    """The profile of a known OpenAI model comes from langchain's data without its imports."""
    from tests.test_media_fixtures import PROJECT_ROOT, encode, noise

    shot = tmp_path / "shot.png"
    shot.write_bytes(encode(noise((1600, 1000)), "PNG"))
    argv = ["media", "inspect", str(shot), "-m", "openai:gpt-5.1"]
    code = INSPECT_PROBE.format(argv=argv, heavy=(*HEAVY, "langchain_openai", "pydantic"))
    env = {"DCODE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "EXIT:0\n" in result.stdout, result.stdout
    assert result.stdout.rstrip().endswith("MODULES:"), result.stdout
    # gpt-5.1's langchain profile takes images: OpenAI's route, not the fallback's 640k px.
    assert f"route {768 * 2048:,} px" in result.stdout, result.stdout
