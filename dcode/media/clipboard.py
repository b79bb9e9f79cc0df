"""Read an image from the system clipboard through the platform's own tools.

Python has no portable clipboard-image API, and the libraries that try fail exactly where users
complain most (GNOME's Wayland, WSLg, SSH sessions). So this module asks the tools that work:
``wl-paste`` on Wayland, ``xclip`` on X11, ``pngpaste`` or ``osascript`` on macOS and
``powershell.exe`` on WSL or Windows. Three outcomes matter to the caller:

- :class:`ClipboardImage`: bytes whose type was sniffed from their magic, never taken from
  the tool's word;
- :class:`NoImage`: the clipboard holds no image (usually text). This is the normal, quiet
  outcome; the caller then pastes text as usual, so a text paste never breaks;
- :class:`ClipboardUnavailable`: no image could be delivered, with one message saying why and
  what to do (install a tool, drag the file instead, ...).

:func:`read_clipboard_image` blocks for as long as the tools take (bounded by timeouts, and a
cold ``powershell.exe`` is slow), so call it off the event loop, e.g. ``asyncio.to_thread``.
Every side effect is a parameter so tests can run the chain against fake executables.
"""

from __future__ import annotations

import base64
import binascii
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dcode.media.paths import running_under_wsl

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "ClipboardImage",
    "ClipboardResult",
    "ClipboardUnavailable",
    "NoImage",
    "RunResult",
    "Runner",
    "Which",
    "bounded_run",
    "read_clipboard_image",
    "sniff_image_type",
]

DEFAULT_TIMEOUT = 3.0
DEFAULT_POWERSHELL_TIMEOUT = 10.0  # a cold powershell.exe start from WSL takes seconds
DEFAULT_MAX_BYTES = 20 * 1024 * 1024  # the per-source admission limit
_STDERR_CAP = 64 * 1024

# Offered types we ask for, best first. WSLg's wl-paste offers only BMP for Windows images.
_PREFERRED_TYPES = (
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/webp",
    "image/gif",
    "image/bmp",
    "image/x-bmp",
    "image/x-ms-bmp",
)
_MAX_TYPES_TRIED = 3


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class ClipboardImage:
    """An image read from the clipboard.

    ``media_type`` comes from the bytes' magic. ``source`` names the tool, for logs.
    ``also_text`` says the clipboard offered text as well (spreadsheets offer a rendered image
    of copied cells), so the caller can prefer the text if its key binding means "paste".
    """

    data: bytes
    media_type: str
    source: str
    also_text: bool = False


@dataclass(frozen=True, slots=True)
class NoImage:
    """The clipboard holds no image: paste text as usual and say nothing.

    ``detail`` explains what was seen (for logs only, never a toast).
    """

    detail: str = ""


@dataclass(frozen=True, slots=True)
class ClipboardUnavailable:
    """No image could be delivered, and the user should hear why in one message."""

    reason: str
    hint: str

    @property
    def message(self) -> str:
        return f"{self.reason}: {self.hint}"


ClipboardResult = ClipboardImage | NoImage | ClipboardUnavailable


# --------------------------------------------------------------------------- side effects


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a tool printed. ``stdout`` holds at most ``max_output + 1`` bytes, so a longer
    length means the output was over the cap and the tool was stopped."""

    returncode: int
    stdout: bytes
    stderr: bytes


class Runner(Protocol):
    """Runs a tool: raises ``subprocess.TimeoutExpired`` on timeout and ``OSError`` when it
    cannot start."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str],
        max_output: int,
    ) -> RunResult: ...


class Which(Protocol):
    """``shutil.which``'s shape: find ``cmd`` on ``path``."""

    def __call__(self, cmd: str, mode: int = ..., path: str | None = ...) -> str | None: ...


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the tool and anything it spawned (a wrapper script's children keep pipes open)."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def bounded_run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str],
    max_output: int,
) -> RunResult:
    """Like ``subprocess.run`` with output capture, but it stops reading at ``max_output + 1``
    bytes and kills the tool at ``timeout``, so a huge or hung clipboard costs neither
    memory nor a frozen thread."""
    if os.name != "posix":
        completed = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env=dict(env),
            check=False,
        )
        return RunResult(completed.returncode, completed.stdout[: max_output + 1], completed.stderr)

    deadline = _now() + timeout
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out = bytearray()
    err = bytearray()
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ, out)
            selector.register(proc.stderr, selectors.EVENT_READ, err)
            while selector.get_map():
                remaining = deadline - _now()
                if remaining <= 0:
                    _kill(proc)
                    raise subprocess.TimeoutExpired(list(argv), timeout)
                for key, _ in selector.select(remaining):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    sink: bytearray = key.data
                    if sink is out:
                        out += chunk
                        if len(out) > max_output:
                            _kill(proc)
                            del out[max_output + 1 :]
                            for registered in list(selector.get_map().values()):
                                selector.unregister(registered.fileobj)
                            break
                    elif len(err) < _STDERR_CAP:
                        err += chunk[: _STDERR_CAP - len(err)]
        try:
            returncode = proc.wait(max(0.0, deadline - _now()) + 0.5)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise subprocess.TimeoutExpired(list(argv), timeout) from None
    finally:
        proc.stdout.close()
        proc.stderr.close()
        if proc.poll() is None:
            _kill(proc)
            proc.wait()
    return RunResult(returncode, bytes(out), bytes(err))


def _now() -> float:
    return time.monotonic()


# --------------------------------------------------------------------------- sniffing


def sniff_image_type(data: bytes) -> str | None:
    """The media type the bytes really are, among those admission accepts, else None.

    Tools label data by what the clipboard owner claimed, which can be wrong or garbage.
    """
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if len(data) >= 18 and data[:2] == b"BM":
        header_size = int.from_bytes(data[14:18], "little")
        if header_size in (12, 40, 52, 56, 64, 108, 124):
            return "image/bmp"
    return None


# --------------------------------------------------------------------------- the chain


@dataclass(frozen=True, slots=True)
class _Failed:
    """A tool that could not answer; the chain moves on and may report it at the end."""

    reason: str
    hint: str = ""


_Attempt = ClipboardImage | NoImage | _Failed


@dataclass(frozen=True, slots=True)
class _Context:
    env: Mapping[str, str]
    which: Which
    run: Runner
    timeout: float
    max_bytes: int

    def find(self, name: str) -> str | None:
        return self.which(name, path=self.env.get("PATH", os.defpath))

    def call(
        self, argv: Sequence[str], *, timeout: float | None = None, max_output: int | None = None
    ) -> RunResult | _Failed:
        """Run one tool, turning a timeout, a failed start or an overflow into a failure."""
        limit = self.timeout if timeout is None else timeout
        cap = self.max_bytes if max_output is None else max_output
        tool = Path(argv[0]).name
        try:
            result = self.run(argv, timeout=limit, env=self.env, max_output=cap)
        except subprocess.TimeoutExpired:
            return _Failed(f"{tool} did not answer within {limit:g} s")
        except OSError as exc:
            return _Failed(f"{tool} could not be started ({exc.strerror or exc})")
        # Checked before the exit status: the runner kills a tool whose output overflows.
        return _too_large(self.max_bytes) if len(result.stdout) > cap else result


def _human_size(size: int) -> str:
    mib = 1024 * 1024
    return f"{size / mib:g} MiB" if size >= mib else f"{size} bytes"


def _too_large(max_bytes: int) -> _Failed:
    return _Failed(
        f"The clipboard image is larger than {_human_size(max_bytes)}",
        "save it to a file and pass its path",
    )


def _not_an_image(tool: str, media_type: str) -> _Failed:
    return _Failed(
        f"{tool} returned data for {media_type} that is not a valid image",
        "copy the image again, or save it to a file and pass its path",
    )


def _image_from(
    data: bytes, *, tool: str, claimed: str, ctx: _Context, also_text: bool
) -> _Attempt:
    """Judge one tool's output: empty means no image, garbage is a failure."""
    if len(data) > ctx.max_bytes:
        return _too_large(ctx.max_bytes)
    if not data:
        return NoImage(f"{tool} returned no data for {claimed}")
    media_type = sniff_image_type(data)
    if media_type is None:
        return _not_an_image(tool, claimed)
    return ClipboardImage(data=data, media_type=media_type, source=tool, also_text=also_text)


def _pick_types(offered: list[str]) -> list[str]:
    lowered = {kind.lower(): kind for kind in offered}
    return [lowered[kind] for kind in _PREFERRED_TYPES if kind in lowered][:_MAX_TYPES_TRIED]


def _offers_text(offered: list[str]) -> bool:
    return any(
        kind.startswith("text/") or kind in ("UTF8_STRING", "STRING", "TEXT") for kind in offered
    )


def _read_by_types(
    ctx: _Context,
    tool: str,
    offered: list[str],
    fetch: Callable[[str], list[str]],
) -> _Attempt:
    """Fetch the best offered image types in turn; the first valid image wins."""
    wanted = _pick_types(offered)
    if not wanted:
        return NoImage(f"{tool} offers no image ({', '.join(offered[:5]) or 'nothing'})")
    also_text = _offers_text(offered)
    first_failure: _Failed | None = None
    for kind in wanted:
        result = ctx.call(fetch(kind))
        if isinstance(result, _Failed):
            first_failure = first_failure or result
            continue
        if result.returncode != 0:
            first_failure = first_failure or _Failed(
                f"{tool} failed to read {kind}: {_stderr(result)}"
            )
            continue
        attempt = _image_from(result.stdout, tool=tool, claimed=kind, ctx=ctx, also_text=also_text)
        if isinstance(attempt, ClipboardImage):
            return attempt
        if isinstance(attempt, _Failed):
            first_failure = first_failure or attempt
    return first_failure or NoImage(f"{tool} returned no image data")


def _stderr(result: RunResult) -> str:
    text = result.stderr.decode("utf-8", "replace").strip()
    return text.splitlines()[0][:200] if text else f"exit status {result.returncode}"


def _wayland(ctx: _Context, exe: str) -> _Attempt:
    listed = ctx.call([exe, "--list-types"])
    if isinstance(listed, _Failed):
        return listed
    if listed.returncode != 0:
        message = _stderr(listed)
        if "nothing is copied" in message.lower() or "no selection" in message.lower():
            return NoImage("the clipboard is empty")
        return _Failed(f"wl-paste failed: {message}")
    offered = listed.stdout.decode("utf-8", "replace").split()
    return _read_by_types(ctx, "wl-paste", offered, lambda kind: [exe, "--no-newline", "-t", kind])


def _x11(ctx: _Context, exe: str) -> _Attempt:
    listed = ctx.call([exe, "-selection", "clipboard", "-t", "TARGETS", "-o"])
    if isinstance(listed, _Failed):
        return listed
    if listed.returncode != 0:
        message = _stderr(listed)
        if "target targets not available" in message.lower():
            return NoImage("the clipboard is empty")
        return _Failed(f"xclip failed: {message}")
    offered = listed.stdout.decode("utf-8", "replace").split()
    return _read_by_types(
        ctx, "xclip", offered, lambda kind: [exe, "-selection", "clipboard", "-t", kind, "-o"]
    )


def _pngpaste(ctx: _Context, exe: str) -> _Attempt:
    result = ctx.call([exe, "-"])
    if isinstance(result, _Failed):
        return result
    if result.returncode != 0:
        # pngpaste exits 1 with "No PNG data found on the pasteboard!" for a text clipboard.
        return NoImage(f"pngpaste: {_stderr(result)}")
    return _image_from(
        result.stdout, tool="pngpaste", claimed="image/png", ctx=ctx, also_text=False
    )


# ``the clipboard as «class PNGf»`` also converts a TIFF-only clipboard (Preview, Safari).
_OSASCRIPT = (
    "on run argv",
    "try",
    "set img to the clipboard as «class PNGf»",
    "on error",
    'return "noimage"',
    "end try",
    "set fh to open for access (POSIX file (item 1 of argv)) with write permission",
    "set eof fh to 0",
    "write img to fh",
    "close access fh",
    'return "ok"',
    "end run",
)


def _osascript(ctx: _Context, exe: str) -> _Attempt:
    with tempfile.TemporaryDirectory(prefix="dcode-clip-") as tmp:
        target = Path(tmp) / "clipboard.png"
        argv = [exe]
        for line in _OSASCRIPT:
            argv += ["-e", line]
        result = ctx.call([*argv, str(target)])
        if isinstance(result, _Failed):
            return result
        said = result.stdout.decode("utf-8", "replace").strip()
        if said == "noimage":
            return NoImage("the pasteboard holds no image")
        if result.returncode != 0:
            return _Failed(f"osascript failed: {_stderr(result)}")
        try:
            size = target.stat().st_size
            if size > ctx.max_bytes:
                return _too_large(ctx.max_bytes)
            data = target.read_bytes()
        except OSError:
            return NoImage("osascript wrote no image")
    return _image_from(data, tool="osascript", claimed="image/png", ctx=ctx, also_text=False)


# Base64 on stdout, not a temp file: no wslpath round trip, no Windows temp dir to clean up,
# and no code page or CRLF mangling of binary output through the WSL interop pipe. A "PNG"
# clipboard format (kept by browsers, with alpha) is preferred over GetImage's bitmap, which
# also covers DIB/BMP-only clipboards.
_POWERSHELL = "; ".join(
    (
        "$ErrorActionPreference = 'Stop'",
        "Add-Type -AssemblyName System.Windows.Forms",
        "Add-Type -AssemblyName System.Drawing",
        "$bytes = $null",
        "$png = [System.Windows.Forms.Clipboard]::GetData('PNG')",
        "if ($png -is [System.IO.MemoryStream]) { $bytes = $png.ToArray() }",
        (
            "if ($bytes -eq $null) { $img = [System.Windows.Forms.Clipboard]::GetImage();"
            " if ($img -ne $null) { $ms = New-Object System.IO.MemoryStream;"
            " $img.Save($ms, [System.Drawing.Imaging.ImageFormat]::Png); $bytes = $ms.ToArray() } }"
        ),
        (
            "if ($bytes -eq $null) { [Console]::Out.Write('NOIMAGE') }"
            " else { [Console]::Out.Write('IMAGE:' + [Convert]::ToBase64String($bytes)) }"
        ),
    )
)


def _powershell(ctx: _Context, exe: str, timeout: float) -> _Attempt:
    argv = [exe, "-NoProfile", "-NonInteractive", "-STA", "-Command", _POWERSHELL]
    result = ctx.call(argv, timeout=timeout, max_output=ctx.max_bytes * 4 // 3 + 64)
    if isinstance(result, _Failed):
        return result
    said = result.stdout.decode("ascii", "replace").strip()
    if said.startswith("NOIMAGE"):
        return NoImage("the Windows clipboard holds no image")
    if result.returncode != 0 or not said.startswith("IMAGE:"):
        return _Failed(f"powershell.exe could not read the clipboard: {_stderr(result)}")
    try:
        data = base64.b64decode(said[len("IMAGE:") :], validate=True)
    except (binascii.Error, ValueError):
        return _not_an_image("powershell.exe", "image/png")
    return _image_from(data, tool="powershell.exe", claimed="image/png", ctx=ctx, also_text=False)


_SSH = ClipboardUnavailable(
    "The local clipboard is unreachable over SSH",
    "drag the image file into the terminal if it is on this machine, "
    "or copy it here and pass its path",
)


def read_clipboard_image(
    *,
    env: Mapping[str, str] = os.environ,
    which: Which = shutil.which,
    run: Runner = bounded_run,
    platform: str = sys.platform,
    is_wsl: bool | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    powershell_timeout: float = DEFAULT_POWERSHELL_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ClipboardResult:
    """Read an image from the clipboard, trying the tools that apply in order.

    Linux: ``wl-paste`` when ``WAYLAND_DISPLAY`` is set, then ``xclip`` when ``DISPLAY`` is
    (both under XWayland), then ``powershell.exe`` under WSL. macOS: ``pngpaste``, else
    ``osascript``. Windows: ``powershell.exe``. A tool that answers "no image" ends the
    chain, except that WSL still asks Windows, whose clipboard WSLg mirrors unreliably; a
    tool that fails hands on to the next. If every tool failed, the first failure is reported;
    if any said "no image", the answer is a quiet :class:`NoImage`.

    Data the tool labels as an image but whose magic bytes are not one is reported as
    :class:`ClipboardUnavailable` ("... is not a valid image") rather than silently ignored.

    Blocking: call it off the event loop (``await asyncio.to_thread(read_clipboard_image)``).
    Each tool runs under ``timeout`` seconds (``powershell_timeout`` for PowerShell's slow
    start) and at most ``max_bytes`` of image data is read.
    """
    ctx = _Context(env=env, which=which, run=run, timeout=timeout, max_bytes=max_bytes)
    wayland = bool(env.get("WAYLAND_DISPLAY"))
    x11 = bool(env.get("DISPLAY"))
    over_ssh = bool(env.get("SSH_CONNECTION") or env.get("SSH_TTY"))
    if over_ssh and not wayland and not x11:
        return _SSH

    match platform:
        case "darwin":
            return _macos(ctx)
        case "win32" | "cygwin":
            return _windows(ctx, powershell_timeout)
        case _:
            wsl = running_under_wsl(env) if is_wsl is None else is_wsl
            return _linux(
                ctx, wayland=wayland, x11=x11, wsl=wsl, powershell_timeout=powershell_timeout
            )


def _finish(attempts: list[_Attempt], missing: ClipboardUnavailable) -> ClipboardResult:
    """Turn what the tools said into one answer for the caller."""
    for attempt in attempts:
        if isinstance(attempt, ClipboardImage):
            return attempt
    for attempt in attempts:
        if isinstance(attempt, NoImage):
            return attempt
    for attempt in attempts:
        if isinstance(attempt, _Failed):
            hint = attempt.hint or "copy the image again, or save it to a file and pass its path"
            return ClipboardUnavailable(attempt.reason, hint)
    return missing


def _linux(
    ctx: _Context, *, wayland: bool, x11: bool, wsl: bool, powershell_timeout: float
) -> ClipboardResult:
    attempts: list[_Attempt] = []
    if wayland and (exe := ctx.find("wl-paste")) is not None:
        attempts.append(_wayland(ctx, exe))
    if x11 and not _decided(attempts) and (exe := ctx.find("xclip")) is not None:
        attempts.append(_x11(ctx, exe))
    has_image = any(isinstance(attempt, ClipboardImage) for attempt in attempts)
    if wsl and not has_image and (exe := ctx.find("powershell.exe")) is not None:
        attempts.append(_powershell(ctx, exe, powershell_timeout))
    return _finish(attempts, _linux_missing(wayland=wayland, x11=x11, wsl=wsl))


def _decided(attempts: list[_Attempt]) -> bool:
    return any(not isinstance(attempt, _Failed) for attempt in attempts)


def _linux_missing(*, wayland: bool, x11: bool, wsl: bool) -> ClipboardUnavailable:
    if wsl:
        return ClipboardUnavailable(
            "No clipboard tool found",
            "make sure Windows interop is enabled so powershell.exe is on PATH, "
            "or install wl-clipboard for WSLg",
        )
    if wayland and x11:
        return ClipboardUnavailable(
            "No clipboard tool found", "install wl-clipboard (Wayland) or xclip (X11)"
        )
    if wayland:
        return ClipboardUnavailable("No clipboard tool found", "install wl-clipboard (Wayland)")
    if x11:
        return ClipboardUnavailable("No clipboard tool found", "install xclip (X11)")
    return ClipboardUnavailable(
        "No graphical session (neither WAYLAND_DISPLAY nor DISPLAY is set)",
        "drag the image file into the terminal or pass its path",
    )


def _macos(ctx: _Context) -> ClipboardResult:
    if (exe := ctx.find("pngpaste")) is not None:
        attempt = _pngpaste(ctx, exe)
        if not isinstance(attempt, _Failed):
            return _finish([attempt], _MAC_MISSING)
        first: list[_Attempt] = [attempt]
    else:
        first = []
    if (exe := ctx.find("osascript")) is not None:
        return _finish([_osascript(ctx, exe), *first], _MAC_MISSING)
    return _finish(first, _MAC_MISSING)


_MAC_MISSING = ClipboardUnavailable(
    "No clipboard tool found", "install pngpaste (brew install pngpaste)"
)


def _windows(ctx: _Context, powershell_timeout: float) -> ClipboardResult:
    attempts: list[_Attempt] = []
    for name in ("powershell.exe", "powershell", "pwsh"):
        if (exe := ctx.find(name)) is not None:
            attempts.append(_powershell(ctx, exe, powershell_timeout))
            break
    return _finish(
        attempts,
        ClipboardUnavailable("No clipboard tool found", "PowerShell is needed to read images"),
    )
