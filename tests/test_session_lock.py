"""One process holds a session at a time: the store's hold (real processes and kills, on every
store), the SQLite store's lock files, and the engine that takes the hold for each runner and
forks a session it cannot take."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import pytest

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.store.base import SessionHeld, SessionStore
from dcode.agent.store.file_lock import SessionLock, lock_path
from tests.support.model_server import reply
from tests.support.session_holder import held_elsewhere


def test_a_held_session_is_refused_with_the_holders_pid(store: SessionStore) -> None:
    with held_elsewhere(store.home, "abc123") as holder:
        with pytest.raises(SessionHeld) as refused:
            store.hold("abc123")
        assert refused.value.pid == holder.pid
        assert str(refused.value) == f"session abc123 is open in another dcode (pid {holder.pid})"
        store.hold("other1").release()  # other sessions are free
    with store.hold("abc123") as lock:  # and this one once the holder let go
        assert lock.held


def test_two_holds_in_one_process_also_exclude_each_other(store: SessionStore) -> None:
    first = store.hold("abc123")
    with pytest.raises(SessionHeld) as refused:
        store.hold("abc123")
    assert refused.value.pid == os.getpid()
    first.release()
    first.release()  # twice is harmless
    store.hold("abc123").release()


def test_a_killed_holder_leaves_nothing_held(store: SessionStore) -> None:
    with held_elsewhere(store.home, "abc123") as holder:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        with store.hold("abc123") as lock:
            assert lock.held


def test_a_killed_holder_leaves_its_lock_file_but_not_its_lock(tmp_path: Path) -> None:
    with held_elsewhere(tmp_path, "abc123") as holder:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        assert lock_path(tmp_path, "abc123").exists()  # the file stays behind, its lock does not
        with SessionLock.acquire(tmp_path, "abc123") as lock:
            assert lock.held


def test_lock_files_are_private_and_removed_on_release(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        lock = SessionLock.acquire(tmp_path, "abc123")
    finally:
        os.umask(previous)
    path = lock_path(tmp_path, "abc123")
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == str(os.getpid())
    lock.release()
    assert not path.exists()


def test_a_lock_file_left_world_readable_is_made_private(tmp_path: Path) -> None:
    path = lock_path(tmp_path, "abc123")
    path.parent.mkdir(mode=0o755)
    path.parent.chmod(0o755)
    path.write_text("12345\n")
    path.chmod(0o644)
    with SessionLock.acquire(tmp_path, "abc123"):
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text().strip() == str(os.getpid())  # a dead holder's pid is replaced


def test_ids_that_are_not_plain_names_stay_inside_the_locks_directory(tmp_path: Path) -> None:
    path = lock_path(tmp_path, "abc123/task/2")
    assert path.parent == tmp_path / "locks" and "/" not in path.name
    assert lock_path(tmp_path, "../../etc/x").parent == tmp_path / "locks"
    with SessionLock.acquire(tmp_path, "abc123/task/2"):
        with pytest.raises(SessionHeld):
            SessionLock.acquire(tmp_path, "abc123/task/2")
        SessionLock.acquire(tmp_path, "abc123").release()


async def test_an_engine_holds_its_sessions_until_it_closes(
    make_settings, store: SessionStore
) -> None:  # type: ignore[no-untyped-def]
    settings = make_settings()
    async with await Engine.open(settings) as first:
        session_id = first.runner(HeadlessApprover()).session_id
        async with await Engine.open(settings) as second:
            with pytest.raises(SessionHeld):
                second.runner(HeadlessApprover(), session_id=session_id)
            assert session_id not in second.held
        assert (
            first.runner(HeadlessApprover(), session_id=session_id).session_id == session_id
        )  # its own again
    async with await Engine.open(settings) as third:
        third.runner(HeadlessApprover(), session_id=session_id)
        assert third.held == {session_id}
        third.release(session_id)
        assert not third.held
        with store.hold(session_id) as lock:
            assert lock.held


async def test_a_fork_copies_the_whole_state_and_leaves_the_source_alone(
    make_settings, server, store_kind: str
) -> None:  # type: ignore[no-untyped-def]
    server.script(reply("first answer"), reply("the fork goes on"))
    settings = make_settings()
    async with await Engine.open(settings) as engine:
        source = engine.runner(HeadlessApprover())
        [e async for e in source.run_turn("hello")]
        before = await engine.graph.aget_state(source.config)
        info = await engine.fork(source.session_id)
        forked = engine.runner(HeadlessApprover(), session_id=info.id)
        copied = await engine.graph.aget_state(forked.config)
        assert (
            copied.values == before.values and "local_context" in copied.values
        )  # private state too
        assert copied.next == ()  # nothing pending: the fork's next turn starts cleanly
        events = [e async for e in forked.run_turn("and then?")]
        assert events[-1].result == "the fork goes on"
        assert server.transcript(1)[-3:] == [
            ("user", "hello"),
            ("assistant", "first answer"),
            ("user", "and then?"),
        ]
        after = await engine.graph.aget_state(source.config)
        assert after.config == before.config and after.values == before.values
