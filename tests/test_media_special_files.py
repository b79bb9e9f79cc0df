"""Media named by path (``-i``, ``@path``, a paste, ``dcode media inspect``) that is a named pipe
or a device: one clear line, at once; nothing opens it in a way that could block."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dcode.cli.headless import HeadlessRequest
from dcode.cli.headless_media import attach_images
from dcode.media.errors import AdmissionError
from dcode.media.inspect import inspect_path
from dcode.media.kinds import detect_media_kind
from dcode.media.limits import DEFAULT_ROUTE
from dcode.media.store import AttachmentStore, Source
from dcode.settings.config import ConfigError, Settings
from tests.support.hostile_files import fifo, finishes_within

PROMPTLY = 10.0


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


@pytest.mark.parametrize("name", ["shot.png", "stuck.mp4", "notes"])
def test_sniffing_a_named_pipe_finds_no_media_and_does_not_block(tmp_path: Path, name: str) -> None:
    pipe = fifo(tmp_path / name)
    assert finishes_within(PROMPTLY, lambda: detect_media_kind(pipe)) is None


def test_admitting_a_named_pipe_or_a_device_is_refused_with_the_reason(
    tmp_path: Path, store: AttachmentStore
) -> None:
    pipe = fifo(tmp_path / "shot.png")
    (tmp_path / "zero.png").symlink_to("/dev/zero")
    with pytest.raises(AdmissionError) as raised:
        finishes_within(
            PROMPTLY,
            lambda: store.admit([Source.from_path(pipe), Source.from_path(tmp_path / "zero.png")]),
        )
    assert [r.detail for r in raised.value.rejections] == [
        "cannot read: it is a named pipe (FIFO), not a regular file",
        "cannot read: it is a character device, not a regular file",
    ]


def test_inspecting_a_named_pipe_reports_it(tmp_path: Path, store: AttachmentStore) -> None:
    pipe = fifo(tmp_path / "shot.png")
    report = finishes_within(PROMPTLY, lambda: inspect_path(pipe, DEFAULT_ROUTE, store))
    assert report == {"path": str(pipe), "error": "it is a named pipe (FIFO), not a regular file"}


def test_headless_media_names_a_pipe_for_what_it_is(tmp_path: Path, workspace: Path) -> None:
    pipe = fifo(workspace / "shot.png")
    settings = Settings(home=tmp_path / "home", workspace=workspace)
    said: list[str] = []
    mentioned = finishes_within(
        PROMPTLY,
        lambda: attach_images(
            settings, HeadlessRequest(prompt="look at @shot.png"), [], warn=said.append
        ),
    )
    assert mentioned.content is None and mentioned.attached == ()
    assert said == [
        "@shot.png not attached: shot.png is a named pipe (FIFO), not a regular file; only regular files are read or written"
    ]
    with pytest.raises(ConfigError) as raised:
        finishes_within(
            PROMPTLY, lambda: attach_images(settings, HeadlessRequest(prompt="look"), [pipe])
        )
    assert str(raised.value) == f"{pipe} is a named pipe (FIFO), not a regular file"
    with pytest.raises(ConfigError) as missing:
        attach_images(settings, HeadlessRequest(prompt="look"), [workspace / "gone.png"])
    assert str(missing.value) == f"image not found: {workspace / 'gone.png'}"
    assert os.path.exists(pipe)
