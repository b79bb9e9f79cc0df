"""The TUI and a session another dcode has open: fork it or go back; /clear and /resume hand
sessions over; nothing is written to a session this process does not hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcode.agent.store.base import SessionHeld, SessionStore
from dcode.tui.launch import resume_line
from dcode.tui.screens.resume import ResumeScreen
from dcode.tui.screens.session_held import SessionHeldScreen
from tests.support.model_server import ScriptedModelServer, reply
from tests.support.session_holder import held_elsewhere
from tests.test_tui_app_support import Harness, one_session, running_app

pytestmark = pytest.mark.usefixtures("store_kind")  # every test, on every session store


def held_here(store: SessionStore, session_id: str) -> bool:
    """Whether some process holds ``session_id`` (this test's app, when nothing else does)."""
    try:
        store.hold(session_id).release()
    except SessionHeld:
        return True
    return False


async def choice(h: Harness) -> SessionHeldScreen:
    await h.until(
        lambda: (
            isinstance(h.app.screen, SessionHeldScreen) and "is open in another dcode" in h.text()
        ),
        30,
        "the choice",
    )
    screen = h.app.screen
    assert isinstance(screen, SessionHeldScreen)
    return screen


async def resume(h: Harness, session_id: str) -> None:
    await h.send("/resume")
    await h.until(lambda: isinstance(h.app.screen, ResumeScreen), what="the picker")
    h.app.screen.dismiss(session_id)


async def resume_held(h: Harness, elsewhere: str) -> tuple[str, SessionHeldScreen]:
    """A conversation here, then /resume of the session another dcode holds: this session's id
    and the choice the app offers."""
    await h.send("a conversation here")
    await h.idle()
    assert h.app.runner is not None
    here = h.app.runner.session_id
    await resume(h, elsewhere)
    return here, await choice(h)


async def test_a_session_open_elsewhere_is_forked_and_the_original_is_untouched(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, store: SessionStore
) -> None:
    session_id = await one_session(server, workspace, dcode_home)
    original, original_row = store.read_thread(session_id), store.get(session_id)
    assert original is not None and original_row is not None
    with held_elsewhere(dcode_home, session_id) as holder:
        async with running_app(
            server,
            workspace,
            dcode_home,
            reply("You said 42."),
            session_id=session_id,
            wait_ready=False,
        ) as h:
            await choice(h)
            assert f"Session {session_id} is open in another dcode (pid {holder.pid})." in h.text()
            assert not h.app.ready  # nothing queued runs until the user has chosen
            await h.pilot.press("f")
            await h.ready()
            await h.until(lambda: "Forked session" in h.text(), what="the fork")
            assert h.app.runner is not None and h.app.engine is not None
            fork_id = h.app.runner.session_id
            assert (
                fork_id != session_id and f"Forked session {session_id} into {fork_id}" in h.text()
            )
            forked = await h.app.runner.messages()
            assert forked == original.messages
            assert h.prompts() == ["what is in a.txt? remember 42"]
            row = store.get(fork_id)
            assert (
                row is not None
                and row.title == original_row.title
                and row.message_count == len(original.messages)
            )
            assert held_here(store, fork_id)
            await h.send("what number?")
            await h.idle()
            history = h.server.transcript(len(h.server.requests) - 1)
            assert ("user", "what is in a.txt? remember 42") in history and history[-1] == (
                "user",
                "what number?",
            )
            after = store.read_thread(session_id)
            assert after is not None and after.checkpoint_id == original.checkpoint_id
            assert after.messages == original.messages and store.get(session_id) == original_row
        assert not held_here(store, fork_id)  # quitting let the fork go
        assert holder.poll() is None  # and the original was the other process's all along


async def test_quitting_instead_leaves_the_session_to_its_holder(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, store: SessionStore
) -> None:
    session_id = await one_session(server, workspace, dcode_home)
    original = store.read_thread(session_id)
    with held_elsewhere(dcode_home, session_id):
        async with running_app(
            server,
            workspace,
            dcode_home,
            session_id=session_id,
            wait_ready=False,
            prompt="queued early",
        ) as h:
            screen = await choice(h)
            assert "Quit" in str(screen.query_one("#held-choices").get_option_at_index(1).prompt)
            await h.pilot.press("escape")
            await h.until(lambda: not h.app.is_running, what="the app to quit")
            assert resume_line(h.app.last_session_id) is None  # it is the other dcode's to resume
        assert len(store.list()) == 1  # no new session either
    after = store.read_thread(session_id)
    assert (
        after is not None and original is not None and after.checkpoint_id == original.checkpoint_id
    )
    assert len(server.requests) == 2  # only one_session's: the queued prompt went nowhere


async def test_resume_of_a_session_open_elsewhere_can_go_back(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, store: SessionStore
) -> None:
    elsewhere = await one_session(server, workspace, dcode_home)
    with held_elsewhere(dcode_home, elsewhere):
        async with running_app(server, workspace, dcode_home, reply("here")) as h:
            here, screen = await resume_held(h, elsewhere)
            assert "Back" in str(screen.query_one("#held-choices").get_option_at_index(1).prompt)
            await h.pilot.press("escape")
            await h.until(
                lambda: not isinstance(h.app.screen, SessionHeldScreen), what="the choice to close"
            )
            assert h.app.runner is not None and h.app.runner.session_id == here
            assert h.prompts() == ["a conversation here"] and held_here(store, here)


async def test_resume_of_a_session_open_elsewhere_can_fork_it(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, store: SessionStore
) -> None:
    elsewhere = await one_session(server, workspace, dcode_home)
    with held_elsewhere(dcode_home, elsewhere):
        async with running_app(server, workspace, dcode_home, reply("here")) as h:
            here, _ = await resume_held(h, elsewhere)
            await h.pilot.press("f")
            await h.until(
                lambda: h.prompts() == ["what is in a.txt? remember 42"],
                what="the fork's transcript",
            )
            assert h.app.runner is not None and h.app.runner.session_id not in {here, elsewhere}
            assert not held_here(store, here)  # the session it left is free


async def test_clear_and_resume_hand_the_sessions_over(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, store: SessionStore
) -> None:
    async with running_app(server, workspace, dcode_home, reply("one"), reply("two")) as h:
        await h.send("first")
        await h.idle()
        assert h.app.runner is not None
        first = h.app.runner.session_id
        assert held_here(store, first)
        await h.send("/clear")
        await h.until(lambda: h.app.runner is None, what="the new session")
        assert not held_here(store, first)
        await h.send("second")
        await h.idle()
        assert h.app.runner is not None
        second = h.app.runner.session_id
        assert held_here(store, second)
        await resume(h, first)
        await h.until(
            lambda: h.app.runner is not None and h.app.runner.session_id == first,
            what="the first session again",
        )
        assert held_here(store, first) and not held_here(store, second)
        with pytest.raises(SessionHeld) as refused:  # what another dcode is told now
            store.hold(first)
        assert refused.value.pid is not None
