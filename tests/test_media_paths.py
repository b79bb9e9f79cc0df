"""Pasted and dropped paths, against real files, in the forms terminals actually send."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from dcode.media.paths import (
    BurstDetector,
    BurstPaste,
    PasteParse,
    PastePlatform,
    TypedKeys,
    parse_pasted_paths,
    running_under_wsl,
    windows_to_wsl,
)

SCREENSHOT_NNBSP = "Screenshot 2024-01-01 at 10.00.00\u202fAM.png"
SCREENSHOT_SPACE = "Screenshot 2024-01-02 at 9.00.00 PM.png"

FILES = (
    "plain.png",
    "with space.png",
    "two  spaces.png",
    "Bob's pic.png",
    "café.png",
    "日本.png",
    "a%20literal.png",
    SCREENSHOT_NNBSP,
    SCREENSHOT_SPACE,
    "sub/deep.txt",
    "mnt/c/Users/me/shot.png",
    "mnt/c/Users/me/My Pics/x.png",
    "mnt/c/Users/O'Brien/y.png",
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name in FILES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    return tmp_path


def _platform(root: Path, *, wsl: bool = False) -> PastePlatform:
    return PastePlatform(wsl=wsl, wsl_mount_root=root / "mnt", home=root)


def _backslashed(path: Path) -> str:
    return str(path).replace("/", "\\")


Case = tuple[str, Callable[[Path], str], tuple[str, ...], str, str]

# (id, pasted text given the root, expected files, expected leading text, expected trailing text)
PATH_CASES: list[Case] = [
    ("absolute", lambda r: f"{r}/plain.png", ("plain.png",), "", ""),
    ("escaped-space", lambda r: f"{r}/with\\ space.png", ("with space.png",), "", ""),
    ("single-quoted", lambda r: f"'{r}/with space.png'", ("with space.png",), "", ""),
    ("double-quoted", lambda r: f'"{r}/with space.png"', ("with space.png",), "", ""),
    ("unescaped-space", lambda r: f"{r}/with space.png", ("with space.png",), "", ""),
    ("unescaped-double-space", lambda r: f"{r}/two  spaces.png", ("two  spaces.png",), "", ""),
    ("file-url", lambda r: f"file://{r}/with%20space.png", ("with space.png",), "", ""),
    (
        "file-localhost",
        lambda r: f"file://localhost{r}/with%20space.png",
        ("with space.png",),
        "",
        "",
    ),
    ("percent-plain", lambda r: f"{r}/with%20space.png", ("with space.png",), "", ""),
    ("percent-literal-name", lambda r: f"{r}/a%20literal.png", ("a%20literal.png",), "", ""),
    (
        "several-escaped",
        lambda r: f"{r}/plain.png {r}/with\\ space.png",
        ("plain.png", "with space.png"),
        "",
        "",
    ),
    (
        "several-lines",
        lambda r: f"{r}/plain.png\n{r}/with space.png\n",
        ("plain.png", "with space.png"),
        "",
        "",
    ),
    (
        "several-crlf",
        lambda r: f"'{r}/plain.png'\r\n'{r}/café.png'\r\n",
        ("plain.png", "café.png"),
        "",
        "",
    ),
    (
        "several-unescaped-kitty",
        lambda r: f"{r}/with space.png {r}/plain.png {r}/Bob's pic.png",
        ("with space.png", "plain.png", "Bob's pic.png"),
        "",
        "",
    ),
    (
        "several-file-urls",
        lambda r: f"file://{r}/plain.png file://{r}/caf%C3%A9.png",
        ("plain.png", "café.png"),
        "",
        "",
    ),
    ("escaped-quote", lambda r: f"{r}/Bob\\'s\\ pic.png", ("Bob's pic.png",), "", ""),
    ("wsl-unescaped-quote", lambda r: f"'{r}/Bob's pic.png'", ("Bob's pic.png",), "", ""),
    ("posix-quote-idiom", lambda r: f"'{r}/Bob'\\''s pic.png'", ("Bob's pic.png",), "", ""),
    ("unicode", lambda r: f"{r}/café.png", ("café.png",), "", ""),
    (
        "nfd-form",
        lambda r: unicodedata.normalize("NFD", f"{r}/café.png"),
        ("café.png",),
        "",
        "",
    ),
    ("zed-escape", lambda r: f"{r}/caf\\u{{e9}}.png", ("café.png",), "", ""),
    ("zed-escape-cjk", lambda r: f"{r}/\\u{{65e5}}\\u{{672c}}.png", ("日本.png",), "", ""),
    (
        "nnbsp-folded-unescaped",
        lambda r: f"{r}/Screenshot 2024-01-01 at 10.00.00 AM.png",
        (SCREENSHOT_NNBSP,),
        "",
        "",
    ),
    (
        "nnbsp-folded-escaped",
        lambda r: f"{r}/Screenshot\\ 2024-01-01\\ at\\ 10.00.00\\ AM.png",
        (SCREENSHOT_NNBSP,),
        "",
        "",
    ),
    (
        "nnbsp-folded-quoted",
        lambda r: f"'{r}/Screenshot 2024-01-01 at 10.00.00 AM.png'",
        (SCREENSHOT_NNBSP,),
        "",
        "",
    ),
    (
        "nnbsp-added",
        lambda r: f"'{r}/Screenshot 2024-01-02 at 9.00.00\u202fPM.png'",
        (SCREENSHOT_SPACE,),
        "",
        "",
    ),
    (
        "nbsp-instead",
        lambda r: f"{r}/with\u00a0space.png",
        ("with space.png",),
        "",
        "",
    ),
    ("relative", lambda r: "plain.png", ("plain.png",), "", ""),
    ("relative-subdir", lambda r: "sub/deep.txt", ("sub/deep.txt",), "", ""),
    ("dot-relative", lambda r: "./sub/deep.txt", ("sub/deep.txt",), "", ""),
    ("relative-several", lambda r: "plain.png sub/deep.txt", ("plain.png", "sub/deep.txt"), "", ""),
    ("tilde", lambda r: "~/plain.png", ("plain.png",), "", ""),
    ("tilde-quoted-space", lambda r: "~/with\\ space.png", ("with space.png",), "", ""),
    (
        "path-then-prompt",
        lambda r: f"{r}/plain.png what is wrong here?",
        ("plain.png",),
        "",
        "what is wrong here?",
    ),
    (
        "escaped-path-then-prompt-line",
        lambda r: f"{r}/with\\ space.png\nexplain this screenshot",
        ("with space.png",),
        "",
        "explain this screenshot",
    ),
    (
        "unescaped-path-then-prompt",
        lambda r: f"{r}/with space.png why is it red",
        ("with space.png",),
        "",
        "why is it red",
    ),
    (
        "two-paths-then-prompt",
        lambda r: f"'{r}/plain.png' '{r}/café.png' compare these",
        ("plain.png", "café.png"),
        "",
        "compare these",
    ),
    (
        "prompt-then-path",
        lambda r: f"what is this? {r}/plain.png",
        ("plain.png",),
        "what is this?",
        "",
    ),
    (
        "relative-path-then-prompt",
        lambda r: "sub/deep.txt has a typo",
        ("sub/deep.txt",),
        "",
        "has a typo",
    ),
    (
        "wsl-unc-localhost",
        lambda r: f"\\\\wsl.localhost\\Ubuntu{_backslashed(r)}\\plain.png",
        ("plain.png",),
        "",
        "",
    ),
    (
        "wsl-unc-dollar-quoted",
        lambda r: f'"\\\\wsl$\\Debian{_backslashed(r)}\\with space.png"',
        ("with space.png",),
        "",
        "",
    ),
    (
        "wsl-file-url",
        lambda r: f"file://wsl.localhost/Ubuntu{r}/with%20space.png",
        ("with space.png",),
        "",
        "",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected", "leading", "trailing"),
    [case[1:] for case in PATH_CASES],
    ids=[case[0] for case in PATH_CASES],
)
def test_path_forms(
    root: Path,
    text: Callable[[Path], str],
    expected: tuple[str, ...],
    leading: str,
    trailing: str,
) -> None:
    result = parse_pasted_paths(text(root), cwd=root, platform_hint=_platform(root))
    assert result is not None
    assert result.paths == tuple(root / name for name in expected)
    assert result.leading_text == leading
    assert result.trailing_text == trailing


WSL_CASES: list[tuple[str, Callable[[Path], str], tuple[str, ...]]] = [
    ("drive-backslash", lambda r: "C:\\Users\\me\\shot.png", ("mnt/c/Users/me/shot.png",)),
    ("drive-lowercase", lambda r: "c:\\Users\\me\\shot.png", ("mnt/c/Users/me/shot.png",)),
    ("drive-forward", lambda r: "C:/Users/me/shot.png", ("mnt/c/Users/me/shot.png",)),
    ("drive-dotdot", lambda r: "C:\\Users\\me\\..\\me\\shot.png", ("mnt/c/Users/me/shot.png",)),
    (
        "windows-terminal-quoted",
        lambda r: '"C:\\Users\\me\\My Pics\\x.png"',
        ("mnt/c/Users/me/My Pics/x.png",),
    ),
    (
        "windows-unquoted-space",
        lambda r: "C:\\Users\\me\\My Pics\\x.png",
        ("mnt/c/Users/me/My Pics/x.png",),
    ),
    (
        "windows-two-quoted",
        lambda r: '"C:\\Users\\me\\shot.png" "C:\\Users\\me\\My Pics\\x.png"',
        ("mnt/c/Users/me/shot.png", "mnt/c/Users/me/My Pics/x.png"),
    ),
    (
        "wsl-profile-single-quote",
        lambda r: f"'{r}/mnt/c/Users/O'Brien/y.png'",
        ("mnt/c/Users/O'Brien/y.png",),
    ),
    ("file-url-drive", lambda r: "file:///C:/Users/me/shot.png", ("mnt/c/Users/me/shot.png",)),
    (
        "file-url-drive-encoded",
        lambda r: "file:///C:/Users/me/My%20Pics/x.png",
        ("mnt/c/Users/me/My Pics/x.png",),
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [case[1:] for case in WSL_CASES],
    ids=[case[0] for case in WSL_CASES],
)
def test_wsl_forms(root: Path, text: Callable[[Path], str], expected: tuple[str, ...]) -> None:
    result = parse_pasted_paths(text(root), cwd=root, platform_hint=_platform(root, wsl=True))
    assert result is not None
    # ``..`` is kept (no symlink-unsafe collapsing), so compare the files, not the spelling.
    assert [p.resolve() for p in result.paths] == [(root / name).resolve() for name in expected]


TEXT_CASES: list[tuple[str, Callable[[Path], str]]] = [
    ("missing-file", lambda r: f"{r}/missing.png"),
    ("missing-quoted", lambda r: f"'{r}/missing file.png'"),
    ("plain-prose", lambda r: "please fix the failing test in the parser"),
    ("prose-with-slash", lambda r: "use and/or here, see sub/nothing.txt"),
    ("http-url", lambda r: "http://example.com/plain.png"),
    ("https-url-to-existing-name", lambda r: f"https://example.com{r}/plain.png"),
    ("one-missing-of-two", lambda r: f"{r}/plain.png {r}/missing.png"),
    ("missing-then-existing", lambda r: f"{r}/missing.png {r}/plain.png"),
    ("bare-name-then-prose", lambda r: "plain.png is broken"),
    ("prose-then-bare-name", lambda r: "look at plain.png"),
    ("directory", lambda r: f"{r}/sub"),
    ("empty", lambda r: ""),
    ("whitespace", lambda r: "  \n\t "),
    ("windows-without-wsl", lambda r: "C:\\Users\\me\\shot.png"),
    ("unc-elsewhere", lambda r: "\\\\server\\share\\plain.png"),
    ("remote-file-url", lambda r: f"file://otherhost{r}/plain.png"),
    ("code", lambda r: "def f(x):\n    return x / 2\n"),
    ("unclosed-quote", lambda r: f"'{r}/nothing"),
    ("huge", lambda r: f"{r}/plain.png " + "word " * 10_000),
]


@pytest.mark.parametrize(
    "text", [case[1] for case in TEXT_CASES], ids=[case[0] for case in TEXT_CASES]
)
def test_text_stays_text(root: Path, text: Callable[[Path], str]) -> None:
    assert parse_pasted_paths(text(root), cwd=root, platform_hint=_platform(root)) is None


def test_raw_text_is_kept_for_each_path(root: Path) -> None:
    text = f"{root}/with\\ space.png '{root}/plain.png'"
    result = parse_pasted_paths(text, cwd=root, platform_hint=_platform(root))
    assert result is not None
    assert [item.raw for item in result.items] == [
        f"{root}/with\\ space.png",
        f"'{root}/plain.png'",
    ]


def test_result_is_frozen(root: Path) -> None:
    result = parse_pasted_paths(f"{root}/plain.png", cwd=root, platform_hint=_platform(root))
    assert isinstance(result, PasteParse)
    with pytest.raises(AttributeError):
        result.trailing_text = "x"  # type: ignore[misc]


def test_sibling_lookup_is_capped(root: Path) -> None:
    """A huge folder is listed only up to the cap, so a lookalike name costs bounded time."""
    big = root / "big"
    big.mkdir()
    for i in range(5000):
        (big / f"f{i}").touch()
    start = time.perf_counter()
    assert parse_pasted_paths(f"{big}/no such\u202ffile.png", cwd=root) is None
    assert time.perf_counter() - start < 1.0


def test_prose_is_fast(root: Path) -> None:
    prose = " ".join(f"word{i}/x the and/or {root}/nope{i}" for i in range(120))
    start = time.perf_counter()
    assert parse_pasted_paths(prose, cwd=root, platform_hint=_platform(root)) is None
    assert time.perf_counter() - start < 1.0


def test_windows_to_wsl_takes_a_mount_root(tmp_path: Path) -> None:
    assert windows_to_wsl("D:\\data\\a b.png", tmp_path) == tmp_path / "d" / "data" / "a b.png"
    assert windows_to_wsl("C:/x.png") == Path("/mnt/c/x.png")
    assert windows_to_wsl("/home/me/x.png") is None


def test_running_under_wsl(tmp_path: Path) -> None:
    version = tmp_path / "version"
    version.write_text("Linux version 5.15.153.1-microsoft-standard-WSL2 (gcc ...)")
    assert running_under_wsl({}, version)
    version.write_text("Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)")
    assert not running_under_wsl({}, version)
    assert running_under_wsl({"WSL_DISTRO_NAME": "Ubuntu"}, version)
    assert not running_under_wsl({}, tmp_path / "absent")


# --------------------------------------------------------------------------- bursts


def _feed(detector: BurstDetector, keys: str, start: float, step: float) -> list[object]:
    outputs: list[object] = []
    for index, key in enumerate(keys):
        out = detector.feed(key, start + index * step)
        if out is not None:
            outputs.append(out)
    return outputs


def test_fast_burst_is_a_paste_and_newline_does_not_submit() -> None:
    detector = BurstDetector()
    assert _feed(detector, "/tmp/a.png\rwhy", 0.0, 0.002) == []
    last = 13 * 0.002
    assert detector.in_burst
    assert detector.poll(last + 0.05) is None  # still inside the quiet window
    assert detector.deadline() == pytest.approx(last + 0.080)
    assert detector.poll(last + 0.081) == BurstPaste("/tmp/a.png\nwhy")
    assert not detector.pending
    assert detector.deadline() is None


def test_slow_typing_is_typed() -> None:
    detector = BurstDetector()
    outputs = _feed(detector, "hello\r", 0.0, 0.120)
    assert outputs == [TypedKeys(ch) for ch in "hello"]
    assert detector.poll(5 * 0.120 + 0.031) == TypedKeys("\r")


def test_too_few_fast_keys_are_typed() -> None:
    detector = BurstDetector()
    assert _feed(detector, "ab", 0.0, 0.010) == []
    assert detector.poll(0.020) is None
    assert detector.poll(0.041) == TypedKeys("ab")


def test_burst_tolerates_chunk_gaps_until_quiet() -> None:
    detector = BurstDetector()
    _feed(detector, "abc", 0.0, 0.005)
    assert detector.feed("d", 0.010 + 0.060) is None  # 60 ms gap: still the same paste
    out = detector.feed("e", 0.070 + 0.200)  # a later key starts over
    assert out == BurstPaste("abcd")
    assert detector.flush() == TypedKeys("e")


def test_typing_then_burst_releases_the_typed_part_first() -> None:
    detector = BurstDetector()
    assert detector.feed("x", 0.0) is None
    assert detector.feed("a", 0.5) == TypedKeys("x")
    _feed(detector, "bcd", 0.505, 0.005)
    assert detector.poll(1.0) == BurstPaste("abcd")


def test_thresholds_are_parameters() -> None:
    detector = BurstDetector(max_gap=0.1, min_chars=5, quiet=0.3)
    assert _feed(detector, "abcd", 0.0, 0.05) == []
    assert detector.poll(0.15 + 0.11) == TypedKeys("abcd")
    _feed(detector, "abcde", 1.0, 0.05)
    assert detector.in_burst
    assert detector.poll(1.2 + 0.29) is None
    assert detector.poll(1.2 + 0.31) == BurstPaste("abcde")


def test_bad_thresholds_are_rejected() -> None:
    with pytest.raises(ValueError, match="max_gap <= quiet"):
        BurstDetector(max_gap=0.1, quiet=0.05)
    with pytest.raises(ValueError, match="min_chars >= 2"):
        BurstDetector(min_chars=1)
