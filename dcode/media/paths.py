"""Turn pasted or dropped text into the files it names.

A drag-and-drop reaches a terminal program as pasted text, and every terminal spells it
differently: iTerm2, Terminal.app and WezTerm backslash-escape, Windows Terminal double-quotes
``C:\\...`` paths and single-quotes ``/mnt/c/...`` ones in WSL profiles (without escaping an
embedded ``'``), kitty sends ``file://`` URLs or nothing escaped at all, Zed writes non-ASCII as
``\\u{XXXX}``, and macOS screenshot names lose their U+202F on the way. The parser below tries
the plausible readings and lets the file system decide: only files that exist count, so text that
merely looks like a path stays text.

Everything here is pure apart from ``stat`` and a capped listing of a single parent directory;
the caller runs it off the event loop. :class:`BurstDetector` covers terminals that deliver a
paste as separate key events instead of a bracketed paste.
"""

from __future__ import annotations

import configparser
import os
import re
import stat
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

__all__ = [
    "BurstDetector",
    "BurstOutput",
    "BurstPaste",
    "PasteParse",
    "PastePlatform",
    "PastedPath",
    "TypedKeys",
    "detect_paste_platform",
    "parse_pasted_paths",
    "running_under_wsl",
    "windows_to_wsl",
]

# Bounds that keep a paste of a large file or log from costing more than a few stats.
MAX_PASTE_CHARS = 32_768
MAX_LINES = 256
MAX_TOKENS = 512
MAX_JOIN = 32  # unescaped tokens joined into one name, at most
SIBLING_SCAN_CAP = 4096  # entries read from one parent directory
MAX_DIRS_SCANNED = 8  # parent directories listed per parse

_SPACE_LIKE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_FILE_URL = re.compile(r"file:(?://([^/]*))?(/.*)?", re.IGNORECASE | re.DOTALL)
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_URL_DRIVE = re.compile(r"/[A-Za-z][:|][\\/]")
_WSL_UNC = re.compile(
    r"[\\/]{2}(?:wsl\$|wsl\.localhost)[\\/]([^\\/]+)(?:[\\/](.*))?", re.IGNORECASE
)
_WINDOWS_START = re.compile(r"[\"']?(?:[A-Za-z]:[\\/]|\\\\)")
_ZED_ESCAPE = re.compile(r"\\u\{([0-9A-Fa-f]{1,6})\}")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_BLANKS = " \t\n"


# --------------------------------------------------------------------------- platform


@dataclass(frozen=True, slots=True)
class PastePlatform:
    """What the parser needs to know about the machine, injectable so tests need no WSL box.

    ``wsl_mount_root`` is where WSL mounts Windows drives (``/mnt`` unless ``/etc/wsl.conf``
    moves it); ``windows`` means native Windows, where drive paths are used as they are.
    ``home`` overrides the directory ``~`` expands to.
    """

    wsl: bool = False
    wsl_mount_root: Path = Path("/mnt")
    windows: bool = False
    home: Path | None = None


def running_under_wsl(
    env: Mapping[str, str] = os.environ, proc_version: Path = Path("/proc/version")
) -> bool:
    """Whether this Linux is WSL: both WSL 1 and 2 name Microsoft in the kernel version."""
    if env.get("WSL_DISTRO_NAME") or env.get("WSL_INTEROP"):
        return True
    try:
        return "microsoft" in proc_version.read_text(errors="replace").lower()
    except OSError:
        return False


def _wsl_mount_root(wsl_conf: Path) -> Path:
    """The automount root from ``/etc/wsl.conf``; users who move it still get translated paths."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(wsl_conf.read_text(errors="replace"))
    except (OSError, configparser.Error):
        return Path("/mnt")
    root = parser.get("automount", "root", fallback="").strip().strip("\"'")
    return Path(root) if root.startswith("/") else Path("/mnt")


@lru_cache(maxsize=1)
def detect_paste_platform() -> PastePlatform:
    """Detect once per process: the answer cannot change while dcode runs."""
    if os.name == "nt":
        return PastePlatform(windows=True)
    if not running_under_wsl():
        return PastePlatform()
    return PastePlatform(wsl=True, wsl_mount_root=_wsl_mount_root(Path("/etc/wsl.conf")))


def windows_to_wsl(path: str, mount_root: Path = Path("/mnt")) -> Path | None:
    """``C:\\Users\\me\\x.png`` or ``C:/Users/...`` → ``/mnt/c/Users/me/x.png``.

    The mount root is a parameter so tests can point it at a temporary directory.
    """
    if _DRIVE.match(path) is None:
        return None
    parts = [part for part in re.split(r"[\\/]+", path[3:]) if part]
    return mount_root.joinpath(path[0].lower(), *parts)


def _wsl_unc_to_linux(path: str) -> Path | None:
    r"""``\\wsl$\Distro\home\me`` or ``\\wsl.localhost\Distro\...`` → ``/home/me``."""
    match = _WSL_UNC.fullmatch(path)
    if match is None:
        return None
    rest = [part for part in re.split(r"[\\/]+", match.group(2) or "") if part]
    return Path("/").joinpath(*rest)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class PastedPath:
    """One file found in a paste: where it is, and the text that named it.

    ``raw`` lets the caller put a non-media path back into the draft exactly as it was pasted.
    """

    path: Path
    raw: str


@dataclass(frozen=True, slots=True)
class PasteParse:
    """A paste that names existing files, in order, with any prompt text around them.

    At most one of ``leading_text`` and ``trailing_text`` is set: a paste is either all paths,
    paths followed by a prompt, or a prompt followed by paths.
    """

    items: tuple[PastedPath, ...]
    leading_text: str = ""
    trailing_text: str = ""

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(item.path for item in self.items)


# --------------------------------------------------------------------------- tokenizing


@dataclass(frozen=True, slots=True)
class _Token:
    """A whitespace-separated word after shell-style unquoting.

    ``plain`` means no quote or escape was removed, so the source text equals ``value`` and a
    run of plain neighbours can be re-joined with its original spacing (terminals that don't
    escape spaces at all). ``quoted`` and ``windows`` feed the "does this look like a path"
    test used when a paste mixes paths and prose.
    """

    value: str
    start: int
    end: int
    line: int
    plain: bool
    quoted: bool
    windows: bool


def _read_single_quoted(text: str, i: int, lenient: bool) -> tuple[str, int] | None:
    """Read after an opening ``'``; return the content and the index past the closing quote.

    Lenient mode is for Windows Terminal's WSL profiles, which do not escape an embedded
    ``'``: there a quote only closes when whitespace or the end follows it. Both modes accept
    the POSIX ``'\\''`` idiom for a literal quote.
    """
    buf: list[str] = []
    n = len(text)
    while i < n:
        if text.startswith("'\\''", i):
            buf.append("'")
            i += 4
            continue
        ch = text[i]
        if ch == "'" and (not lenient or i + 1 == n or text[i + 1] in _BLANKS):
            return "".join(buf), i + 1
        buf.append(ch)
        i += 1
    return None


def _read_double_quoted(text: str, i: int, windows: bool) -> tuple[str, int] | None:
    """Read after an opening ``"`` with POSIX rules, or with literal backslashes for Windows."""
    buf: list[str] = []
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return "".join(buf), i + 1
        if ch == "\\" and not windows and i + 1 < n:
            zed = _ZED_ESCAPE.match(text, i)
            if zed is not None:
                buf.append(_chr(zed.group(1)))
                i = zed.end()
                continue
            if text[i + 1] in '"\\$`':
                buf.append(text[i + 1])
                i += 2
                continue
            if text[i + 1] == "\n":
                i += 2
                continue
        buf.append(ch)
        i += 1
    return None


def _chr(hex_digits: str) -> str:
    code = int(hex_digits, 16)
    return chr(code) if code <= 0x10FFFF else "\ufffd"


def _tokenize(text: str, *, lenient: bool) -> list[_Token] | None:
    """Split into words the way a shell would, or None when a quote never closes.

    Lenient mode opens a quote only at the start of a word and treats a quote inside a word as
    a literal character (kitty and Alacritty send ``Bob's file.png`` unescaped); strict mode is
    POSIX. Windows-looking words keep their backslashes.
    """
    tokens: list[_Token] = []
    n = len(text)
    i = 0
    line = 0
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
            continue
        if ch in " \t":
            i += 1
            continue
        start = i
        start_line = line
        windows = _WINDOWS_START.match(text, i) is not None
        buf: list[str] = []
        plain = True
        quoted = False
        while i < n and text[i] not in _BLANKS:
            ch = text[i]
            opens_quote = ch in "'\"" and (not lenient or i == start)
            if opens_quote and ch == "'":
                read = _read_single_quoted(text, i + 1, lenient)
            elif opens_quote:
                read = _read_double_quoted(text, i + 1, windows)
            else:
                read = None
            if opens_quote:
                if read is None:
                    return None
                content, i = read
                buf.append(content)
                line += content.count("\n")
                plain = False
                quoted = True
                continue
            if ch == "\\" and not windows:
                plain = False
                zed = _ZED_ESCAPE.match(text, i)
                if zed is not None:
                    buf.append(_chr(zed.group(1)))
                    i = zed.end()
                    continue
                if i + 1 < n:
                    if text[i + 1] == "\n":
                        line += 1
                    else:
                        buf.append(text[i + 1])
                    i += 2
                    continue
            buf.append(ch)
            i += 1
        tokens.append(
            _Token(
                value="".join(buf),
                start=start,
                end=i,
                line=start_line,
                plain=plain,
                quoted=quoted,
                windows=windows,
            )
        )
        if len(tokens) > MAX_TOKENS:
            return None
    return tokens


# --------------------------------------------------------------------------- resolving


def _fold(name: str) -> str:
    """The name as a sibling lookup compares it: NFC, every Unicode space a plain space.

    macOS writes screenshot names with U+202F before AM/PM and many apps fold it to a space
    on copy; APFS may also hand back decomposed (NFD) names.
    """
    return _SPACE_LIKE.sub(" ", unicodedata.normalize("NFC", name))


def _is_file(path: Path) -> bool:
    """``stat`` that never raises: over-long names and NULs are simply not files."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


class _Resolver:
    """Turns decoded words into existing files, memoizing stats and directory listings."""

    def __init__(self, cwd: Path, platform: PastePlatform) -> None:
        self._cwd = cwd
        self._platform = platform
        self._resolved: dict[str, Path | None] = {}
        self._listings: dict[Path, dict[str, list[str]]] = {}

    def resolve(self, value: str) -> Path | None:
        if value in self._resolved:
            return self._resolved[value]
        hit: Path | None = None
        for candidate in self._candidates(value):
            hit = self._existing(candidate)
            if hit is not None:
                break
        self._resolved[value] = hit
        return hit

    def _candidates(self, value: str) -> list[Path]:
        """Every file a word could mean, most literal reading first."""
        if not value or "\x00" in value:
            return []
        scheme = _URL_SCHEME.match(value)
        if scheme is not None and scheme.group(1).lower() != "file":
            return []  # http:// and friends are links, never local files
        if value[:5].lower() == "file:":
            return self._from_file_url(value)
        if _DRIVE.match(value) is not None:
            return self._from_windows(value)
        if value.startswith(("\\\\", "//")):
            unc = _wsl_unc_to_linux(value)
            if unc is not None:
                return [unc]
            if value.startswith("\\\\"):
                return [Path(value)] if self._platform.windows else []
        candidates = [self._posix(value)]
        if _PERCENT.search(value) is not None:
            decoded = unquote(value)
            if decoded != value:
                candidates.append(self._posix(decoded))
        return candidates

    def _from_file_url(self, value: str) -> list[Path]:
        match = _FILE_URL.fullmatch(value)
        if match is None:
            return []
        host = (match.group(1) or "").lower()
        path = unquote(match.group(2) or "")
        if not path:
            return []
        if host in ("wsl$", "wsl.localhost"):
            unc = _wsl_unc_to_linux(f"//{host}{path}")
            return [] if unc is None else [unc]
        if host not in ("", "localhost"):
            return []  # a file on another machine is not reachable from here
        if _URL_DRIVE.match(path) is not None:
            return self._from_windows(f"{path[1]}:{path[3:]}")
        return [Path(path)]

    def _from_windows(self, value: str) -> list[Path]:
        if self._platform.windows:
            return [Path(value)]
        if self._platform.wsl:
            translated = windows_to_wsl(value, self._platform.wsl_mount_root)
            return [] if translated is None else [translated]
        return []

    def _posix(self, value: str) -> Path:
        if value == "~" or value.startswith("~/"):
            home = self._platform.home
            expanded = str(home) + value[1:] if home is not None else os.path.expanduser(value)
        elif value.startswith("~"):
            expanded = os.path.expanduser(value)
        else:
            expanded = value
        path = Path(expanded)
        return path if path.is_absolute() else self._cwd / path

    def _existing(self, path: Path) -> Path | None:
        """The file itself, or a sibling whose name differs only in Unicode spacing or form."""
        if _is_file(path):
            return path
        name = path.name
        if not name or all(ord(ch) < 128 and ch != " " for ch in name):
            return None
        names = self._listing(path.parent).get(_fold(name), [])
        for sibling in sorted(names):
            candidate = path.parent / sibling
            if _is_file(candidate):
                return candidate
        return None

    def _listing(self, directory: Path) -> dict[str, list[str]]:
        """Folded name → real names for one directory, capped so huge folders stay cheap."""
        cached = self._listings.get(directory)
        if cached is not None:
            return cached
        listing: dict[str, list[str]] = {}
        if len(self._listings) < MAX_DIRS_SCANNED:
            try:
                with os.scandir(directory) as entries:
                    for count, entry in enumerate(entries):
                        if count >= SIBLING_SCAN_CAP:
                            break
                        listing.setdefault(_fold(entry.name), []).append(entry.name)
            except (OSError, ValueError):
                pass
        self._listings[directory] = listing
        return listing


# --------------------------------------------------------------------------- parsing


_Span = tuple[Path, int, int]  # a file and the half-open token range that named it


def _joinable(tokens: list[_Token], i: int, j: int) -> bool:
    return tokens[j].plain and tokens[j].line == tokens[i].line


def _scan_forward(text: str, tokens: list[_Token], resolver: _Resolver) -> list[_Span]:
    """Files named from the first word on, stopping at the first word that names none.

    A word that is not a file on its own is joined with the following plain words, shortest
    join first, because kitty and Alacritty do not escape spaces.
    """
    spans: list[_Span] = []
    n = len(tokens)
    i = 0
    while i < n:
        hit = resolver.resolve(tokens[i].value)
        if hit is not None:
            spans.append((hit, i, i + 1))
            i += 1
            continue
        if not tokens[i].plain:
            break
        j = i + 1
        joined: _Span | None = None
        while joined is None and j < n and j - i < MAX_JOIN and _joinable(tokens, i, j):
            j += 1
            found = resolver.resolve(text[tokens[i].start : tokens[j - 1].end])
            if found is not None:
                joined = (found, i, j)
        if joined is None:
            break
        spans.append(joined)
        i = joined[2]
    return spans


def _scan_backward(text: str, tokens: list[_Token], resolver: _Resolver) -> list[_Span]:
    """The mirror of :func:`_scan_forward`, for a prompt followed by dropped paths."""
    spans: list[_Span] = []
    j = len(tokens)
    while j > 0:
        hit = resolver.resolve(tokens[j - 1].value)
        if hit is not None:
            spans.append((hit, j - 1, j))
            j -= 1
            continue
        if not tokens[j - 1].plain:
            break
        i = j - 1
        joined: _Span | None = None
        while joined is None and i > 0 and j - i < MAX_JOIN and _joinable(tokens, j - 1, i - 1):
            i -= 1
            found = resolver.resolve(text[tokens[i].start : tokens[j - 1].end])
            if found is not None:
                joined = (found, i, j)
        if joined is None:
            break
        spans.append(joined)
        j = joined[1]
    spans.reverse()
    return spans


def _path_like(token: _Token) -> bool:
    """Whether a word is plainly meant as a path, not a bare word that happens to be a file.

    Used where a paste mixes paths and prose, so "README.md is wrong" stays text.
    """
    value = token.value
    return (
        token.quoted
        or token.windows
        or value.startswith(("/", "~", "./", "../"))
        or value[:5].lower() == "file:"
        or "/" in value
        or _DRIVE.match(value) is not None
    )


def _strongly_path_like(token: _Token) -> bool:
    """A word that can only be a path; if it does not exist, a drop lost a file."""
    value = token.value
    return (
        token.quoted
        or token.windows
        or value.startswith(("/", "~/"))
        or value[:7].lower() == "file://"
    )


def _items(text: str, tokens: list[_Token], spans: list[_Span]) -> tuple[PastedPath, ...]:
    return tuple(
        PastedPath(path=path, raw=text[tokens[i].start : tokens[j - 1].end]) for path, i, j in spans
    )


def _whole_text_candidates(text: str) -> list[str]:
    """The paste as one name: with or without one pair of surrounding quotes, unescaped."""
    if "\n" in text:
        return []
    out = [text]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        out.append(text[1:-1])
    return out


def parse_pasted_paths(
    text: str, *, cwd: Path, platform_hint: PastePlatform | None = None
) -> PasteParse | None:
    """Read a paste as dropped files, or return None to leave it as text.

    Tried in order, and the first that fits wins:

    1. every word names an existing file (shell quoting, escapes, ``file://`` URLs, Windows and
       WSL forms, several lines);
    2. the whole paste is one name (a single unescaped path with spaces or odd quotes);
    3. leading files followed by prompt text ("/tmp/x.png what is wrong here?");
    4. prompt text followed by trailing files.

    In 3 and 4 the file next to the prose must look like a path (a bare ``README.md`` does
    not), and a word right next to the files that can only be a path but does not exist makes
    the whole paste text, since it means part of a drop went missing. Only regular files
    count. ``platform_hint`` overrides the detected WSL/Windows facts.
    """
    normalized = text.replace("\r\n", "\n").replace("\r", "\n").strip(_BLANKS)
    if not normalized or len(normalized) > MAX_PASTE_CHARS:
        return None
    if normalized.count("\n") >= MAX_LINES:
        return None
    platform = platform_hint if platform_hint is not None else detect_paste_platform()
    resolver = _Resolver(cwd, platform)

    readings: list[list[_Token]] = []
    for lenient in (True, False):
        tokens = _tokenize(normalized, lenient=lenient)
        if tokens and tokens not in readings:
            readings.append(tokens)

    forward: list[tuple[list[_Token], list[_Span]]] = []
    for tokens in readings:
        spans = _scan_forward(normalized, tokens, resolver)
        if spans and spans[-1][2] == len(tokens):
            return PasteParse(items=_items(normalized, tokens, spans))
        forward.append((tokens, spans))

    for candidate in _whole_text_candidates(normalized):
        hit = resolver.resolve(candidate)
        if hit is not None:
            return PasteParse(items=(PastedPath(path=hit, raw=normalized),))

    for tokens, spans in forward:
        if not spans or not _path_like(tokens[0]):
            continue
        stop = spans[-1][2]
        if _strongly_path_like(tokens[stop]):
            return None
        return PasteParse(
            items=_items(normalized, tokens, spans),
            trailing_text=normalized[tokens[stop].start :].strip(_BLANKS),
        )

    for tokens in readings:
        spans = _scan_backward(normalized, tokens, resolver)
        if not spans or not _path_like(tokens[spans[0][1]]):
            continue
        stop = spans[0][1] - 1
        if _strongly_path_like(tokens[stop]):
            return None
        return PasteParse(
            items=_items(normalized, tokens, spans),
            leading_text=normalized[: tokens[stop].end].strip(_BLANKS),
        )
    return None


# --------------------------------------------------------------------------- bursts


@dataclass(frozen=True, slots=True)
class BurstPaste:
    """Keys that arrived too fast to be typed: treat as a paste, so a newline never submits."""

    text: str


@dataclass(frozen=True, slots=True)
class TypedKeys:
    """Keys a person typed, to be handled one by one as usual (Enter submits)."""

    text: str


BurstOutput = BurstPaste | TypedKeys


class BurstDetector:
    """Recognise a paste in terminals that send it as individual key events.

    VS Code's terminal, PowerShell hosts and some SSH setups do not bracket a paste, so a
    dropped path arrives as keystrokes and an embedded newline would submit a half prompt.
    Keys are held while they might still be the start of a burst:

    - keys less than ``max_gap`` apart that reach ``min_chars`` characters become a burst;
    - once a burst has begun, gaps shorter than ``quiet`` continue it (terminals deliver
      large pastes in chunks), and ``quiet`` seconds of silence end it;
    - held keys that never became a burst are released as :class:`TypedKeys` as soon as a
      gap of ``max_gap`` shows they cannot, so typing is delayed by at most ``max_gap``.

    Time is passed in, never read, so the machine is deterministic. The caller feeds each key
    and calls :meth:`poll` when :meth:`deadline` is reached.
    """

    def __init__(self, *, max_gap: float = 0.030, min_chars: int = 3, quiet: float = 0.080) -> None:
        if max_gap <= 0 or quiet < max_gap or min_chars < 2:
            raise ValueError("need 0 < max_gap <= quiet and min_chars >= 2")
        self._max_gap = max_gap
        self._min_chars = min_chars
        self._quiet = quiet
        self._buffer: list[str] = []
        self._size = 0
        self._last = 0.0
        self._burst = False

    @property
    def pending(self) -> bool:
        return bool(self._buffer)

    @property
    def in_burst(self) -> bool:
        return self._burst

    def deadline(self) -> float | None:
        """When :meth:`poll` should next be called, or None when nothing is held."""
        if not self._buffer:
            return None
        return self._last + (self._quiet if self._burst else self._max_gap)

    def feed(self, char: str, now: float) -> BurstOutput | None:
        """Take one key's text; return whatever the key's arrival completed."""
        if not char:
            return None
        if not self._buffer:
            self._start(char, now)
            return None
        gap = now - self._last
        limit = self._quiet if self._burst else self._max_gap
        if gap < limit:
            self._buffer.append(char)
            self._size += len(char)
            self._last = now
            if self._size >= self._min_chars:
                self._burst = True
            return None
        done = self._release()
        self._start(char, now)
        return done

    def poll(self, now: float) -> BurstOutput | None:
        """Release what is held once its quiet period has passed."""
        deadline = self.deadline()
        if deadline is None or now < deadline:
            return None
        return self._release()

    def flush(self) -> BurstOutput | None:
        """Release whatever is held now, e.g. when the input loses focus."""
        return self._release() if self._buffer else None

    def _start(self, char: str, now: float) -> None:
        self._buffer = [char]
        self._size = len(char)
        self._last = now
        self._burst = False

    def _release(self) -> BurstOutput:
        text = "".join(self._buffer)
        burst = self._burst
        self._buffer = []
        self._size = 0
        self._burst = False
        if burst:
            return BurstPaste(text.replace("\r\n", "\n").replace("\r", "\n"))
        return TypedKeys(text)
