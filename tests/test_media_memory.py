"""Pillow's block cache: on while images are processed, given back when idle."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from PIL import Image

from dcode.media import memory
from dcode.media.memory import is_caching, release, reusable_memory
from dcode.media.normalize import normalize_image
from tests.test_media_fixtures import encode, noise


@pytest.fixture(autouse=True)
def pillow_defaults(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, int]]:
    """Start and end every test with the cache released and Pillow's defaults in place."""
    for name in ("PILLOW_BLOCK_SIZE", "PILLOW_BLOCKS_MAX"):
        monkeypatch.delenv(name, raising=False)
    release()
    before = (Image.core.get_block_size(), Image.core.get_blocks_max())
    yield before
    release()
    assert (Image.core.get_block_size(), Image.core.get_blocks_max()) == before


def test_blocks_are_kept_inside_and_given_back_on_release(
    pillow_defaults: tuple[int, int],
) -> None:
    assert pillow_defaults[1] == 0 and not is_caching()
    with reusable_memory():
        assert is_caching()
        assert Image.core.get_block_size() == memory.CACHE_BLOCK_SIZE
        assert Image.core.get_blocks_max() == memory.CACHE_BLOCKS
        Image.new("RGB", (2000, 2000))  # freed at once: its blocks go to the cache
    assert is_caching(), "the cache outlives the block until the process is idle"
    release()
    assert not is_caching()
    assert (Image.core.get_block_size(), Image.core.get_blocks_max()) == pillow_defaults


def test_release_waits_for_work_in_flight() -> None:
    with reusable_memory():
        with reusable_memory():
            release()
            assert is_caching()
        release()
        assert is_caching()


def test_idle_timer_gives_the_memory_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "IDLE_SECONDS", 0.05)
    with reusable_memory():
        pass
    for _ in range(100):
        if not is_caching():
            break
        time.sleep(0.02)
    assert not is_caching()


def test_new_work_cancels_a_pending_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "IDLE_SECONDS", 0.2)
    with reusable_memory():
        pass
    with reusable_memory():
        time.sleep(0.4)  # the first release would have fired by now
        assert is_caching()


def test_a_configured_allocator_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PILLOW_BLOCKS_MAX", "4")
    with reusable_memory():
        assert not is_caching() and Image.core.get_blocks_max() == 0
    monkeypatch.delenv("PILLOW_BLOCKS_MAX")
    Image.core.set_blocks_max(3)
    try:
        with reusable_memory():
            assert not is_caching() and Image.core.get_blocks_max() == 3
    finally:
        Image.core.set_blocks_max(0)


def test_concurrent_users_share_one_cache() -> None:
    errors: list[BaseException] = []
    data = encode(noise((1500, 1000)), "PNG")

    def admit() -> None:
        try:
            for _ in range(3):
                normalize_image(data, "n.png")
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=admit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and is_caching()


def test_normalization_turns_the_cache_on() -> None:
    normalize_image(encode(noise((800, 600)), "PNG"), "n.png")
    assert is_caching()
