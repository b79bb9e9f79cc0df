"""Handle lines and ``inspect_path`` (the data behind ``dcode media inspect``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcode.media.handles import handle_for, handle_line
from dcode.media.inspect import inspect_path
from dcode.media.limits import DEFAULT_ROUTE, ImageRoute
from dcode.media.store import AttachmentStore
from dcode.media.tokens import OpenAITiles
from dcode.media.variants import VariantService
from tests.test_media_fixtures import corpus_file, encode, gradient, noise, requires_corpus


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def test_handle_line_carries_every_fact_on_one_stable_line(store: AttachmentStore) -> None:
    [att] = store.admit([(encode(gradient((2048, 1024)), "PNG"), "Screen Shot.png")])
    variant = VariantService(store).get_sync(att, DEFAULT_ROUTE)
    path = store.path_for(att)
    line = handle_for(
        att, request_size=(variant.width, variant.height), media_type=variant.media_type, path=path
    )
    assert "\n" not in line
    for fact in ("Screen Shot.png", att.id[:12], "1130x565", "2048x1024", "image/jpeg", str(path)):
        assert fact in line
    assert "read-only" in line and "downscaled or re-encoded" in line
    assert line == handle_for(att, request_size=(1130, 565), media_type="image/jpeg", path=path)


def test_handle_line_falls_back_to_the_id() -> None:
    line = handle_line(
        name="",
        attachment_id="f" * 64,
        request_size=(1, 1),
        normalized_size=(1, 1),
        media_type="image/png",
        path="/p",
    )
    assert line.startswith("[image ffffffffffff ")


def test_inspect_reports_all_three_stages(store: AttachmentStore, tmp_path: Path) -> None:
    source = tmp_path / "screenshot.png"
    source.write_bytes(encode(noise((3000, 2000)), "PNG"))
    report = inspect_path(source, ImageRoute(640_000, 1024 * 1024, OpenAITiles()), store)
    assert report["original"] == {
        "width": 3000,
        "height": 2000,
        "format": "PNG",
        "bytes": source.stat().st_size,
    }
    normalized = report["normalized"]
    assert (normalized["width"], normalized["height"]) == (2508, 1672)
    assert normalized["format"] == "JPEG" and normalized["alpha"] is False
    request = report["request"]
    assert (request["width"], request["height"]) == (979, 653)
    assert request["format"] == "JPEG" and 0 < request["bytes"] <= 1024 * 1024
    assert request["estimated_tokens"] == 85 + 170 * 4
    assert len(request["variant_id"]) == 64
    json.dumps(report)
    assert not store.root.exists(), "inspect must not write to the store"


def test_inspect_matches_what_the_service_sends(store: AttachmentStore, tmp_path: Path) -> None:
    source = tmp_path / "photo.jpg"
    source.write_bytes(encode(noise((1800, 1200)), "JPEG", quality=90))
    report = inspect_path(source, DEFAULT_ROUTE, store)
    [att] = store.admit([source])
    variant = VariantService(store).get_sync(att, DEFAULT_ROUTE)
    assert report["normalized"]["id"] == att.id
    assert report["request"]["variant_id"] == variant.variant_id
    assert report["request"]["bytes"] == variant.byte_size


def test_inspect_failures(store: AttachmentStore, tmp_path: Path) -> None:
    missing = inspect_path(tmp_path / "nope.png", DEFAULT_ROUTE, store)
    assert set(missing) == {"path", "error"}
    text = tmp_path / "notes.png"
    text.write_text("hello")
    refused = inspect_path(text, DEFAULT_ROUTE, store)
    assert refused["reason"] == "unsupported_type" and "error" in refused


@requires_corpus
def test_inspect_a_corpus_bomb() -> None:
    path = corpus_file("decompression_bomb.gif")
    report = inspect_path(path, DEFAULT_ROUTE, AttachmentStore(Path("/nonexistent-store")))
    assert report["reason"] == "decompression_bomb"
