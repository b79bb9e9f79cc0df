"""A shell command's last lines on screen while it runs: the model's ``execute`` call, a
subagent's, and the user's own ``!cmd``; drawn safe, and gone once the result is in."""

from __future__ import annotations

from pathlib import Path

from dcode.tui.transcript import ShellEntry
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import running_app

# A line every 0.2 s for 2 s.
TICKING = "for i in $(seq 1 10); do echo line $i; sleep 0.2; done"
# A line that would retitle the window and clear the screen, then a progress bar.
HOSTILE = r"printf 'evil\033]0;pwned\007\033[2J here\n'; for p in 10 50 90; do printf '\r%s%%' $p; sleep 0.3; done; sleep 1; echo"


async def test_a_running_command_shows_its_last_lines(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (reply(tool_calls=[tool_call("execute", {"command": TICKING})]), reply("Counted."))
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("/approve all")
        await h.send("count to ten")
        await h.until(lambda: "│ line 2" in h.text(), what="the command's lines while it runs")
        call = h.calls()[0]
        assert call.running and "line 10" not in h.text()  # shown before the command ended
        shown = [row.strip() for row in h.text().splitlines() if row.strip().startswith("│ line")]
        assert shown == [f"│ line {n}" for n in range(1, len(shown) + 1)]
        await h.until(lambda: "│ line 7" in h.text(), what="the newest lines")
        rows = [row.strip() for row in h.text().splitlines() if row.strip().startswith("│ line")]
        assert len(rows) == 5 and rows[-1] >= "│ line 7"  # the last five, no more
        await h.until(
            lambda: "lines" in h.text().split("execute")[1].splitlines()[0],
            what="the count of lines on its line",
        )
        await h.idle()
        screen = h.text()
        assert "│ line" not in screen  # the result takes its place
        assert "└ line 1" in screen and h.answers()[-1] == "Counted."


async def test_a_command_s_escapes_never_reach_the_terminal(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (reply(tool_calls=[tool_call("execute", {"command": HOSTILE})]), reply("Done."))
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("/approve all")
        await h.send("run it")
        await h.until(lambda: "│ 90%" in h.text(), what="the progress bar's last state")
        rows = [
            row.strip()
            for row in h.text().splitlines()
            if row.strip().startswith("│") and not row.strip().endswith("│")
        ]  # not the header's box
        assert rows == ["│ evil here", "│ 90%"]  # the sequences gone, the bar one line
        await h.idle()


async def test_a_subagent_s_command_streams_in_its_task(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    job = "Run the counter."
    steps = (
        reply(
            tool_calls=[tool_call("task", {"description": job, "subagent_type": "general-purpose"})]
        ).answering("delegate"),
        reply(tool_calls=[tool_call("execute", {"command": TICKING})]).answering(job),
        reply("Counted to 10.").answering(job),
        reply("The subagent counted.").answering("delegate"),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("/approve all")
        await h.send("delegate")
        await h.until(lambda: "│ line 2" in h.text(), what="the subagent's command's lines")
        [task] = h.calls()
        assert task.task is not None and task.running
        await h.idle(30)
        assert "│ line" not in h.text()


async def test_a_user_command_streams_too(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send(f"!!{TICKING}")
        await h.until(lambda: "│ line 2" in h.text(), what="the !cmd's lines while it runs")
        [entry] = h.entries(ShellEntry)
        assert entry.running and "line 10" not in h.text()
        await h.until(lambda: not entry.running, what="the command to end")
        await h.pilot.pause(0.1)
        assert entry.exit_code == 0 and entry.output.count("line") == 10
        assert "│ line" not in h.text() and "running…" not in h.text()


async def test_esc_stops_a_user_command_and_keeps_what_it_printed(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("!!echo started; sleep 30")
        await h.until(lambda: "│ started" in h.text(), what="the first line")
        await h.press("escape")
        [entry] = h.entries(ShellEntry)
        await h.until(lambda: not entry.running, 5, what="the command to stop")
        assert entry.output == "started\n(stopped)" and entry.exit_code != 0
