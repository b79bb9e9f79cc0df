"""The clipboard chain against fake ``wl-paste``, ``xclip``, ``pngpaste``, ``osascript`` and
``powershell.exe`` executables put first (and alone) on the PATH handed in through ``env``."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from PIL import Image

from dcode.media.clipboard import (
    ClipboardImage,
    ClipboardResult,
    ClipboardUnavailable,
    NoImage,
    RunResult,
    bounded_run,
    read_clipboard_image,
    sniff_image_type,
)

# One dispatcher serves every fake tool; it reads what "the clipboard" holds from $FAKE_CLIP
# and logs each invocation there, so tests can check which tools ran and how.
FAKE_TOOL = r"""
import base64, json, os, pathlib, sys, time

name = pathlib.Path(sys.argv[0]).name
args = sys.argv[1:]
clip = pathlib.Path(os.environ["FAKE_CLIP"])
with open(clip / "calls.jsonl", "a") as log:
    log.write(json.dumps([name, *args]) + "\n")
if (clip / f"hang-{name}").exists():
    time.sleep(30)
if (clip / f"broken-{name}").exists():
    sys.stderr.write("Failed to connect to a Wayland server\n")
    sys.exit(1)
types_file = clip / "types"
offered = types_file.read_text().split() if types_file.exists() else []


def data(kind):
    path = clip / kind.replace("/", "_")
    return path.read_bytes() if path.exists() else None


def out(raw):
    sys.stdout.buffer.write(raw)
    sys.stdout.flush()


if name == "wl-paste":
    if args == ["--list-types"]:
        if not offered:
            sys.stderr.write("Nothing is copied\n")
            sys.exit(1)
        out(("\n".join(offered) + "\n").encode())
    elif args[:2] == ["--no-newline", "-t"] and data(args[2]) is not None:
        out(data(args[2]))
    else:
        sys.stderr.write("No suitable type of content copied\n")
        sys.exit(1)
elif name == "xclip":
    kind = args[args.index("-t") + 1]
    if kind == "TARGETS":
        if not offered:
            sys.stderr.write("Error: target TARGETS not available\n")
            sys.exit(1)
        out(("\n".join(["TARGETS", *offered]) + "\n").encode())
    elif data(kind) is not None:
        out(data(kind))
    else:
        sys.stderr.write(f"Error: target {kind} not available\n")
        sys.exit(1)
elif name == "pngpaste":
    if data("image/png") is None:
        sys.stderr.write("No PNG data found on the pasteboard!\n")
        sys.exit(1)
    out(data("image/png"))
elif name == "osascript":
    if data("image/png") is None:
        out(b"noimage\n")
    else:
        pathlib.Path(args[-1]).write_bytes(data("image/png"))
        out(b"ok\n")
elif name == "powershell.exe":
    assert "-NoProfile" in args and "-Command" in args
    assert "GetImage()" in args[-1]
    raw = data("image/png")
    if (clip / "powershell-garbage").exists():
        out(b"IMAGE:not base64 at all!!")
    elif raw is None:
        out(b"NOIMAGE")
    else:
        out(b"IMAGE:" + base64.b64encode(raw))
elif name == "flood":
    out(b"z" * 200_000)
else:
    sys.exit(3)
"""

ALL_TOOLS = ("wl-paste", "xclip", "pngpaste", "osascript", "powershell.exe")


def _image_bytes(fmt: str, size: tuple[int, int] = (4, 3)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 30, 60)).save(buffer, fmt)
    return buffer.getvalue()


PNG = _image_bytes("PNG")
BMP = _image_bytes("BMP")
JPEG = _image_bytes("JPEG")


class FakeClipboard:
    """A tmp dir of fake tools plus the state they serve."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.state = root / "clip"
        self.bin.mkdir()
        self.state.mkdir()
        self.script = root / "fake_tool.py"
        self.script.write_text(FAKE_TOOL)

    def install(self, *names: str) -> None:
        for name in names:
            tool = self.bin / name
            tool.write_text(f"#!{sys.executable}\nexec(open({str(self.script)!r}).read())\n")
            tool.chmod(0o755)

    def offer(self, **payloads: bytes) -> None:
        """Offer types, e.g. ``offer(image_png=PNG, text_plain=b"hi")``, in that order."""
        kinds = [
            key.replace("_", "/", 1) if key.startswith(("image_", "text_")) else key
            for key in payloads
        ]
        (self.state / "types").write_text("\n".join(kinds))
        for kind, payload in zip(kinds, payloads.values(), strict=True):
            (self.state / kind.replace("/", "_")).write_bytes(payload)

    def flag(self, name: str) -> None:
        (self.state / name).touch()

    def env(self, **extra: str) -> dict[str, str]:
        return {"PATH": str(self.bin), "FAKE_CLIP": str(self.state), **extra}

    def calls(self) -> list[list[str]]:
        log = self.state / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def tools_called(self) -> list[str]:
        return [call[0] for call in self.calls()]


@pytest.fixture
def clip(tmp_path: Path) -> FakeClipboard:
    return FakeClipboard(tmp_path)


def _read(
    clip: FakeClipboard,
    platform: str = "linux",
    *,
    env: dict[str, str] | None = None,
    is_wsl: bool = False,
    timeout: float = 3.0,
    max_bytes: int = 20 * 1024 * 1024,
) -> ClipboardResult:
    return read_clipboard_image(
        env=env if env is not None else clip.env(),
        platform=platform,
        is_wsl=is_wsl,
        timeout=timeout,
        max_bytes=max_bytes,
    )


# --------------------------------------------------------------------------- Linux


def test_wayland_png(clip: FakeClipboard) -> None:
    clip.install("wl-paste", "xclip")
    clip.offer(text_plain=b"hello", image_png=PNG)
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0", DISPLAY=":0"))
    assert result == ClipboardImage(
        data=PNG, media_type="image/png", source="wl-paste", also_text=True
    )
    assert clip.calls() == [
        ["wl-paste", "--list-types"],
        ["wl-paste", "--no-newline", "-t", "image/png"],
    ]  # wl-paste answered, so xclip was never asked


def test_wayland_prefers_png_over_other_types(clip: FakeClipboard) -> None:
    clip.install("wl-paste")
    clip.offer(image_bmp=BMP, image_jpeg=JPEG, image_png=PNG)
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0"))
    assert isinstance(result, ClipboardImage)
    assert result.media_type == "image/png"
    assert not result.also_text


def test_wslg_offers_only_bmp(clip: FakeClipboard) -> None:
    clip.install("wl-paste")
    clip.offer(image_bmp=BMP)
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0"))
    assert result == ClipboardImage(data=BMP, media_type="image/bmp", source="wl-paste")


def test_media_type_comes_from_the_bytes(clip: FakeClipboard) -> None:
    clip.install("wl-paste")
    clip.offer(image_png=JPEG)
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0"))
    assert isinstance(result, ClipboardImage)
    assert result.media_type == "image/jpeg"


def test_x11_targets_then_png(clip: FakeClipboard) -> None:
    clip.install("xclip")
    clip.offer(UTF8_STRING=b"hi", image_png=PNG)
    result = _read(clip, env=clip.env(DISPLAY=":0"))
    assert result == ClipboardImage(
        data=PNG, media_type="image/png", source="xclip", also_text=True
    )
    assert clip.calls() == [
        ["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"],
        ["xclip", "-selection", "clipboard", "-t", "image/png", "-o"],
    ]


def test_xwayland_without_wl_paste_uses_xclip(clip: FakeClipboard) -> None:
    clip.install("xclip")
    clip.offer(image_png=PNG)
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0", DISPLAY=":0"))
    assert isinstance(result, ClipboardImage)
    assert result.source == "xclip"


def test_broken_wl_paste_falls_back_to_xclip(clip: FakeClipboard) -> None:
    clip.install("wl-paste", "xclip")
    clip.offer(image_png=PNG)
    clip.flag("broken-wl-paste")
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0", DISPLAY=":0"))
    assert isinstance(result, ClipboardImage)
    assert result.source == "xclip"


@pytest.mark.parametrize("display", [{"WAYLAND_DISPLAY": "wayland-0"}, {"DISPLAY": ":0"}])
def test_text_only_clipboard_is_a_quiet_no_image(
    clip: FakeClipboard, display: dict[str, str]
) -> None:
    clip.install("wl-paste", "xclip")
    clip.offer(text_plain=b"just text", UTF8_STRING=b"just text")
    result = _read(clip, env=clip.env(**display))
    assert isinstance(result, NoImage)
    assert len(clip.calls()) == 1  # only the type listing: nothing was fetched


@pytest.mark.parametrize("display", [{"WAYLAND_DISPLAY": "wayland-0"}, {"DISPLAY": ":0"}])
def test_empty_clipboard_is_a_quiet_no_image(clip: FakeClipboard, display: dict[str, str]) -> None:
    clip.install("wl-paste", "xclip")
    assert isinstance(_read(clip, env=clip.env(**display)), NoImage)


@pytest.mark.parametrize(
    ("display", "message"),
    [
        (
            {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"},
            "No clipboard tool found: install wl-clipboard (Wayland) or xclip (X11)",
        ),
        (
            {"WAYLAND_DISPLAY": "wayland-0"},
            "No clipboard tool found: install wl-clipboard (Wayland)",
        ),
        ({"DISPLAY": ":0"}, "No clipboard tool found: install xclip (X11)"),
    ],
)
def test_no_tools_names_what_to_install(
    clip: FakeClipboard, display: dict[str, str], message: str
) -> None:
    result = _read(clip, env=clip.env(**display))
    assert isinstance(result, ClipboardUnavailable)
    assert result.message == message


def test_no_display_at_all(clip: FakeClipboard) -> None:
    clip.install("wl-paste", "xclip")
    result = _read(clip)
    assert isinstance(result, ClipboardUnavailable)
    assert "No graphical session" in result.reason
    assert clip.calls() == []


@pytest.mark.parametrize(
    "ssh", [{"SSH_CONNECTION": "10.0.0.2 5122 10.0.0.1 22"}, {"SSH_TTY": "/dev/pts/3"}]
)
@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_ssh_says_the_local_clipboard_is_unreachable(
    clip: FakeClipboard, ssh: dict[str, str], platform: str
) -> None:
    clip.install(*ALL_TOOLS)
    clip.offer(image_png=PNG)
    result = _read(clip, platform, env=clip.env(**ssh))
    assert isinstance(result, ClipboardUnavailable)
    assert "unreachable over SSH" in result.reason
    assert "path" in result.hint and "drag" in result.hint
    assert clip.calls() == []


def test_ssh_with_x_forwarding_still_reads(clip: FakeClipboard) -> None:
    clip.install("xclip")
    clip.offer(image_png=PNG)
    result = _read(clip, env=clip.env(SSH_CONNECTION="a 1 b 22", DISPLAY="localhost:10.0"))
    assert isinstance(result, ClipboardImage)


def test_hanging_tool_times_out(clip: FakeClipboard) -> None:
    clip.install("wl-paste")
    clip.offer(image_png=PNG)
    clip.flag("hang-wl-paste")
    start = time.monotonic()
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0"), timeout=0.5)
    assert time.monotonic() - start < 5
    assert isinstance(result, ClipboardUnavailable)
    assert result.reason == "wl-paste did not answer within 0.5 s"


def test_hanging_wl_paste_hands_on_to_xclip(clip: FakeClipboard) -> None:
    clip.install("wl-paste", "xclip")
    clip.offer(image_png=PNG)
    clip.flag("hang-wl-paste")
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0", DISPLAY=":0"), timeout=0.5)
    assert isinstance(result, ClipboardImage)
    assert result.source == "xclip"


def test_garbage_claiming_png_is_rejected(clip: FakeClipboard) -> None:
    clip.install("wl-paste")
    clip.offer(image_png=b"this is not a png at all")
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0"))
    assert isinstance(result, ClipboardUnavailable)
    assert result.reason == "wl-paste returned data for image/png that is not a valid image"


def test_garbage_png_falls_back_to_another_offered_type(clip: FakeClipboard) -> None:
    clip.install("wl-paste")
    clip.offer(image_png=b"\x89PNX garbage", image_bmp=BMP)
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0"))
    assert isinstance(result, ClipboardImage)
    assert result.media_type == "image/bmp"


def test_empty_image_data_is_no_image(clip: FakeClipboard) -> None:
    clip.install("wl-paste")
    clip.offer(image_png=b"")
    assert isinstance(_read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0")), NoImage)


def test_size_cap(clip: FakeClipboard) -> None:
    big = _image_bytes("PNG", (64, 64))
    clip.install("wl-paste")
    clip.offer(image_png=big)
    result = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0"), max_bytes=len(big) - 1)
    assert isinstance(result, ClipboardUnavailable)
    assert result.reason.startswith("The clipboard image is larger than")
    ok = _read(clip, env=clip.env(WAYLAND_DISPLAY="wayland-0"), max_bytes=len(big))
    assert isinstance(ok, ClipboardImage)


# --------------------------------------------------------------------------- WSL


def test_wsl_powershell_png(clip: FakeClipboard) -> None:
    clip.install("powershell.exe")
    clip.offer(image_png=PNG)
    result = _read(clip, is_wsl=True)
    assert result == ClipboardImage(data=PNG, media_type="image/png", source="powershell.exe")


def test_wsl_detected_from_env(clip: FakeClipboard) -> None:
    clip.install("powershell.exe")
    clip.offer(image_png=PNG)
    result = read_clipboard_image(env=clip.env(WSL_DISTRO_NAME="Ubuntu"), platform="linux")
    assert isinstance(result, ClipboardImage)


def test_wsl_powershell_no_image(clip: FakeClipboard) -> None:
    clip.install("powershell.exe")
    assert isinstance(_read(clip, is_wsl=True), NoImage)


def test_wsl_powershell_bad_output(clip: FakeClipboard) -> None:
    clip.install("powershell.exe")
    clip.offer(image_png=PNG)
    clip.flag("powershell-garbage")
    result = _read(clip, is_wsl=True)
    assert isinstance(result, ClipboardUnavailable)
    assert "not a valid image" in result.reason


def test_wslg_text_only_still_asks_windows(clip: FakeClipboard) -> None:
    """WSLg mirrors the Windows clipboard unreliably, so "no image" there is not the end."""
    clip.install("wl-paste", "powershell.exe")
    clip.offer(text_plain=b"hi")
    assert isinstance(_read(clip, is_wsl=True, env=clip.env(WAYLAND_DISPLAY="wayland-0")), NoImage)
    assert clip.tools_called() == ["wl-paste", "powershell.exe"]


def test_wslg_bmp_is_taken_without_powershell(clip: FakeClipboard) -> None:
    clip.install("wl-paste", "powershell.exe")
    clip.offer(image_bmp=BMP)
    result = _read(clip, is_wsl=True, env=clip.env(WAYLAND_DISPLAY="wayland-0"))
    assert isinstance(result, ClipboardImage)
    assert result.media_type == "image/bmp"
    assert "powershell.exe" not in clip.tools_called()


def test_wsl_without_tools(clip: FakeClipboard) -> None:
    result = _read(clip, is_wsl=True)
    assert isinstance(result, ClipboardUnavailable)
    assert "powershell.exe" in result.hint


def test_windows_native_uses_powershell(clip: FakeClipboard) -> None:
    clip.install("powershell.exe")
    clip.offer(image_png=PNG)
    result = _read(clip, "win32")
    assert isinstance(result, ClipboardImage)


# --------------------------------------------------------------------------- macOS


def test_macos_pngpaste(clip: FakeClipboard) -> None:
    clip.install("pngpaste", "osascript")
    clip.offer(image_png=PNG)
    result = _read(clip, "darwin")
    assert result == ClipboardImage(data=PNG, media_type="image/png", source="pngpaste")
    assert clip.calls() == [["pngpaste", "-"]]


def test_macos_pngpaste_text_clipboard(clip: FakeClipboard) -> None:
    clip.install("pngpaste", "osascript")
    assert isinstance(_read(clip, "darwin"), NoImage)
    assert clip.tools_called() == ["pngpaste"]


def test_macos_osascript_temp_file(clip: FakeClipboard) -> None:
    clip.install("osascript")
    clip.offer(image_png=PNG)
    result = _read(clip, "darwin")
    assert result == ClipboardImage(data=PNG, media_type="image/png", source="osascript")
    (call,) = clip.calls()
    assert "«class PNGf»" in " ".join(call)
    assert not Path(call[-1]).exists()  # the temp file is cleaned up


def test_macos_osascript_no_image(clip: FakeClipboard) -> None:
    clip.install("osascript")
    assert isinstance(_read(clip, "darwin"), NoImage)


def test_macos_without_tools(clip: FakeClipboard) -> None:
    result = _read(clip, "darwin")
    assert isinstance(result, ClipboardUnavailable)
    assert "pngpaste" in result.hint


# --------------------------------------------------------------------------- pieces


def test_a_runner_that_cannot_start_is_reported(clip: FakeClipboard) -> None:
    clip.install("wl-paste")

    def refuse(
        argv: Sequence[str], *, timeout: float, env: Mapping[str, str], max_output: int
    ) -> RunResult:
        raise PermissionError(13, "Permission denied")

    result = read_clipboard_image(
        env=clip.env(WAYLAND_DISPLAY="wayland-0"), platform="linux", is_wsl=False, run=refuse
    )
    assert isinstance(result, ClipboardUnavailable)
    assert result.reason == "wl-paste could not be started (Permission denied)"


def test_bounded_run_caps_output(clip: FakeClipboard) -> None:
    clip.install("flood")
    result = bounded_run([str(clip.bin / "flood")], timeout=5, env=clip.env(), max_output=1000)
    assert result.stdout == b"z" * 1001


def test_bounded_run_kills_on_timeout(clip: FakeClipboard) -> None:
    clip.install("wl-paste")
    clip.flag("hang-wl-paste")
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        bounded_run([str(clip.bin / "wl-paste")], timeout=0.3, env=clip.env(), max_output=10)
    assert time.monotonic() - start < 3


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (BMP, "image/bmp"),
        (_image_bytes("GIF"), "image/gif"),
        (_image_bytes("WEBP"), "image/webp"),
        (b"BM not really a bitmap", None),
        (b"hello world", None),
        (b"", None),
        (base64.b64encode(PNG), None),
    ],
)
def test_sniff(data: bytes, expected: str | None) -> None:
    assert sniff_image_type(data) == expected
