"""The local backend's shell: output, exit codes, timeouts, caps and closed stdin."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dcode.agent.backends import LocalBackend
from dcode.agent.backends.capture import HeadTailBuffer


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(tmp_path)


async def test_output_is_combined_and_exit_code_reported(backend: LocalBackend) -> None:
    result = await backend.execute("echo out; echo err >&2; exit 3")
    assert result.output == "out\nerr\n"
    assert result.exit_code == 3
    assert not result.timed_out and not result.truncated


async def test_runs_in_workspace_root_or_given_cwd(backend: LocalBackend) -> None:
    (backend.root / "sub").mkdir()
    assert (await backend.execute("pwd")).output.strip() == str(backend.root)
    assert (await backend.execute("pwd", cwd="sub")).output.strip() == str(backend.root / "sub")
    with pytest.raises(FileNotFoundError):
        await backend.execute("pwd", cwd="missing")


async def test_uses_bash(backend: LocalBackend) -> None:
    result = await backend.execute("echo ${BASH_VERSION:+bash}; [[ 1 == 1 ]] && echo ok")
    assert result.output == "bash\nok\n"


async def test_falls_back_to_sh(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, shell="definitely-not-a-shell")
    result = await backend.execute("echo ok")
    assert result.output == "ok\n" and result.exit_code == 0


async def test_timeout_kills_the_process_group_quickly(backend: LocalBackend) -> None:
    marker = backend.root / "survived"
    started = time.monotonic()
    result = await backend.execute(f"(sleep 1.5; touch {marker}) & sleep 30", timeout=1)
    elapsed = time.monotonic() - started
    assert result.timed_out
    assert elapsed < 1.5
    assert result.exit_code != 0
    time.sleep(max(0.0, started + 2.2 - time.monotonic()))
    assert not marker.exists(), "the background child should have been killed with the group"


async def test_timeout_is_clamped(backend: LocalBackend) -> None:
    result = await backend.execute("echo fine", timeout=10_000)
    assert result.output == "fine\n"


async def test_stdin_is_closed(backend: LocalBackend) -> None:
    started = time.monotonic()
    result = await backend.execute('read x; echo "rc=$? x=$x"; cat; echo done', timeout=5)
    assert time.monotonic() - started < 2
    assert result.output == "rc=1 x=\ndone\n"
    assert not result.timed_out


async def test_no_controlling_terminal(backend: LocalBackend) -> None:
    result = await backend.execute("echo hi > /dev/tty", timeout=5)
    assert result.exit_code != 0


async def test_output_cap_keeps_head_and_tail(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, max_output_chars=1000)
    result = await backend.execute("echo START; seq 1 20000; echo END")
    assert result.truncated
    assert result.output.startswith("START\n")
    assert result.output.rstrip().endswith("END")
    assert "chars truncated] ..." in result.output
    assert len(result.output) < 1200


async def test_default_cap_is_2m_well_above_the_eviction_threshold(backend: LocalBackend) -> None:
    # An output over 80,000 chars is saved whole and previewed for the model (result_eviction):
    # the backend keeps up to 2,000,000 of it, head and tail.
    whole = await backend.execute("head -c 200000 /dev/zero | tr '\\0' 'a'")
    assert not whole.truncated and whole.output.count("a") == 200_000
    result = await backend.execute("head -c 2100000 /dev/zero | tr '\\0' 'a'")
    assert result.truncated
    assert "... [100000 chars truncated] ..." in result.output


async def test_signal_exit_code_follows_shell_convention(backend: LocalBackend) -> None:
    result = await backend.execute("kill -TERM $$")
    assert result.exit_code == 143


async def test_background_process_holding_output_does_not_block(backend: LocalBackend) -> None:
    started = time.monotonic()
    result = await backend.execute("sleep 3 & echo started")
    assert time.monotonic() - started < 5
    assert result.output.startswith("started\n")
    assert "background process" in result.output
    assert result.exit_code == 0


async def test_invalid_utf8_output_is_replaced(backend: LocalBackend) -> None:
    result = await backend.execute("printf 'a\\xffb\\n'")
    assert result.output == "a\ufffdb\n"


def test_head_tail_buffer_exact_when_under_limit() -> None:
    buffer = HeadTailBuffer(11)
    for ch in "0123456789":
        buffer.add(ch)
    assert buffer.text() == "0123456789" and not buffer.truncated


def test_head_tail_buffer_counts_dropped_middle() -> None:
    buffer = HeadTailBuffer(10)
    for chunk in ["abc", "defgh", "ijklmnop", "qrstuvwxyz"]:
        buffer.add(chunk)
    assert buffer.truncated
    assert buffer.text() == "abcde\n\n... [16 chars truncated] ...\n\nvwxyz"
