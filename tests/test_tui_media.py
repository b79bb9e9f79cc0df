"""The media tracker in the prompt, through Textual's pilot, with real images and real files.

A tiny host app mounts ``PromptInput`` with a ``MediaSource`` installed; toasts are captured
through the injected ``notify``. Images come from Pillow's test corpus (``tests/support/corpus.py``)
where available and are otherwise made with Pillow in ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from PIL import Image
from textual import events
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from dcode.media.clipboard import read_clipboard_image
from dcode.media.store import AttachmentStore
from dcode.tui.widgets import PromptInput
from dcode.tui.widgets.burst import BurstKeys
from dcode.tui.widgets.media_content import MediaRefused, build_content
from dcode.tui.widgets.media_source import (
    MEDIA_KIND,
    PENDING_MESSAGE,
    SLOW_ATTACH_S,
    MediaItem,
    MediaSource,
)
from tests.support.corpus import PILLOW, corpus_file, requires_corpus

# A few bytes that sniff as an MP4 container: videos are never decoded on this path.
MP4_HEAD = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00" * 64


def corpus(name: str, into: Path, as_name: str | None = None) -> Path:
    source = corpus_file(PILLOW / name)
    target = into / (as_name or name)
    shutil.copyfile(source, target)
    return target


def make_png(path: Path, colour: tuple[int, int, int] = (200, 40, 40), size=(64, 48)) -> Path:
    Image.new("RGB", size, colour).save(path, format="PNG")
    return path


def png_bytes(colour: tuple[int, int, int] = (10, 120, 200)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(out, format="PNG")
    return out.getvalue()


class Clock:
    """Fake time for the burst detector: each key advances it by ``step``."""

    def __init__(self, step: float) -> None:
        self.now = 1000.0
        self.step = step

    def key(self, _event: events.Key) -> float:
        self.now += self.step
        return self.now

    def __call__(self) -> float:
        return self.now


class MediaHost(App[None]):
    def __init__(
        self,
        tmp: Path,
        *,
        store: AttachmentStore | None = None,
        burst_clock: Clock | None = None,
        **source_options: Any,
    ) -> None:
        super().__init__()
        self.workspace = tmp / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.home = tmp / "home"
        self.store = store or AttachmentStore(tmp / "attachments")
        self.toasts: list[tuple[str, str]] = []
        self.sent: list[PromptInput.Submitted] = []
        self.source = MediaSource(self.store, self.workspace, notify=self.record, **source_options)
        self.burst_clock = burst_clock

    def compose(self) -> ComposeResult:
        yield PromptInput(self.home / "history.jsonl", self.workspace, id="prompt")

    def on_mount(self) -> None:
        self.source.install(self.prompt, burst=False)
        if self.burst_clock is not None:
            clock = self.burst_clock
            self.prompt.area.key_filter = BurstKeys(
                self.prompt, key_time=clock.key, now=clock, enabled=True
            )
        self.prompt.focus()

    def record(self, message: str, severity: str = "information") -> None:
        self.toasts.append((severity, message))

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.sent.append(message)


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def paste(pilot: Pilot[None], text: str) -> None:
    app = pilot.app
    assert isinstance(app, MediaHost)
    app.prompt.area.post_message(events.Paste(text))
    await settle(pilot)


async def send(pilot: Pilot[None]) -> None:
    await pilot.press("enter")
    await settle(pilot)


def bound(app: MediaHost) -> list[MediaItem]:
    tokens = app.prompt.placeholders.of_kind(MEDIA_KIND)
    return [t.payload for t in tokens if isinstance(t.payload, MediaItem)]


def image_ids(content: str | list[dict[str, Any]]) -> list[str]:
    if isinstance(content, str):
        return []
    return [block["attachment_id"] for block in content if block.get("type") == "image"]


def gated_host(tmp: Path) -> tuple[MediaHost, asyncio.Event]:
    """A host whose attachments are held until the event is set (an image still attaching)."""
    gate = asyncio.Event()

    async def gated(fn: Callable[..., Any], *args: Any) -> Any:
        await gate.wait()
        return await asyncio.to_thread(fn, *args)

    return MediaHost(tmp, run_in_thread=gated), gate


@pytest.fixture
def host(tmp_path: Path) -> MediaHost:
    return MediaHost(tmp_path)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = tmp_path / "shots"
    folder.mkdir()
    return folder


# --- pasted and dropped paths


@pytest.mark.parametrize("form", ["double-quoted", "single-quoted", "escaped", "file-url"])
async def test_a_dropped_path_becomes_an_image_token(
    host: MediaHost, shots: Path, form: str
) -> None:
    path = make_png(shots / "my shot.png")
    pasted = {
        "double-quoted": f'"{path}"',
        "single-quoted": f"'{path}'",
        "escaped": str(path).replace(" ", "\\ "),
        "file-url": "file://" + quote(str(path)),
    }[form]
    async with host.run_test() as pilot:
        await paste(pilot, pasted)
        assert host.prompt.text == "[image 1] "
        [item] = bound(host)
        assert item.attachment is not None and item.path == path
        assert host.store.contains(item.attachment)
        assert host.toasts == []


@requires_corpus(PILLOW)
async def test_two_corpus_images_at_once_then_prompt_text(host: MediaHost, shots: Path) -> None:
    png = corpus("hopper.png", shots)
    jpg = corpus("hopper.jpg", shots)
    async with host.run_test() as pilot:
        await paste(pilot, f"{png}\n{jpg}")
        assert host.prompt.text == "[image 1] [image 2] "
        host.prompt.insert_text("what differs?")
        await send(pilot)
        [message] = host.sent
        assert message.text == "[image 1] [image 2] what differs?"
        content, prompt_text = build_content(message)
        assert prompt_text == message.text
        assert isinstance(content, list) and len(content) == 3
        assert content[0] == {"type": "text", "text": message.text}
        assert image_ids(content) == [item.attachment.id for item in bound_items(message)]  # type: ignore[union-attr]
        for block in content[1:]:
            assert block["source_type"] == "dcode_attachment"
            assert len(json.dumps(block)) < 2048


async def test_a_path_followed_by_a_prompt(host: MediaHost, shots: Path) -> None:
    path = make_png(shots / "shot.png")
    async with host.run_test() as pilot:
        await paste(pilot, f"{path} what is wrong here?")
        assert host.prompt.text == "[image 1] what is wrong here?"
        await send(pilot)
        content, text = build_content(host.sent[0])
        assert text == "[image 1] what is wrong here?"
        assert len(image_ids(content)) == 1


async def test_a_path_that_is_not_media_stays_text(host: MediaHost, shots: Path) -> None:
    notes = shots / "notes.txt"
    notes.write_text("hello")
    async with host.run_test() as pilot:
        await paste(pilot, str(notes))
        assert host.prompt.text == str(notes)
        assert host.prompt.placeholders.of_kind(MEDIA_KIND) == []
        # A long paste that merely looks like paths still collapses as usual, where it was put.
        host.prompt.insert_text("before ")
        long = "\n".join(f"see /usr/lib/x{n}.png" for n in range(40))
        await paste(pilot, long)
        assert host.prompt.text == f"{notes}before [Pasted text #1 +40 lines]"
        assert host.toasts == []


async def test_a_corrupt_image_is_a_toast_and_the_draft_is_untouched(
    host: MediaHost, shots: Path
) -> None:
    good = make_png(shots / "good.png")
    truncated = shots / "cut.png"
    truncated.write_bytes(good.read_bytes()[:60])
    async with host.run_test() as pilot:
        await paste(pilot, str(good))
        host.prompt.insert_text("look at this ")
        before = host.prompt.text
        await paste(pilot, str(truncated))
        assert host.prompt.text == before
        [(severity, message)] = host.toasts
        assert severity == "error" and "cut.png" in message
        assert [item.label for item in bound(host)] == ["[image 1]"]


@requires_corpus(PILLOW)
async def test_corpus_broken_png_is_refused_with_its_reason(host: MediaHost, shots: Path) -> None:
    broken = corpus("broken.png", shots)
    async with host.run_test() as pilot:
        host.prompt.insert_text("keep me")
        await paste(pilot, str(broken))
        assert host.prompt.text == "keep me"
        [(severity, message)] = host.toasts
        assert severity == "error"
        assert message.startswith("Image not attached: broken.png: ")


async def test_one_bad_file_does_not_cost_the_good_ones(host: MediaHost, shots: Path) -> None:
    good = make_png(shots / "good.png")
    empty = shots / "empty.png"
    empty.write_bytes(b"")
    async with host.run_test() as pilot:
        await paste(pilot, f"{empty} {good}")
        assert host.prompt.text == "[image 1] "
        assert "empty.png" in host.toasts[0][1]


# --- editing


async def test_backspace_removes_an_image_whole_and_it_is_not_sent(
    host: MediaHost, shots: Path
) -> None:
    first = make_png(shots / "a.png", (255, 0, 0))
    second = make_png(shots / "b.png", (0, 255, 0))
    async with host.run_test() as pilot:
        await paste(pilot, f"{first} {second}")
        await pilot.press("left", "backspace")  # "[image 2]" goes whole
        assert host.prompt.text == "[image 1]  "
        await paste(pilot, str(second))
        assert "[image 3]" in host.prompt.text  # numbers are not reused in a draft
        await pilot.press("backspace", "backspace")
        host.prompt.insert_text("only one")
        await send(pilot)
        content, _ = build_content(host.sent[0])
        [only] = image_ids(content)
        assert only == bound_item(host.sent[0], "[image 1]").attachment.id  # type: ignore[union-attr]


def bound_item(message: PromptInput.Submitted, label: str) -> MediaItem:
    return next(t.payload for t in message.placeholders if t.label == label)


async def test_a_typed_lookalike_is_text(host: MediaHost) -> None:
    async with host.run_test() as pilot:
        host.prompt.insert_text("what is in [image 3]")
        await pilot.press("?")
        await send(pilot)
        content, text = build_content(host.sent[0])
        assert content == "what is in [image 3]?" == text


async def test_typing_while_an_image_is_attached_keeps_the_order(
    tmp_path: Path, shots: Path
) -> None:
    app, gate = gated_host(tmp_path)
    path = make_png(shots / "shot.png")
    async with app.run_test() as pilot:
        app.prompt.insert_text("see")
        app.prompt.area.post_message(events.Paste(str(path)))
        await pilot.pause()
        await pilot.press("space", "n", "o", "w")
        app.prompt.area.move_cursor(app.prompt.area.document.end)
        assert app.prompt.text == "see now"
        gate.set()
        await settle(pilot)
        assert app.prompt.text == "see [image 1] now"  # no doubled space
        assert app.prompt.area.cursor_offset == len(app.prompt.text)


async def test_enter_while_an_image_attaches_sends_once_it_is_attached(
    tmp_path: Path, shots: Path
) -> None:
    app, gate = gated_host(tmp_path)
    path = make_png(shots / "shot.png")
    async with app.run_test() as pilot:
        app.prompt.insert_text("see")
        app.prompt.area.post_message(events.Paste(str(path)))
        await pilot.pause()
        await pilot.press("enter")  # held while attaching, not refused
        await pilot.pause(SLOW_ATTACH_S + 0.2)
        assert app.sent == []
        assert ("information", PENDING_MESSAGE) in app.toasts  # a wait that lasts says so
        gate.set()
        await settle(pilot)
        assert [m.text for m in app.sent] == ["see [image 1]"]
        assert bound_item(app.sent[0], "[image 1]").attachment is not None
        assert app.prompt.text == ""


# --- snapshots and history


async def test_restore_last_brings_the_image_back_bound(host: MediaHost, shots: Path) -> None:
    path = make_png(shots / "shot.png")
    async with host.run_test() as pilot:
        await paste(pilot, str(path))
        host.prompt.insert_text("explain")
        await send(pilot)
        sent_id = image_ids(build_content(host.sent[0])[0])
        assert host.prompt.text == ""
        assert host.prompt.restore_last()  # e.g. the turn was interrupted
        assert host.prompt.text == "[image 1] explain"
        await paste(pilot, str(make_png(shots / "other.png", (1, 2, 3))))
        assert host.prompt.text == "[image 1] explain [image 2] "
        await send(pilot)
        ids = image_ids(build_content(host.sent[1])[0])
        assert ids[0] == sent_id[0] and len(ids) == 2


async def test_history_recall_keeps_the_image(host: MediaHost, shots: Path) -> None:
    path = make_png(shots / "shot.png")
    async with host.run_test() as pilot:
        await settle(pilot)  # the history has loaded
        await paste(pilot, str(path))
        host.prompt.insert_text("describe")
        await send(pilot)
        saved = json.loads((host.home / "history.jsonl").read_text().splitlines()[-1])
        assert "attachment_id" in json.dumps(saved)
        assert "base64" not in json.dumps(saved)
        await pilot.press("up")
        assert host.prompt.text == "[image 1] describe"
        [item] = bound(host)
        await send(pilot)
        assert image_ids(build_content(host.sent[1])[0]) == [item.attachment.id]  # type: ignore[union-attr]


async def test_history_recall_of_a_vanished_attachment_is_plain_text(
    host: MediaHost, shots: Path
) -> None:
    path = make_png(shots / "shot.png")
    async with host.run_test() as pilot:
        await settle(pilot)
        await paste(pilot, str(path))
        await send(pilot)
        [item] = bound_items(host.sent[0])
        stored = host.store.path_for(item.attachment)  # type: ignore[arg-type]
        stored.chmod(0o644)
        stored.unlink()
        await pilot.press("up")
        assert host.prompt.text == "[image 1]"
        assert host.prompt.placeholders.of_kind(MEDIA_KIND) == []


def bound_items(message: PromptInput.Submitted) -> list[MediaItem]:
    return [t.payload for t in message.placeholders if isinstance(t.payload, MediaItem)]


# --- videos


async def test_a_video_is_tracked_and_sent_bound_to_its_file(host: MediaHost, shots: Path) -> None:
    clip = shots / "demo.mp4"
    clip.write_bytes(MP4_HEAD)
    async with host.run_test() as pilot:
        await paste(pilot, str(clip))
        assert host.prompt.text == "[video 1] "
        host.prompt.insert_text("summarise")
        await send(pilot)
        [sent] = host.sent  # the box no longer holds a video back: it is sampled on send
        assert host.toasts == []
        [item] = bound_items(sent)
        assert (item.kind, item.path, item.label) == ("video", clip, "[video 1]")


async def test_images_and_videos_count_separately(host: MediaHost, shots: Path) -> None:
    clip = shots / "demo.mov"
    clip.write_bytes(MP4_HEAD)
    image = make_png(shots / "x.png")
    async with host.run_test() as pilot:
        await paste(pilot, f"{clip} {image}")
        assert host.prompt.text == "[video 1] [image 1] "


# --- limits and duplicates


async def test_the_same_image_is_not_bound_twice(host: MediaHost, shots: Path) -> None:
    path = make_png(shots / "shot.png")
    copy = shots / "copy of shot.png"
    shutil.copyfile(path, copy)
    async with host.run_test() as pilot:
        await paste(pilot, str(path))
        await paste(pilot, f'"{copy}"')
        assert host.prompt.text == "[image 1] "
        [(severity, message)] = host.toasts
        assert severity == "information" and "[image 1]" in message


async def test_the_per_draft_image_cap(tmp_path: Path, shots: Path) -> None:
    app = MediaHost(tmp_path, max_images=2)
    paths = [make_png(shots / f"{n}.png", (n * 40, 0, 0)) for n in range(3)]
    async with app.run_test() as pilot:
        await paste(pilot, " ".join(map(str, paths)))
        assert app.prompt.text == "[image 1] [image 2] "
        [(severity, message)] = app.toasts
        assert severity == "warning" and "at most 2" in message


def test_the_default_cap_comes_from_the_store(tmp_path: Path) -> None:
    source = MediaSource(AttachmentStore(tmp_path), tmp_path)
    assert source.max_images == 20


# --- clipboard


def fake_wl_paste(folder: Path, offered: dict[str, bytes]) -> dict[str, str]:
    """A ``wl-paste`` that offers ``offered`` (type → bytes); returns the env to read it with."""
    folder.mkdir(parents=True, exist_ok=True)
    for kind, data in offered.items():
        (folder / kind.replace("/", "_")).write_bytes(data)
    script = folder / "wl-paste"
    script.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        f"here = pathlib.Path({str(folder)!r})\n"
        f"offered = {list(offered)!r}\n"
        "args = sys.argv[1:]\n"
        "if args == ['--list-types']:\n"
        "    print('\\n'.join(offered))\n"
        "elif args[-1] in offered:\n"
        "    sys.stdout.buffer.write((here / args[-1].replace('/', '_')).read_bytes())\n"
        "else:\n"
        "    sys.exit(1)\n"
    )
    script.chmod(0o755)
    return {"PATH": str(folder), "WAYLAND_DISPLAY": "wayland-0"}


def clipboard_host(tmp_path: Path, env: dict[str, str]) -> MediaHost:
    reader = partial(read_clipboard_image, env=env, is_wsl=False, platform="linux")
    return MediaHost(tmp_path, read_clipboard=reader)


async def test_ctrl_v_attaches_a_clipboard_image(tmp_path: Path) -> None:
    env = fake_wl_paste(tmp_path / "bin", {"image/png": png_bytes(), "text/plain": b"x"})
    app = clipboard_host(tmp_path, env)
    async with app.run_test() as pilot:
        app.prompt.insert_text("what is this:")
        await pilot.press("ctrl+v")
        await settle(pilot)
        assert app.prompt.text == "what is this: [image 1] "
        [item] = bound(app)
        assert item.attachment is not None and item.attachment.name == "clipboard.png"
        assert item.path is None
        assert app.toasts == []


async def test_a_text_clipboard_pastes_text(tmp_path: Path) -> None:
    env = fake_wl_paste(tmp_path / "bin", {"text/plain;charset=utf-8": b"copied words"})
    app = clipboard_host(tmp_path, env)
    async with app.run_test() as pilot:
        app.copy_to_clipboard("copied words")
        await pilot.press("ctrl+v")
        await settle(pilot)
        assert app.prompt.text == "copied words"
        assert await app.source.paste_clipboard_image() is False
        assert app.toasts == []


async def test_no_clipboard_tool_is_one_toast_with_the_hint(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    app = clipboard_host(tmp_path, {"PATH": str(empty), "WAYLAND_DISPLAY": "wayland-0"})
    async with app.run_test() as pilot:
        await pilot.press("ctrl+v")
        await settle(pilot)
        assert app.prompt.text == ""
        [(severity, message)] = app.toasts
        assert severity == "warning"
        assert message == "No clipboard tool found: install wl-clipboard (Wayland)"
        # With text on the app's clipboard, Ctrl+V still pastes it (and says why only once).
        app.copy_to_clipboard("plain")
        await pilot.press("ctrl+v")
        await settle(pilot)
        assert app.prompt.text == "plain"
        assert len(app.toasts) == 1


# --- burst detection


async def test_a_fast_burst_is_a_paste_and_its_newline_does_not_send(tmp_path: Path) -> None:
    clock = Clock(step=0.004)
    app = MediaHost(tmp_path, burst_clock=clock)
    async with app.run_test() as pilot:
        await pilot.press(*"fix this", "enter", *"and that")
        shown = app.prompt.text  # the first keys show at once; the rest wait for the burst to end
        assert len(shown) <= 3 and "fix this".startswith(shown)
        clock.now += 1.0
        burst = app.prompt.area.key_filter
        assert isinstance(burst, BurstKeys)
        burst.poll()
        await settle(pilot)
        assert app.prompt.text == "fix this\nand that"
        assert app.sent == [] and burst.bursts == 1


async def test_a_burst_of_a_dropped_path_becomes_an_image(tmp_path: Path, shots: Path) -> None:
    path = make_png(shots / "drop.png")
    clock = Clock(step=0.002)
    app = MediaHost(tmp_path, burst_clock=clock)
    async with app.run_test() as pilot:
        await pilot.press(*str(path))
        clock.now += 1.0
        app.prompt.area.key_filter.poll()  # type: ignore[union-attr]
        await settle(pilot)
        assert app.prompt.text == "[image 1] "


async def test_typing_is_not_a_burst(tmp_path: Path) -> None:
    clock = Clock(step=0.150)  # a brisk typist: 150 ms a key
    app = MediaHost(tmp_path, burst_clock=clock)
    async with app.run_test() as pilot:
        await pilot.press("h", "i")
        assert app.prompt.text == "hi"  # typed keys show at once: typing is never delayed
        await pilot.press("backspace")  # other keys act in order
        assert app.prompt.text == "h"
        await pilot.press("o", "enter")
        clock.now += 1.0
        app.prompt.area.key_filter.poll()  # type: ignore[union-attr]
        await settle(pilot)
        assert [m.text for m in app.sent] == ["ho"]


async def test_burst_timer_releases_typed_keys_in_real_time(tmp_path: Path) -> None:
    app = MediaHost(tmp_path)
    async with app.run_test() as pilot:
        app.prompt.area.key_filter = BurstKeys(app.prompt, enabled=True)
        await pilot.press("a")
        await pilot.pause(0.1)
        assert app.prompt.text == "a"


# --- content


async def test_build_content_refuses_a_video_it_has_no_window_for(
    host: MediaHost, shots: Path
) -> None:
    clip = shots / "demo.webm"
    clip.write_bytes(b"\x1a\x45\xdf\xa3" + b"\x00" * 16 + b"webm" + b"\x00" * 40)
    async with host.run_test() as pilot:
        await paste(pilot, str(clip))
        draft = host.prompt.area.snapshot()
        message = PromptInput.Submitted(text=draft.text, placeholders=draft.placeholders)
        with pytest.raises(MediaRefused) as refused:
            build_content(message)
        assert "[video 1] (demo.webm) was not sampled" in refused.value.message


async def test_ctrl_v_over_a_selection_replaces_it(tmp_path: Path) -> None:
    env = fake_wl_paste(tmp_path / "bin", {"image/png": png_bytes()})
    app = clipboard_host(tmp_path, env)
    async with app.run_test() as pilot:
        app.prompt.insert_text("look: PLACEHOLDER")
        await pilot.press(*["shift+left"] * len("PLACEHOLDER"))
        await pilot.press("ctrl+v")
        await settle(pilot)
        assert app.prompt.text == "look: [image 1] "


async def test_ctrl_v_with_an_empty_clipboard_leaves_a_selection_alone(tmp_path: Path) -> None:
    env = fake_wl_paste(tmp_path / "bin", {"text/plain": b"elsewhere"})
    app = clipboard_host(tmp_path, env)
    async with app.run_test() as pilot:
        app.prompt.insert_text("keep this")
        await pilot.press("shift+home", "ctrl+v")
        await settle(pilot)
        assert app.prompt.text == "keep this"
        assert app.prompt.area.selected_text == "keep this"
        assert app.toasts == []
