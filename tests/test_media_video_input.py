"""A video handed over on the command line: ``dcode media inspect clip.mp4`` and ``dcode -p … -i clip.mp4``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from PIL import Image

from dcode.media.contact_sheet import sheet_size
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_video import CLIP, request_images, request_texts, requires_clip

VISION = '[models."openai:test-model"]\nimage_inputs = true\nimage_max_pixels = 640000\nimage_max_bytes = 1048576\n'


def run_dcode(
    args: list[str], home: Path, cwd: Path, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "DCODE_HOME": str(home), "OPENAI_API_KEY": "k"}
    dcode = str(Path(sys.executable).with_name("dcode"))
    return subprocess.run(
        [dcode, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def vision_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(VISION)
    return home


@requires_clip
def test_inspect_lists_the_frames_in_text_and_json(tmp_path: Path) -> None:
    home = vision_home(tmp_path)
    args = ["media", "inspect", str(CLIP), "-m", "openai:test-model"]
    text = run_dcode(args, home, tmp_path)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == str(CLIP)
    assert lines[1].startswith("  video       1280x720, 5.3") and lines[1].endswith(
        "window [0.000s, 100.000s) at 0.5 fps: 3 frames"
    )
    frames = [line for line in lines if line.startswith("  frame ")]
    assert [line.split()[1] for line in frames] == ["00:00:00.000", "00:00:02.000", "00:00:04.000"]
    assert all("1280x720 JPEG" in line and "-> request 1066x600 JPEG" in line for line in frames)

    as_json = run_dcode([*args, "--json"], home, tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert (
        report["kind"] == "video"
        and report["video"]["width"] == 1280
        and report["video"]["height"] == 720
    )
    assert [f["t"] for f in report["frames"]] == [0.0, 2.0, 4.0]
    assert {(f["request"]["width"], f["request"]["height"]) for f in report["frames"]} == {
        (1066, 600)
    }
    assert report["request"]["bytes"] == sum(f["request"]["bytes"] for f in report["frames"]) > 0
    assert report["request"]["max_pixels"] == 640_000
    for frame, line in zip(
        report["frames"], frames, strict=True
    ):  # the text says what the JSON says
        assert f"{frame['request']['bytes']:,} bytes" in line
    assert not (home / "attachments").exists(), "inspecting a video must not fill the store"


@requires_clip
def test_inspect_a_later_window(tmp_path: Path) -> None:
    report = json.loads(
        run_dcode(
            ["media", "inspect", str(CLIP), "--offset", "1", "--limit", "3", "--json"],
            tmp_path / "h",
            tmp_path,
        ).stdout
    )
    assert report["window"] == {"offset": 1.0, "limit": 3.0, "continue_at": None}
    assert [f["t"] for f in report["frames"]] == [1.0, 3.0]


@requires_clip
def test_sheet_writes_a_png_of_the_expected_size(tmp_path: Path) -> None:
    out = tmp_path / "sheet.png"
    done = run_dcode(["media", "inspect", str(CLIP), "--sheet", str(out)], tmp_path / "h", tmp_path)
    assert done.returncode == 0, done.stderr
    expected = sheet_size(3, 720 / 1280)
    assert f"  sheet       {out} ({expected[0]}x{expected[1]} PNG)" in done.stdout.splitlines()
    with Image.open(out) as sheet:
        assert (sheet.format, sheet.size) == ("PNG", expected)


def test_inspect_errors_are_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "fake.mp4"
    fake.write_bytes(b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00" * 64)
    done = run_dcode(["media", "inspect", str(fake)], tmp_path / "h", tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith(f"{fake}: error: ") and len(done.stdout.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
    two = run_dcode(
        ["media", "inspect", str(fake), str(fake), "--sheet", str(tmp_path / "s.png")],
        tmp_path / "h",
        tmp_path,
    )
    assert two.returncode == 2 and "--sheet writes the contact sheet of one video" in two.stdout


@requires_clip
def test_headless_video_goes_as_its_frames(
    server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    home = vision_home(tmp_path)
    shutil.copyfile(CLIP, workspace / "clip.mp4")
    server.script(reply("a rabbit"))
    base = ["-p", "what happens?", "-m", "openai:test-model", "--base-url", server.base_url]
    done = run_dcode([*base, "-i", "clip.mp4"], home, workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "a rabbit"
    [request] = server.requests
    assert len(request_images(request)) == 3
    texts = request_texts(request)
    assert texts[0] == "what happens?"
    assert "Reading first 100s of clip.mp4 at 0.5 fps." in texts[1]
    assert sum(t.startswith("Frame at t=") for t in texts) == 3


def test_headless_video_that_cannot_be_sampled_is_one_line(
    server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "broken.mp4").write_bytes(
        b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00" * 64
    )
    done = run_dcode(
        ["-p", "x", "-m", "openai:test-model", "--base-url", server.base_url, "-i", "broken.mp4"],
        tmp_path / "h",
        workspace,
    )
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("dcode: error: broken.mp4 can't be sent: ")
    assert server.requests == []


@requires_clip
def test_sessions_show_gives_the_video_its_line(
    server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    from dcode.agent.store.sqlite import SqliteStore

    home = vision_home(tmp_path)
    shutil.copyfile(CLIP, workspace / "clip.mp4")
    server.script(reply("a rabbit"))
    done = run_dcode(
        [
            "-p",
            "what happens?",
            "-m",
            "openai:test-model",
            "--base-url",
            server.base_url,
            "-i",
            "clip.mp4",
        ],
        home,
        workspace,
    )
    assert done.returncode == 0, done.stderr
    [session] = SqliteStore(home / "sessions.db", home, read_only=True).list()
    shown = run_dcode(["sessions", "show", session.id], home, workspace)
    assert shown.returncode == 0, shown.stderr
    transcript = shown.stdout.splitlines()
    at = transcript.index("[you] what happens?")
    assert transcript[at + 1] == "      [video] clip.mp4 · 3 frames · 0:00.0–0:04.0"
    assert "Frame at t=" not in shown.stdout
