"""Band-parallel resampling: equivalent to one-piece resizes, and independent of the cores."""

from __future__ import annotations

import math
import threading

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageStat

from dcode.media import bands
from dcode.media.bands import band_count, resize_banded, run_parallel
from dcode.media.derive import derive_variant, plan_variant
from dcode.media.encode import DEFAULT_POLICY
from dcode.media.limits import ImageRoute
from dcode.media.normalize import normalize_image
from tests.test_media_fixtures import encode, gradient, noise

BOX = Image.Resampling.BOX
LANCZOS = Image.Resampling.LANCZOS


def screen(size: tuple[int, int]) -> Image.Image:
    """A gradient with text-like strokes: smooth areas and hard edges, like a screenshot."""
    im = gradient(size)
    draw = ImageDraw.Draw(im)
    for y in range(8, size[1] - 8, 23):
        for x in range(8, size[0] - 40, 61):
            draw.rectangle((x, y, x + 3 + (x * y) % 31, y + 2), fill=(250, 250, 250))
    return im


def psnr(a: Image.Image, b: Image.Image) -> float:
    squared = ImageChops.difference(a, b).point(lambda v: v * v)
    mse = sum(ImageStat.Stat(squared).mean) / len(a.getbands())
    return math.inf if mse == 0 else 10 * math.log10(255**2 / mse)


@pytest.fixture
def one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every band on the calling thread, as on a single-core machine."""
    monkeypatch.setattr(bands, "_helper_pool", lambda: None)


def test_band_layout_depends_on_the_output_size_only() -> None:
    assert band_count(300, 300) == 1  # below MIN_BAND_PIXELS
    assert band_count(2730, 1536) == bands.MAX_BANDS == 2
    assert band_count(1066, 600) == 2
    assert band_count(20000, 20) == 1  # bands would be thinner than MIN_BAND_ROWS


def test_small_outputs_are_one_piece_resizes() -> None:
    src = noise((700, 500))
    one_piece = src.resize((300, 214), LANCZOS)
    assert resize_banded(src, (300, 214), LANCZOS).tobytes() == one_piece.tobytes()


@pytest.mark.parametrize(
    ("source", "size", "resample"),
    [
        ((3840, 2160), (2730, 1536), BOX),  # the benchmark's master
        ((3200, 1800), (2730, 1536), BOX),
        ((3000, 3000), (2048, 2048), BOX),
        ((2730, 1536), (1066, 600), LANCZOS),  # its request variant
        ((1170, 2532), (543, 1175), LANCZOS),  # a phone screenshot, portrait
    ],
)
def test_banded_resize_matches_a_one_piece_resize(
    source: tuple[int, int], size: tuple[int, int], resample: Image.Resampling
) -> None:
    src = screen(source)
    out = resize_banded(src, size, resample)
    assert out.size == size and out.mode == "RGB"
    assert psnr(out, src.resize(size, resample)) > 55


def test_the_benchmark_screenshot_shapes_are_bit_identical() -> None:
    # 3840×2160 → 2730×1536 scales by exactly 45/32: no tap sits on an inexact tie.
    src = noise((3840, 2160))
    one_piece = src.resize((2730, 1536), BOX)
    assert resize_banded(src, (2730, 1536), BOX).tobytes() == one_piece.tobytes()


def test_alpha_is_premultiplied_once_for_the_whole_image() -> None:
    im = screen((1600, 1200)).convert("RGBA")
    alpha = Image.new("L", im.size, 0)
    ImageDraw.Draw(alpha).ellipse((200, 100, 1400, 1100), fill=255)
    im.putalpha(alpha)
    out = resize_banded(im, (1000, 750), LANCZOS)
    reference = im.resize((1000, 750), LANCZOS)
    assert out.mode == "RGBA"
    assert psnr(out.getchannel("A"), reference.getchannel("A")) > 60
    assert psnr(out.convert("RGB"), reference.convert("RGB")) > 55


def test_other_modes_are_resized_in_one_piece() -> None:
    palette = noise((900, 900)).convert("P")
    out = resize_banded(palette, (600, 600), LANCZOS)
    assert out.tobytes() == palette.resize((600, 600), LANCZOS).tobytes()


def test_results_do_not_depend_on_the_number_of_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    src = noise((3024, 1964))
    parallel = resize_banded(src, (2540, 1650), BOX).tobytes()
    monkeypatch.setattr(bands, "_helper_pool", lambda: None)
    assert resize_banded(src, (2540, 1650), BOX).tobytes() == parallel


def test_admission_and_variant_bytes_do_not_depend_on_the_number_of_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = encode(screen((3456, 2234)), "PNG")
    route = ImageRoute(640_000, 1024 * 1024)

    def run() -> tuple[str, bytes]:
        normalized = normalize_image(source, "shot.png")
        att = normalized.attachment("shot.png")
        plan = plan_variant(att, route, DEFAULT_POLICY)
        return normalized.digest, derive_variant(normalized.data, att, plan, DEFAULT_POLICY).data

    parallel = run()
    monkeypatch.setattr(bands, "_helper_pool", lambda: None)
    assert run() == parallel


# -- run_parallel -------------------------------------------------------------------------------


def test_results_come_back_in_order() -> None:
    assert run_parallel([lambda i=i: i * i for i in range(7)]) == [i * i for i in range(7)]
    assert run_parallel([]) == []


def test_the_first_error_is_raised_after_every_task_settled() -> None:
    finished: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> int:
        if i == 1:
            raise ValueError("band 1 failed")
        with lock:
            finished.append(i)
        return i

    with pytest.raises(ValueError, match="band 1"):
        run_parallel([lambda i=i: work(i) for i in range(2)])
    assert finished == [0]


def test_nested_and_concurrent_callers_never_deadlock() -> None:
    """Transforms running in several pool threads each band their own resize at once."""
    src = screen((1600, 1200))
    expected = resize_banded(src, (1000, 750), LANCZOS).tobytes()
    results: list[bytes] = []

    def transform() -> None:
        outer = run_parallel([lambda: resize_banded(src, (1000, 750), LANCZOS) for _ in range(3)])
        results.extend(im.tobytes() for im in outer)

    threads = [threading.Thread(target=transform) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "banded resizes deadlocked"
    assert results == [expected] * 12


def test_one_core_runs_everything_on_the_caller(one_core: None) -> None:
    caller = threading.get_ident()
    assert run_parallel([threading.get_ident for _ in range(3)]) == [caller] * 3
