"""Request variants: sizes, routing, the header-checked cache, singleflight and the pool."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image, ImageFile

from dcode.media.attachment import Attachment
from dcode.media.derive import VariantPlan, derive_variant
from dcode.media.encode import Encoded, EncoderPolicy, encode_ladder
from dcode.media.errors import AttachmentUnavailableError
from dcode.media.facts import probe
from dcode.media.limits import DEFAULT_ROUTE, ImageRoute
from dcode.media.pool import TransformPool
from dcode.media.store import AttachmentStore
from dcode.media.variants import Variant, VariantService
from tests.test_media_fixtures import encode, gradient, noise, opened, png16

MiB = 1024 * 1024


class CountingTransform:
    """Wraps the real transform: counts calls, tracks concurrency, optionally waits."""

    def __init__(self, delay: float = 0.0, gate: threading.Event | None = None) -> None:
        self.calls = 0
        self.active = 0
        self.peak = 0
        self.delay = delay
        self.gate = gate
        self._lock = threading.Lock()

    def __call__(
        self, source: bytes, att: Attachment, plan: VariantPlan, policy: EncoderPolicy
    ) -> Encoded:
        with self._lock:
            self.calls += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            if self.gate is not None:
                assert self.gate.wait(10), "test gate never opened"
            if self.delay:
                time.sleep(self.delay)
            return derive_variant(source, att, plan, policy)
        finally:
            with self._lock:
                self.active -= 1


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "attachments")


def admit(
    store: AttachmentStore, im: Image.Image, fmt: str = "PNG", name: str = "img"
) -> Attachment:
    [att] = store.admit([(encode(im, fmt), f"{name}.{fmt.lower()}")])
    return att


def service(
    store: AttachmentStore, transform: CountingTransform | None = None, workers: int = 2
) -> VariantService:
    if transform is None:
        return VariantService(store, TransformPool(workers))
    return VariantService(store, TransformPool(workers), transform=transform)


def assert_matches(variant: Variant) -> Image.Image:
    data = variant.read_bytes()
    facts = probe(data)
    assert (facts.width, facts.height) == (variant.width, variant.height)
    assert facts.media_type == variant.media_type and facts.bit_depth == 8
    assert len(data) == variant.byte_size
    return opened(data)


# -- sizes and routing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "expected"), [((2048, 2048), (800, 800)), ((2048, 1024), (1130, 565))]
)
def test_route_sizes(
    store: AttachmentStore, size: tuple[int, int], expected: tuple[int, int]
) -> None:
    att = admit(store, gradient(size))
    assert (att.width, att.height) == size
    variant = service(store).get_sync(att, ImageRoute(640_000, MiB))
    assert (variant.width, variant.height) == expected
    assert assert_matches(variant).size == expected
    assert variant.media_type == "image/jpeg" and not variant.passthrough


def test_in_budget_attachment_passes_through(store: AttachmentStore) -> None:
    att = admit(store, gradient((640, 480)))
    variant = service(store).get_sync(att, DEFAULT_ROUTE)
    assert variant.passthrough and variant.path == store.path_for(att)
    assert variant.read_bytes() == store.read_bytes(att)
    assert not store.variants_dir.exists()


def test_in_pixels_but_over_bytes_is_re_encoded_at_the_same_size(store: AttachmentStore) -> None:
    att = admit(store, noise((700, 700)))
    variant = service(store).get_sync(att, ImageRoute(640_000, 100_000))
    assert (variant.width, variant.height) == (700, 700) and not variant.passthrough


def test_alpha_goes_to_webp_and_keeps_it(store: AttachmentStore) -> None:
    im = gradient((1600, 1200)).convert("RGBA")
    alpha = Image.new("L", im.size, 255)
    alpha.paste(0, (0, 0, 400, 1200))
    im.putalpha(alpha)
    att = admit(store, im)
    assert att.alpha
    variant = service(store).get_sync(att, DEFAULT_ROUTE)
    out = assert_matches(variant)
    assert variant.media_type == "image/webp" and out.mode == "RGBA"
    assert out.getchannel("A").getextrema() == (0, 255)


def test_opaque_rgba_attachment_goes_to_jpeg(store: AttachmentStore) -> None:
    att = admit(store, gradient((1600, 1200)).convert("RGBA"))  # clean RGBA PNG, opaque
    assert att.passthrough and not att.alpha
    variant = service(store).get_sync(att, DEFAULT_ROUTE)
    assert variant.media_type == "image/jpeg" and assert_matches(variant).mode == "RGB"


def test_sixteen_bit_source_gives_an_8_bit_variant(store: AttachmentStore) -> None:
    [att] = store.admit([(png16(1200, 900, (0x8080, 0x2020, 0xFFFF, 0xFFFF)), "deep.png")])
    variant = service(store).get_sync(att, DEFAULT_ROUTE)
    assert probe(variant.read_bytes()).bit_depth == 8


def test_noisy_megapixel_fits_a_megabyte_at_800(store: AttachmentStore) -> None:
    att = admit(store, noise((1024, 1024)))
    variant = service(store).get_sync(att, ImageRoute(640_000, MiB))
    assert (variant.width, variant.height) == (800, 800)
    assert variant.fits and variant.byte_size <= MiB


def test_unreachable_budget_keeps_the_smallest_jpeg(store: AttachmentStore) -> None:
    att = admit(store, Image.new("RGB", (1, 1), (10, 200, 30)), fmt="JPEG")
    counting = CountingTransform()
    svc = service(store, counting)
    route = ImageRoute(max_pixels=640_000, max_bytes=1)
    variant = svc.get_sync(att, route)
    assert variant.media_type == "image/jpeg" and (variant.width, variant.height) == (1, 1)
    assert not variant.fits and variant.byte_size > 1
    assert svc.get_sync(att, route) == variant and counting.calls == 1  # the cache still hits


def test_unreachable_budget_picks_the_smallest_rung() -> None:
    im = noise((200, 200))
    out = encode_ladder(im, 1, EncoderPolicy())
    sizes = {q: len(encode(im, "JPEG", quality=q)) for q in (85, 75, 60)}
    assert out.quality == min(sizes, key=lambda q: sizes[q]) and not out.fits


def test_budgets_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_pixels must be > 0, got 0"):
        ImageRoute(max_pixels=0, max_bytes=MiB)
    with pytest.raises(ValueError, match="max_bytes must be > 0, got -1"):
        ImageRoute(max_pixels=640_000, max_bytes=-1)
    with pytest.raises(ValueError, match="max_bytes must be > 0, got 0"):
        encode_ladder(Image.new("RGB", (2, 2)), 0, EncoderPolicy())


def test_variant_ids_are_deterministic_and_budget_specific(store: AttachmentStore) -> None:
    att = admit(store, gradient((2048, 1024)))
    svc = service(store)
    a = svc.plan(att, ImageRoute(640_000, MiB)).variant_id
    assert a == svc.plan(att, ImageRoute(640_000, MiB)).variant_id
    assert a != svc.plan(att, ImageRoute(640_001, MiB)).variant_id
    assert a != svc.plan(att, ImageRoute(640_000, MiB + 1)).variant_id
    other = VariantService(AttachmentStore(store.root, policy=EncoderPolicy(qualities=(90, 70))))
    assert a != other.plan(att, ImageRoute(640_000, MiB)).variant_id


def test_regeneration_is_byte_identical(store: AttachmentStore) -> None:
    att = admit(store, noise((1500, 1000)))
    svc = service(store)
    first = svc.get_sync(att, DEFAULT_ROUTE).read_bytes()
    for path in store.variants_dir.rglob("*.*"):
        path.unlink()
    assert svc.get_sync(att, DEFAULT_ROUTE).read_bytes() == first


# -- the cache ------------------------------------------------------------------------------------


def _overwrite(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)
    path.write_bytes(data)


CORRUPTIONS: dict[str, Callable[[int, int], bytes]] = {
    "garbage": lambda w, h: b"\x00garbage" * 500,
    "truncated": lambda w, h: encode(noise((w, h)), "JPEG")[:2000],
    "wrong-dimensions": lambda w, h: encode(noise((w + 1, h)), "JPEG"),
    "16-bit": lambda w, h: png16(w, h, (1, 2, 3)),
    "cmyk": lambda w, h: encode(noise((w, h)).convert("CMYK"), "JPEG"),
    "unexpected-alpha": lambda w, h: encode(noise((w, h), "RGBA"), "WEBP"),
    "oversized": lambda w, h: encode(noise((w, h)), "JPEG", quality=100),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corrupt_cache_entries_are_regenerated(store: AttachmentStore, kind: str) -> None:
    att = admit(store, gradient((2048, 1024)))
    counting = CountingTransform()
    svc = service(store, counting)
    route = ImageRoute(640_000, 200_000)
    good = svc.get_sync(att, route)
    good_bytes = good.read_bytes()
    _overwrite(good.path, CORRUPTIONS[kind](good.width, good.height))
    again = svc.get_sync(att, route)
    assert counting.calls == 2, f"{kind} entry was trusted"
    assert again.read_bytes() == good_bytes
    assert_matches(again)


def test_missing_record_or_renamed_format_is_a_miss(store: AttachmentStore) -> None:
    att = admit(store, gradient((2048, 1024)))
    counting = CountingTransform()
    svc = service(store, counting)
    first = svc.get_sync(att, DEFAULT_ROUTE)
    first.path.with_suffix(".json").unlink()
    svc.get_sync(att, DEFAULT_ROUTE)
    assert counting.calls == 2


def test_cache_hits_are_checked_from_the_header_only(
    store: AttachmentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    att = admit(store, noise((2000, 1500)))
    counting = CountingTransform()
    svc = service(store, counting)
    svc.get_sync(att, DEFAULT_ROUTE)
    loads: list[object] = []
    original = ImageFile.ImageFile.load

    def spy(im: ImageFile.ImageFile) -> object:
        loads.append(im)
        return original(im)

    monkeypatch.setattr(ImageFile.ImageFile, "load", spy)
    hit = svc.get_sync(att, DEFAULT_ROUTE)
    assert counting.calls == 1 and loads == [] and hit.byte_size > 0


def test_missing_attachment_is_reported(store: AttachmentStore) -> None:
    att = admit(store, gradient((2048, 1024)))
    store.path_for(att).unlink()
    with pytest.raises(AttachmentUnavailableError):
        service(store).get_sync(att, DEFAULT_ROUTE)


# -- singleflight, cancellation, pool --------------------------------------------------------------


async def test_concurrent_callers_share_one_transform(store: AttachmentStore) -> None:
    att = admit(store, noise((2048, 1536)))
    counting = CountingTransform(delay=0.05)
    svc = service(store, counting)
    results = await asyncio.gather(*(svc.get(att, DEFAULT_ROUTE) for _ in range(12)))
    assert counting.calls == 1
    assert len(set(results)) == 1
    assert_matches(results[0])


async def test_cancelling_one_waiter_spares_the_others(store: AttachmentStore) -> None:
    att = admit(store, noise((2048, 1536)))
    gate = threading.Event()
    counting = CountingTransform(gate=gate)
    svc = service(store, counting)
    waiters = [asyncio.create_task(svc.get(att, DEFAULT_ROUTE)) for _ in range(3)]
    await asyncio.sleep(0.05)
    waiters[0].cancel()
    await asyncio.sleep(0.01)
    gate.set()
    done = await asyncio.gather(*waiters, return_exceptions=True)
    assert isinstance(done[0], asyncio.CancelledError)
    assert isinstance(done[1], Variant) and done[1] == done[2]
    assert counting.calls == 1


async def test_a_flight_abandoned_by_all_waiters_still_fills_the_cache(
    store: AttachmentStore,
) -> None:
    att = admit(store, noise((2048, 1536)))
    gate = threading.Event()
    counting = CountingTransform(gate=gate)
    svc = service(store, counting)
    waiter = asyncio.create_task(svc.get(att, DEFAULT_ROUTE))
    await asyncio.sleep(0.05)
    waiter.cancel()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    for _ in range(200):
        if not svc._flights:
            break
        await asyncio.sleep(0.01)
    assert await svc.get(att, DEFAULT_ROUTE) == svc.get_sync(att, DEFAULT_ROUTE)
    assert counting.calls == 1


async def test_waiters_all_see_the_failure(store: AttachmentStore) -> None:
    att = admit(store, gradient((2048, 1024)))
    store.path_for(att).unlink()
    svc = service(store)
    results = await asyncio.gather(
        *(svc.get(att, DEFAULT_ROUTE) for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, AttachmentUnavailableError) for r in results)


@pytest.mark.parametrize("workers", [1, 2, 3])
async def test_the_pool_bound_is_respected(store: AttachmentStore, workers: int) -> None:
    atts = [admit(store, gradient((1200 + i, 900)), name=f"g{i}") for i in range(6)]
    counting = CountingTransform(delay=0.1)
    svc = service(store, counting, workers=workers)
    await asyncio.gather(*(svc.get(a, DEFAULT_ROUTE) for a in atts))
    assert counting.calls == 6
    assert counting.peak == workers


@pytest.mark.parametrize("workers", [0, 9, -1])
def test_pool_bound_is_validated(workers: int) -> None:
    with pytest.raises(ValueError, match=rf"workers must be 1\.\.8, got {workers}"):
        TransformPool(workers)
    with pytest.raises(TypeError):
        TransformPool(True)


def test_default_pool_has_two_workers() -> None:
    with TransformPool() as pool:
        assert pool.workers == 2
