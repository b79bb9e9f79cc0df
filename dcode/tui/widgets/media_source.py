"""The media tracker: ``[image N]`` and ``[video N]`` tokens in the prompt, bound to their media.

One :class:`MediaSource` plugs into ``PromptInput`` as the placeholder source of kind ``media``.

- **Pasted or dropped paths.** A paste that may name media files is claimed at once: a
  zero-width *anchor* token marks where it went, and a worker thread parses it
  (``parse_pasted_paths``), sniffs each file (``detect_media_kind``) and admits the images into
  the attachment store. Back on the UI thread the result is written at the anchor, which the
  registry has kept in step with any typing meanwhile: each image becomes ``[image N]`` plus a
  space, each video ``[video N]``, paths that are not media and the prompt text around them stay
  text. A paste that names no media goes back to the other sources (a long one still collapses)
  or in as plain text, where it was pasted.
- **Admission** is per file, so one bad screenshot does not cost the good ones. A refusal (too
  large, too many pixels, corrupt, unsupported type, more than 20 images in the draft) is one
  toast naming the file and the reason, and the draft keeps everything else. The same
  attachment (same content digest) is never bound twice in a draft.
- **Numbers** count up per draft and are not reused within it, even after a deletion (undo
  could bring the old token back). A restored draft continues after its highest number.
- **Payloads** are immutable :class:`MediaItem` values shared by every snapshot of a token,
  so ``last_draft``, the undo memory and the history walk all keep the media bound. The prompt
  history persists an image by attachment id and a video by path (``dump``/``load``).
- **Sending.** ``allow_submit`` holds the draft while media is still being attached and sends it
  once the last paste settles (a path and Enter in one write, or a fast typist, needs no second
  Enter; a wait that lasts is a toast). A video is sampled when the prompt is sent (its first
  window, in a worker: ``media_content.sample_videos``), and
  :func:`dcode.tui.widgets.media_content.build_content` turns the sent prompt into content.
- **Clipboard.** Ctrl+V reads the system clipboard in a thread (``read_clipboard_image``): an
  image is admitted like a dropped file; no image means an ordinary text paste; a missing tool
  is one toast with the install hint.

Deleting a token needs nothing here: the registry removes it whole, and what is not bound is not
sent. ``removed`` is advisory (undo can bring a token back), so it never destroys media.
"""

# Any: a placeholder's saved form is JSON in the prompt history; asyncio.to_thread's results

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from textual.widgets.text_area import Selection

from dcode.media.attachment import Attachment
from dcode.media.clipboard import (
    ClipboardImage,
    ClipboardResult,
    ClipboardUnavailable,
    NoImage,
    read_clipboard_image,
)
from dcode.media.errors import AdmissionError, MediaError
from dcode.media.kinds import (
    IMAGE_EXTENSIONS,
    VIDEO_EXTENSIONS,
    MediaKind,
    detect_media_kind,
    sniff_kind,
)
from dcode.media.paths import MAX_LINES, MAX_PASTE_CHARS, parse_pasted_paths
from dcode.regular_files import read_regular
from dcode.tui.widgets.media_notes import (
    AttachNotes,
    MediaItem,
    attach_report,
    media_label,
    unseen_report,
)
from dcode.tui.widgets.placeholders import Placeholder, PlaceholderHost, PlaceholderSource

if TYPE_CHECKING:
    from textual.timer import Timer

    from dcode.media.store import AttachmentStore
    from dcode.models.media_support import MediaSupport
    from dcode.tui.widgets.prompt_area import PromptArea
    from dcode.tui.widgets.prompt_input import PromptInput

__all__ = [
    "MEDIA_KIND",
    "PENDING_MESSAGE",
    "MediaItem",
    "MediaSource",
    "Notify",
    "PendingMedia",
    "media_label",
    "might_name_media",
]

MEDIA_KIND = "media"
PENDING_MESSAGE = "Attaching media: the message goes as soon as it is ready."
# Enter while media is still attaching sends once it is; a wait longer than this says so.
SLOW_ATTACH_S = 0.3
_GROUP = "media-attach"
_VIDEO_HEAD = 2 * 188  # enough for every video signature, MPEG-TS's two sync bytes included
_T = TypeVar("_T")

Notify = Callable[..., None]
"""``notify(message, severity=...)``; severity is "information", "warning" or "error"."""
RunInThread = Callable[..., Awaitable[Any]]
"""``asyncio.to_thread``'s shape: ``await run(fn, *args)``."""


@dataclass(eq=False, slots=True)
class PendingMedia:
    """The payload of a zero-width anchor while a paste or clipboard read is being worked on.

    Shared by every copy of the anchor, so ``done`` also retires copies that undo or a
    snapshot might bring back later.
    """

    seq: int
    what: str
    done: bool = False


# --------------------------------------------------------------------------- cheap pre-check

_EXTENSIONS = sorted(
    (ext[1:] for ext in IMAGE_EXTENSIONS | VIDEO_EXTENSIONS), key=len, reverse=True
)
_MEDIA_EXTENSION = re.compile(
    r"\.(?:{})(?![A-Za-z0-9])".format("|".join(_EXTENSIONS)), re.IGNORECASE
)
_PATH_START = re.compile(r"""\s*["']?(?:/|~/|file:|[A-Za-z]:[\\/]|\\\\)""", re.IGNORECASE)


def might_name_media(text: str) -> bool:
    """Whether a paste is worth a look on the file system (no I/O; runs on the UI thread).

    True when some word ends in an image or video extension, or when a one-line paste starts
    like a path (an extensionless file may still be an image by its magic bytes).
    """
    stripped = text.strip()
    if not stripped or len(stripped) > MAX_PASTE_CHARS or stripped.count("\n") >= MAX_LINES:
        return False
    if _MEDIA_EXTENSION.search(stripped):
        return True
    return "\n" not in stripped and len(stripped) <= 4096 and bool(_PATH_START.match(stripped))


def _media_kind(path: Path) -> MediaKind | None:
    """``detect_media_kind``, except that a video must say so in its bytes.

    Every container we call a video has a signature, while some video extensions name common
    text files too (``.ts`` is TypeScript far more often than MPEG-TS): such a file stays text.
    """
    kind = detect_media_kind(path)
    if kind != "video":
        return kind
    try:
        head = read_regular(path, _VIDEO_HEAD)
    except OSError:
        return None
    return "video" if sniff_kind(head) == "video" else None


# --------------------------------------------------------------------------- worker results


@dataclass(frozen=True, slots=True)
class _Part:
    """One piece of a claimed paste, in order: plain text, or a media file."""

    text: str = ""
    kind: MediaKind | None = None
    path: Path | None = None


@dataclass(slots=True)
class _Plan:
    """What the worker found: the pieces, the admitted images by piece index, the refusals."""

    parts: list[_Part]
    admitted: dict[int, Attachment] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    over_cap: int = 0
    support: MediaSupport | None = None
    """What the model takes, looked up in the worker (it may read a file)."""


# --------------------------------------------------------------------------- the source


class MediaSource(PlaceholderSource):
    """Tracks pasted, dropped and clipboard media in one ``PromptInput``.

    ``store`` is the attachment store, or a zero-argument factory for it (the store imports
    Pillow, which the first paint should not wait for; the factory is called in a worker
    thread). ``notify(message, severity=...)`` shows a toast; left None, the app's own
    ``notify`` is used with markup off (file names may hold brackets). ``support`` gives the
    model's profile (called in a worker thread), so that media it will not see is said when it
    is attached, not after the prompt is sent. ``run_in_thread`` and ``read_clipboard`` are
    injectable for tests.
    """

    kind: ClassVar[str] = MEDIA_KIND

    def __init__(
        self,
        store: AttachmentStore | Callable[[], AttachmentStore],
        workspace: Path,
        *,
        notify: Notify | None = None,
        run_in_thread: RunInThread = asyncio.to_thread,
        read_clipboard: Callable[[], ClipboardResult] = read_clipboard_image,
        max_images: int | None = None,
        support: Callable[[], MediaSupport | None] | None = None,
    ) -> None:
        self.workspace = workspace
        self._support = support
        self._store_or_factory = store
        self._store: AttachmentStore | None = None if callable(store) else store
        self._store_lock = threading.Lock()
        self._notify = notify
        self._run_in_thread = run_in_thread
        self._read_clipboard = read_clipboard
        self._max_images = max_images
        self._prompt: PromptInput | None = None
        self._seq = 0
        self._told_unavailable = False
        self._send_when_attached: Timer | None = None

    # --- wiring

    def install(self, prompt: PromptInput, *, burst: bool | None = None) -> None:
        """Register with ``prompt``: pastes, Ctrl+V, and burst detection for unbracketed pastes.

        ``burst`` None turns burst detection on in a real terminal and off under ``run_test``;
        False leaves it out entirely.
        """
        from dcode.tui.widgets.burst import BurstKeys

        self._prompt = prompt
        prompt.add_source(self)
        prompt.area.clipboard_paste = self._on_ctrl_v
        if burst is not False:
            prompt.area.key_filter = BurstKeys(prompt, enabled=burst)

    @property
    def store(self) -> AttachmentStore:
        """The attachment store (built on first use if a factory was given; may import Pillow)."""
        with self._store_lock:
            if self._store is None:
                factory = cast("Callable[[], AttachmentStore]", self._store_or_factory)
                self._store = factory()
            return self._store

    @property
    def max_images(self) -> int:
        if self._max_images is not None:
            return self._max_images
        return self.store.limits.max_images_per_message

    def _area(self, host: PlaceholderHost | None = None) -> PromptArea:
        if host is not None:
            return cast("PromptArea", host)
        if self._prompt is None:
            raise RuntimeError("MediaSource.install(prompt) has not been called")
        return self._prompt.area

    def toast(self, message: str, severity: str = "information") -> None:
        notify = self._notify
        if notify is None and self._prompt is not None:
            notify = partial(self._prompt.app.notify, markup=False)
        if notify is not None:
            notify(message, severity=severity)

    # --- the PlaceholderSource hooks

    def on_paste(self, text: str, host: PlaceholderHost) -> bool:
        if not might_name_media(text):
            return False
        area = self._area(host)
        anchor = self._anchor(area, "paste")
        area.run_worker(self._paste_job(area, anchor, text), group=_GROUP, exit_on_error=False)
        return True

    def expand(self, placeholder: Placeholder) -> str:
        return placeholder.label  # "[image 1]" stays in the text: it is how the image is named

    def removed(self, placeholder: Placeholder) -> None:
        """Nothing to free: what is not bound is not sent, and undo may bind it again.

        The attachment stays in the content-addressed store (history may refer to it), and a
        pending paste whose anchor was cut away simply finds nowhere to write.
        """

    def allow_submit(self, placeholders: tuple[Placeholder, ...]) -> bool:
        if any(isinstance(t.payload, PendingMedia) and not t.payload.done for t in placeholders):
            if self._send_when_attached is None and self._prompt is not None:
                self._send_when_attached = self._prompt.set_timer(
                    SLOW_ATTACH_S, lambda: self.toast(PENDING_MESSAGE)
                )
            return False
        return True

    def dump(self, placeholder: Placeholder) -> Any | None:
        item = placeholder.payload
        if not isinstance(item, MediaItem):
            return None
        if item.attachment is not None:
            return {"kind": item.kind, "number": item.number, "attachment_id": item.attachment.id}
        if item.path is not None:
            return {"kind": item.kind, "number": item.number, "path": str(item.path)}
        return None

    def load(self, label: str, data: Any) -> Any | None:
        """Rebind a history entry's token if its media is still there (a stat and a small read)."""
        if not isinstance(data, dict):
            return None
        kind, number = data.get("kind"), data.get("number")
        if kind not in ("image", "video") or not isinstance(number, int):
            return None
        if label != media_label(kind, number):
            return None
        if kind == "image":
            try:
                attachment = self.store.get(str(data.get("attachment_id")))
            except MediaError:
                return None
            if not self.store.contains(attachment):
                return None
            return MediaItem("image", number, attachment.display_name, attachment=attachment)
        raw = data.get("path")
        path = Path(raw) if isinstance(raw, str) else None
        if path is None or not path.is_file():
            return None
        return MediaItem("video", number, path.name, path=path)

    # --- clipboard

    def _on_ctrl_v(self) -> bool:
        """The ``PromptArea.clipboard_paste`` hook: always takes Ctrl+V over (image, else text)."""
        area = self._area()
        area.run_worker(self._guarded(self.paste(area)), group=_GROUP, exit_on_error=False)
        return True

    async def _guarded(self, job: Awaitable[object]) -> None:
        try:
            await job
        except Exception as exc:  # noqa: BLE001 - a failed paste is a toast, never a crash
            self.toast(f"Paste failed: {exc}", "error")

    async def paste(
        self, host: PlaceholderHost | None = None, *, say_if_empty: bool = False
    ) -> bool:
        """Ctrl+V and ``/paste``: an image from the system clipboard, else the app's text clipboard.

        Returns True when something was pasted or attached. A missing clipboard tool is a toast
        (once per session when there was text to paste instead, every time otherwise).
        ``say_if_empty`` adds a toast when there was nothing at all to paste.
        """
        area = self._area(host)
        anchor = self._anchor(area, "clipboard", replace_selection=False)
        try:
            result = await self._clipboard_into(area, anchor)
            if isinstance(result, ClipboardImage):
                return True
            text = area.app.clipboard
            if isinstance(result, ClipboardUnavailable) and (
                not text or not self._told_unavailable
            ):
                self._told_unavailable = True
                self.toast(result.message, "warning")
            if text:  # where Ctrl+V was pressed, even if keys were typed during the read
                self._insert_at(area, anchor, lambda: area.handle_paste(text))
                return True
            if say_if_empty and isinstance(result, NoImage):
                self.toast("The clipboard holds no image or text to paste.", "information")
            return False
        finally:
            self._finish(area, anchor)

    async def paste_clipboard_image(self, host: PlaceholderHost | None = None) -> bool:
        """Attach the clipboard's image at the cursor. False only when it holds no image.

        A clipboard that cannot be read is one toast with its reason and hint (and True: a text
        paste could not help with that either).
        """
        area = self._area(host)
        anchor = self._anchor(area, "clipboard", replace_selection=False)
        try:
            result = await self._clipboard_into(area, anchor)
        finally:
            self._finish(area, anchor)
        if isinstance(result, ClipboardUnavailable):
            self.toast(result.message, "warning")
        return not isinstance(result, NoImage)

    async def _clipboard_into(self, area: PromptArea, anchor: Placeholder) -> ClipboardResult:
        """Read the clipboard in a thread; an image is admitted and written at the anchor.

        Otherwise the anchor stays bound, for a text paste at the same spot.
        """
        try:
            result, plan = await self._run_in_thread(self._read_and_admit, self._images_in(area))
        except Exception as exc:  # noqa: BLE001 - a broken reader is a toast, never a crash
            return ClipboardUnavailable("Could not read the clipboard", str(exc))
        if plan is not None:
            self._apply_plan(area, anchor, plan)
        return cast("ClipboardResult", result)

    def _read_and_admit(self, images_in_draft: int) -> tuple[ClipboardResult, _Plan | None]:
        """Worker thread: read the clipboard and admit its image."""
        result = self._read_clipboard()
        if not isinstance(result, ClipboardImage):
            return result, None
        extension = result.media_type.split("/")[-1].replace("jpeg", "jpg")
        plan = _Plan(parts=[_Part(kind="image")], support=self._model_support())
        room = self.max_images - images_in_draft
        self._admit(plan, 0, (result.data, f"clipboard.{extension}"), room)
        return result, plan

    # --- pastes

    async def _paste_job(self, area: PromptArea, anchor: Placeholder, text: str) -> None:
        try:
            try:
                plan = await self._run_in_thread(self._plan_paste, text, self._images_in(area))
            except Exception as exc:  # noqa: BLE001 - the paste still goes in, as text
                plan = None
                self.toast(f"Could not look at the pasted paths: {exc}", "error")
            if plan is None:
                self._put_back(area, anchor, text)
            else:
                self._apply_plan(area, anchor, plan)
        finally:
            self._finish(area, anchor)  # whatever happened, never leave the send blocked

    def _plan_paste(self, text: str, images_in_draft: int) -> _Plan | None:
        """Worker thread: parse, sniff and admit. None when the paste names no media."""
        parsed = parse_pasted_paths(text, cwd=self.workspace)
        if parsed is None:
            return None
        kinds = [_media_kind(item.path) for item in parsed.items]
        if not any(kinds):
            return None
        parts: list[_Part] = []
        if parsed.leading_text:
            parts.append(_Part(text=parsed.leading_text))
        for item, kind in zip(parsed.items, kinds, strict=True):
            parts.append(_Part(kind=kind, path=item.path) if kind else _Part(text=item.raw))
        if parsed.trailing_text:
            parts.append(_Part(text=parsed.trailing_text))
        plan = _Plan(parts, support=self._model_support())
        seen: set[Path] = set()
        for index, part in enumerate(parts):
            if part.kind != "image" or part.path is None or part.path in seen:
                continue  # the same file twice in one paste is bound once
            seen.add(part.path)
            room = self.max_images - images_in_draft - len(plan.admitted)
            self._admit(plan, index, part.path, room)
        return plan

    def _model_support(self) -> MediaSupport | None:
        """What the model takes (worker thread); None when unknown: nothing is said then."""
        if self._support is None:
            return None
        try:
            return self._support()
        except Exception:  # noqa: BLE001 - a config that no longer resolves is said when the prompt is sent
            return None

    def _admit(self, plan: _Plan, index: int, source: Path | tuple[bytes, str], room: int) -> None:
        """Admit one image (worker thread); a refusal is noted in the plan, never raised."""
        if room <= 0:
            plan.over_cap += 1
            return
        try:
            plan.admitted[index] = self.store.admit([source])[0]
        except AdmissionError as exc:
            plan.refused.extend(rejection.message() for rejection in exc.rejections)
        except (MediaError, OSError, ValueError) as exc:
            name = source.name if isinstance(source, Path) else source[1]
            plan.refused.append(f"{name}: {exc}")

    # --- writing results into the draft (UI thread)

    def _images_in(self, area: PromptArea) -> int:
        return sum(1 for item in self._bound(area) if item.kind == "image")

    def _bound(self, area: PromptArea) -> list[MediaItem]:
        tokens = area.placeholders.of_kind(self.kind)
        return [t.payload for t in tokens if isinstance(t.payload, MediaItem)]

    def _next_number(self, area: PromptArea, kind: MediaKind, used: int) -> int:
        """Per-draft numbers: the registry's counter (reset with the draft) past every bound one."""
        while True:
            number = area.placeholders.next_number(f"{self.kind}:{kind}")
            if number > used:
                return number

    def _apply_plan(self, area: PromptArea, anchor: Placeholder, plan: _Plan) -> None:
        bound = self._bound(area)
        by_id = {item.attachment.id: item for item in bound if item.attachment is not None}
        images = sum(1 for item in bound if item.kind == "image")
        source_bytes = sum(
            item.attachment.original.byte_size for item in bound if item.attachment is not None
        )
        # Only images reach the store: a paste of videos alone never builds it on this thread.
        byte_cap = self._store.limits.max_message_source_bytes if self._store is not None else None
        highest = {
            kind: max((item.number for item in bound if item.kind == kind), default=0)
            for kind in ("image", "video")
        }
        notes = AttachNotes(refused=list(plan.refused), over_cap=plan.over_cap)
        pieces: list[str | MediaItem] = []
        for index, part in enumerate(plan.parts):
            if part.kind is None:
                pieces.append(part.text)
                continue
            if part.kind == "video":
                assert part.path is not None
                number = self._next_number(area, "video", highest["video"])
                pieces.append(MediaItem("video", number, part.path.name, path=part.path))
                continue
            attachment = plan.admitted.get(index)
            if attachment is None:
                continue
            if attachment.id in by_id:
                already = by_id[attachment.id].label
                notes.duplicates.append(f"{attachment.display_name} is already {already}")
                continue
            if images >= self.max_images:
                notes.over_cap += 1
                continue
            size = attachment.original.byte_size
            if byte_cap is not None and source_bytes + size > byte_cap:
                notes.too_large.append(attachment.display_name)
                continue
            number = self._next_number(area, "image", highest["image"])
            item = MediaItem("image", number, attachment.display_name, attachment, part.path)
            by_id[attachment.id] = item
            images += 1
            source_bytes += size
            pieces.append(item)
        self._insert_at(area, anchor, lambda: self._write(area, pieces))
        for line, severity in (
            attach_report(notes, self.max_images, byte_cap),
            unseen_report(plan.support, pieces),
        ):
            if line:
                self.toast(line, severity)

    def _write(self, area: PromptArea, pieces: list[str | MediaItem]) -> None:
        if not pieces:
            return
        offset = area.cursor_offset
        if offset and not area.text[offset - 1].isspace():
            area.insert_text(" ")
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            if isinstance(piece, str):
                area.insert_text(piece if last else piece + " ")
                continue
            token = area.insert_placeholder(self.kind, piece.label, piece)
            token.number = piece.number
            following = area.text[area.cursor_offset : area.cursor_offset + 1]
            if not last or not following.isspace():
                area.insert_text(" ")

    def _put_back(self, area: PromptArea, anchor: Placeholder, text: str) -> None:
        """A paste that named no media: give it to the other sources, where it was pasted."""

        def paste_as_usual() -> None:
            for source in area.placeholders.sources:
                if source is not self and source.on_paste(text, area):
                    return
            area.insert_text(text)

        self._insert_at(area, anchor, paste_as_usual)

    # --- anchors

    def _anchor(
        self, area: PromptArea, what: str, *, replace_selection: bool = True
    ) -> Placeholder:
        """A zero-width token at the cursor. A paste replaces the selection at once; a clipboard
        read leaves it alone, since the clipboard may turn out to hold nothing."""
        if replace_selection and not area.selection.is_empty:
            area.insert_text("")
        self._seq += 1
        pending = PendingMedia(self._seq, what)
        return area.placeholders.add(self.kind, "", area.cursor_offset, pending)

    def _find(self, area: PromptArea, anchor: Placeholder) -> Placeholder | None:
        return next((t for t in area.placeholders if t.id == anchor.id), None)

    def _finish(self, area: PromptArea, anchor: Placeholder) -> None:
        """Retire an anchor whose work ended (every paste and clipboard job ends here); the
        last one to settle sends a draft that Enter was pressed on meanwhile."""
        cast(PendingMedia, anchor.payload).done = True
        current = self._find(area, anchor)
        if current is not None:
            area.placeholders.discard(current)
        waiting = self._send_when_attached
        if waiting is None or any(
            isinstance(t.payload, PendingMedia) and not t.payload.done for t in area.placeholders
        ):
            return
        self._send_when_attached = None
        waiting.stop()
        if self._prompt is not None and area.is_attached:
            self._prompt.submit()

    def _insert_at(self, area: PromptArea, anchor: Placeholder, fill: Callable[[], None]) -> None:
        """Run ``fill`` (which inserts at the cursor) where the anchor is, keeping the user's
        cursor or selection where it was relative to the text around it."""
        pending = cast(PendingMedia, anchor.payload)
        pending.done = True
        current = self._find(area, anchor)
        if current is None or not area.is_attached:
            return  # the draft it belonged to was sent, cleared or replaced
        registry = area.placeholders
        position = current.start
        registry.discard(current)
        selection = area.selection
        start, end = area.offset_of(selection.start), area.offset_of(selection.end)
        if pending.what == "clipboard" and start != end and position in (start, end):
            # Ctrl+V over a selection that is still there: the paste replaces it, as usual.
            area.insert_text("")
            position = start = end = area.cursor_offset
        size = len(area.text)
        area.move_cursor(area.location_of(position))
        fill()
        delta = len(area.text) - size
        after = area.cursor_offset
        for token in registry:  # younger anchors at the same spot belong after this paste
            payload = token.payload
            if (
                isinstance(payload, PendingMedia)
                and payload.seq > pending.seq
                and token.start == position
                and token.kind == self.kind
            ):
                token.start += delta

        def moved(offset: int) -> int:
            if offset == position:
                return after
            return offset + delta if offset > position else offset

        area.selection = Selection(area.location_of(moved(start)), area.location_of(moved(end)))
