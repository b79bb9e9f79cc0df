"""Normalization against real files: orientation, colour, bit depth, alpha, passthrough, bombs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageCms, ImageStat

from dcode.media.encode import Encoded
from dcode.media.errors import ImageRejected, RejectReason
from dcode.media.limits import AdmissionLimits
from dcode.media.normalize import NormalizedImage, normalize_image
from tests.test_media_fixtures import (
    band_range,
    corpus_file,
    display_p3_profile,
    encode,
    gradient,
    noise,
    opened,
    pixel,
    png16,
    requires_corpus,
)

MiB = 1024 * 1024


def normalize_file(path: Path, limits: AdmissionLimits | None = None) -> NormalizedImage:
    if limits is None:
        return normalize_image(path.read_bytes(), path.name)
    return normalize_image(path.read_bytes(), path.name, limits)


def rejection(data: bytes, limits: AdmissionLimits | None = None) -> RejectReason:
    with pytest.raises(ImageRejected) as info:
        normalize_image(data, "x", limits) if limits else normalize_image(data, "x")
    return info.value.rejection.reason


def signature(im: Image.Image) -> Image.Image:
    return im.convert("RGB").resize((16, 16), Image.Resampling.BOX)


def distance(a: Image.Image, b: Image.Image) -> float:
    """Mean absolute difference of 16×16 thumbnails, 0..255."""
    return sum(ImageStat.Stat(ImageChops.difference(signature(a), signature(b))).mean) / 3


def assert_normalized_facts(n: NormalizedImage) -> Image.Image:
    im = opened(n.data)
    assert im.format == n.format and im.format in ("JPEG", "PNG", "WEBP")
    assert im.size == (n.width, n.height)
    assert im.mode in ("RGB", "RGBA")
    assert "icc_profile" not in im.info or n.passthrough
    return im


# -- orientation -------------------------------------------------------------------------------


@requires_corpus
@pytest.mark.parametrize("ext", ["jpg", "webp"])
@pytest.mark.parametrize("orientation", range(2, 9))
def test_exif_orientation_comes_out_upright(ext: str, orientation: int) -> None:
    reference = opened(corpus_file("hopper.jpg").read_bytes())
    source = corpus_file(f"hopper_orientation_{orientation}.{ext}")
    raw = opened(source.read_bytes())
    n = normalize_file(source)
    out = assert_normalized_facts(n)
    assert distance(out, reference) < 5, "normalized image is not upright"
    assert distance(raw, reference) > 20, "fixture unexpectedly already upright"
    assert not n.passthrough
    assert 0x0112 not in out.getexif()


def test_orientation_6_is_baked_in_and_metadata_stripped() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6
    exif[0x010F] = "CameraMaker"
    data = encode(gradient((4, 2)), "JPEG", quality=95, exif=exif)
    n = normalize_image(data, "phone.jpg")
    out = assert_normalized_facts(n)
    assert (n.width, n.height) == (2, 4)
    assert (n.original.width, n.original.height) == (2, 4)
    assert "exif" not in out.info and len(out.getexif()) == 0


@requires_corpus
def test_rectangle_orientation_swaps_sides() -> None:
    n = normalize_file(corpus_file("orientation_rectangle.jpg"))
    assert (n.width, n.height) == (1, 2)


@requires_corpus
@pytest.mark.parametrize("orientation", range(2, 9))
def test_tiff_orientation(orientation: int) -> None:
    reference = opened(corpus_file("g4_orientation_1.tif").read_bytes())
    out = opened(normalize_file(corpus_file(f"g4_orientation_{orientation}.tif")).data)
    assert distance(out, reference) < 5


# -- colour and bit depth ---------------------------------------------------------------------


def test_sixteen_bit_grey_is_scaled_not_clipped() -> None:
    ramp = Image.new("I;16", (256, 4))
    ramp.putdata([x * 257 for x in range(256)] * 4)
    n = normalize_image(encode(ramp, "PNG"), "ramp16.png")
    out = assert_normalized_facts(n).convert("L")
    low, high = band_range(out)
    assert low <= 3 and high >= 250  # a clipping conversion would be all 255 past v=255
    assert abs(pixel(out, (128, 1))[0] - 128) <= 3


@requires_corpus
@pytest.mark.parametrize(
    "name",
    ["16bit.cropped.tif", "16bit.MM.deflate.tif", "tiff_16bit_RGB.tiff", "uint16_1_4660.tif"],
)
def test_sixteen_bit_tiffs_become_8_bit(name: str) -> None:
    n = normalize_file(corpus_file(name))
    out = assert_normalized_facts(n)
    assert out.mode == "RGB" and n.format == "JPEG"


@requires_corpus
def test_uniform_16_bit_value_maps_by_nominal_range() -> None:
    out = opened(normalize_file(corpus_file("uint16_1_4660.tif")).data).convert("L")
    assert abs(pixel(out, (5, 5))[0] - round(4660 / 257)) <= 2


@requires_corpus
def test_sixteen_bit_apng_is_not_passed_through() -> None:
    n = normalize_file(corpus_file("apng/mode_16bit.png"))  # opaque, three frames
    out = assert_normalized_facts(n)
    assert not n.passthrough and out.mode == "RGB"


def test_sixteen_bit_rgb_png_is_converted_not_passed_through() -> None:
    # Pillow reports a 16-bit RGB PNG as plain "RGB": only IHDR tells, so it must be read.
    data = png16(16, 16, (0x8080, 0x4040, 0xFFFF))
    n = normalize_image(data, "deep.png")
    out = assert_normalized_facts(n)
    assert not n.passthrough and n.format == "JPEG"
    r, g, b = pixel(out, (8, 8))
    assert abs(r - 128) <= 3 and abs(g - 64) <= 3 and b >= 250


def test_sixteen_bit_rgba_png_keeps_its_alpha() -> None:
    n = normalize_image(png16(16, 16, (0xFFFF, 0, 0, 0x8000)), "deep-alpha.png")
    out = assert_normalized_facts(n)
    assert n.format == "WEBP" and n.alpha and out.mode == "RGBA"
    assert abs(pixel(out, (8, 8))[3] - 128) <= 1


@requires_corpus
def test_sixteen_bit_rgba_tiff_keeps_alpha() -> None:
    n = normalize_file(corpus_file("tiff_16bit_RGBa.tiff"))
    assert n.alpha and n.format == "WEBP"
    assert assert_normalized_facts(n).mode == "RGBA"


@requires_corpus
@pytest.mark.parametrize("name", ["pil_sample_cmyk.jpg", "tiff_strip_cmyk_jpeg.tif"])
def test_cmyk_becomes_srgb(name: str) -> None:
    n = normalize_file(corpus_file(name))
    out = assert_normalized_facts(n)
    assert out.mode == "RGB" and n.format == "JPEG"
    if name == "pil_sample_cmyk.jpg":
        assert distance(out, opened(corpus_file("pil_sample_rgb.jpg").read_bytes())) < 8


@requires_corpus
def test_lab_becomes_srgb() -> None:
    out = opened(normalize_file(corpus_file("hopper.Lab.tif")).data)
    assert distance(out, opened(corpus_file("hopper.png").read_bytes())) < 6


@requires_corpus
def test_float_samples_are_windowed() -> None:
    out = opened(normalize_file(corpus_file("10ct_32bit_128.tiff")).data).convert("L")
    low, high = band_range(out)
    assert low <= 5 and high >= 250


def test_display_p3_profile_is_applied_then_dropped() -> None:
    p3 = display_p3_profile()
    source = Image.new("RGB", (32, 32), (200, 100, 50))
    n = normalize_image(encode(source, "PNG", icc_profile=p3), "p3.png")
    out = assert_normalized_facts(n)
    assert "icc_profile" not in out.info and not n.passthrough
    expected = ImageCms.profileToProfile(
        source, ImageCms.ImageCmsProfile(io.BytesIO(p3)), ImageCms.createProfile("sRGB")
    )
    assert expected is not None
    got, want = pixel(out, (16, 16)), pixel(expected, (16, 16))
    assert all(abs(a - b) <= 3 for a, b in zip(got, want, strict=True))
    assert max(abs(a - b) for a, b in zip(got, (200, 100, 50), strict=True)) > 10


@requires_corpus
def test_foreign_rgb_profile_from_a_real_file_is_applied() -> None:
    n = normalize_file(corpus_file("truncated_exif_dpi.jpg"))  # "Generic RGB Profile"
    assert "icc_profile" not in assert_normalized_facts(n).info


def test_srgb_profile_does_not_prevent_passthrough() -> None:
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    data = encode(gradient((64, 48)), "PNG", icc_profile=srgb)
    n = normalize_image(data, "srgb.png")
    assert n.passthrough and n.data == data


# -- alpha ----------------------------------------------------------------------------------------


def test_real_alpha_becomes_webp_and_keeps_its_values() -> None:
    im = gradient((64, 64)).convert("RGBA")
    alpha = Image.new("L", (64, 64), 255)
    alpha.paste(0, (0, 0, 32, 64))
    alpha.paste(128, (32, 0, 48, 64))
    im.putalpha(alpha)
    data = encode(im, "PNG", pnginfo=_text_chunk())  # the text chunk forces re-encoding
    n = normalize_image(data, "alpha.png")
    out = assert_normalized_facts(n)
    assert n.format == "WEBP" and n.alpha and out.mode == "RGBA"
    assert pixel(out, (10, 10))[3] == 0
    assert pixel(out, (40, 10))[3] == 128
    assert pixel(out, (60, 10))[3] == 255


def test_opaque_rgba_becomes_jpeg() -> None:
    data = encode(gradient((40, 30)).convert("RGBA"), "PNG", pnginfo=_text_chunk())
    n = normalize_image(data, "opaque.png")
    assert n.format == "JPEG" and not n.alpha


@requires_corpus
def test_palette_transparency_becomes_alpha() -> None:
    n = normalize_file(corpus_file("transparent.gif"))
    assert n.alpha and n.format == "WEBP"


def _text_chunk() -> object:
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "test")
    return info


# -- first frame ----------------------------------------------------------------------------------


def test_animated_gif_gives_its_first_frame() -> None:
    frames = [Image.new("RGB", (20, 20), c) for c in ((255, 0, 0), (0, 0, 255), (0, 255, 0))]
    data = encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100)
    out = opened(normalize_image(data, "anim.gif").data).convert("RGB")
    r, g, b = pixel(out, (10, 10))
    assert r > 200 and g < 50 and b < 50


def test_animated_webp_is_not_passed_through() -> None:
    frames = [Image.new("RGB", (20, 20), c) for c in ((255, 0, 0), (0, 0, 255))]
    data = encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], lossless=True)
    n = normalize_image(data, "anim.webp")
    assert not n.passthrough and n.format == "JPEG"


# -- passthrough ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "mode", "params"),
    [
        ("PNG", "RGB", {}),
        ("PNG", "RGBA", {}),
        ("JPEG", "RGB", {"quality": 90}),
        ("WEBP", "RGB", {"quality": 80}),
        ("WEBP", "RGBA", {"lossless": True}),
    ],
)
def test_clean_sources_pass_through_byte_for_byte(
    fmt: str, mode: str, params: dict[str, object]
) -> None:
    im = gradient((120, 80)).convert(mode)
    if mode == "RGBA":
        im.putalpha(Image.new("L", im.size, 200))
    data = encode(im, fmt, **params)
    n = normalize_image(data, f"clean.{fmt.lower()}")
    assert n.passthrough and n.data == data and n.format == fmt
    assert n.alpha == (mode == "RGBA")


@requires_corpus
@pytest.mark.parametrize("name", ["hopper_mask.png", "hopper.webp", "imagedraw_rectangle.png"])
def test_clean_corpus_files_pass_through(name: str) -> None:
    path = corpus_file(name)
    n = normalize_file(path)
    assert n.passthrough and n.data == path.read_bytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda: encode(gradient((50, 50)), "JPEG", exif=_exif_orientation_1()),
        lambda: encode(gradient((50, 50)), "PNG", pnginfo=_text_chunk()),
        lambda: encode(gradient((50, 50)).convert("P"), "PNG"),
        lambda: encode(gradient((50, 50)).convert("L"), "PNG"),
        lambda: encode(gradient((50, 50)), "PNG", icc_profile=display_p3_profile()),
        lambda: encode(gradient((50, 50)), "JPEG", comment=b"hello"),
    ],
    ids=["exif", "text-chunk", "palette", "grey", "p3", "jpeg-comment"],
)
def test_unclean_sources_are_re_encoded(make: object) -> None:
    assert callable(make)
    data = make()
    n = normalize_image(data, "unclean")
    assert not n.passthrough and n.data != data


def test_sources_over_the_box_are_scaled_not_passed_through() -> None:
    data = encode(gradient((2100, 2100)), "PNG")
    n = normalize_image(data, "big.png")
    assert not n.passthrough and (n.width, n.height) == (2048, 2048)
    assert (n.original.width, n.original.height, n.original.format) == (2100, 2100, "PNG")


def test_clean_source_over_the_byte_target_is_re_encoded() -> None:
    data = encode(noise((1200, 1200)), "PNG")
    assert len(data) > 4 * MiB
    n = normalize_image(data, "noise.png")
    assert not n.passthrough and n.format == "JPEG" and len(n.data) <= 4 * MiB


def _exif_orientation_1() -> Image.Exif:
    exif = Image.Exif()
    exif[0x0112] = 1
    exif[0x8825] = {2: (1.0, 2.0, 3.0)}  # a GPS position: exactly what must not leak
    return exif


# -- the quality ladder and output validation ------------------------------------------------------


def test_ladder_keeps_the_smallest_when_nothing_fits() -> None:
    limits = AdmissionLimits(normalized_max_bytes=1000)
    n = normalize_image(encode(noise((300, 300)), "PNG"), "noise.png", limits)
    out = assert_normalized_facts(n)
    at_60 = encode(out.convert("RGB"), "JPEG", quality=60)
    assert n.format == "JPEG" and len(n.data) > 1000
    assert abs(len(n.data) - len(at_60)) < len(at_60) * 0.2


def test_output_is_validated_before_it_gets_an_id(monkeypatch: pytest.MonkeyPatch) -> None:
    def lying_encoder(im: Image.Image, max_bytes: int, policy: object) -> Encoded:
        data = encode(im.convert("RGB"), "PNG")
        return Encoded(data, "JPEG", im.width, im.height, False, 85, True)

    monkeypatch.setattr("dcode.media.normalize.encode_ladder", lying_encoder)
    data = encode(gradient((30, 30)), "PNG", pnginfo=_text_chunk())
    assert rejection(data) is RejectReason.OUTPUT_INVALID
