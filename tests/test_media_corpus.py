"""Every file of the real-image corpus goes through admission.

Each one must either become a valid normalized attachment (8-bit sRGB(A) JPEG/PNG/WebP within
every budget, re-verified by fully decoding the stored bytes) or be refused with a clear
``AdmissionError``; no other exception may escape, and none may take longer than 2 s (a
stated requirement, so it is asserted per file rather than left to the benchmark).
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from dcode.media.attachment import Attachment
from dcode.media.errors import AdmissionError, RejectReason
from dcode.media.facts import probe
from dcode.media.limits import DEFAULT_LIMITS
from dcode.media.store import AttachmentStore, Source
from tests.support.corpus import PILLOW, missing
from tests.test_media_fixtures import band_range, corpus_files, opened, requires_corpus

PER_FILE_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Outcome:
    path: Path
    seconds: float
    attachment: Attachment | None
    error: AdmissionError | None


def admit_all(store: AttachmentStore) -> list[Outcome]:
    outcomes = []
    for path in corpus_files():
        started = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Pillow warns about odd EXIF etc.
                [att] = store.admit([Source.from_path(path)])
            outcome = Outcome(path, time.perf_counter() - started, att, None)
        except AdmissionError as exc:
            outcome = Outcome(path, time.perf_counter() - started, None, exc)
        outcomes.append(outcome)
    return outcomes


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[Outcome]:
    if not PILLOW.is_dir():
        pytest.skip(missing(PILLOW))
    store = AttachmentStore(tmp_path_factory.mktemp("corpus-store"))
    results = admit_all(store)
    _report(results)
    results_store[0] = store
    return results


results_store: dict[int, AttachmentStore] = {}


def _report(results: list[Outcome]) -> None:
    admitted = sum(1 for o in results if o.attachment is not None)
    reasons = Counter(o.error.reason.value for o in results if o.error is not None)
    slowest = max(results, key=lambda o: o.seconds)
    print(
        f"\ncorpus: {len(results)} files, {admitted} admitted, "
        f"{len(results) - admitted} refused {dict(sorted(reasons.items()))}; "
        f"slowest {slowest.path.name} {slowest.seconds * 1000:.0f} ms"
    )


@requires_corpus
def test_whole_corpus_was_processed(outcomes: list[Outcome]) -> None:
    assert len(outcomes) == len(corpus_files()) > 700


@requires_corpus
def test_no_file_takes_over_two_seconds(outcomes: list[Outcome]) -> None:
    slow = [(o.path.name, round(o.seconds, 2)) for o in outcomes if o.seconds > PER_FILE_SECONDS]
    assert not slow


@requires_corpus
@pytest.mark.filterwarnings("ignore::UserWarning")  # Pillow's notes on odd APNG/EXIF inputs
def test_every_admitted_file_is_a_valid_normalized_attachment(outcomes: list[Outcome]) -> None:
    store = results_store[0]
    limits = DEFAULT_LIMITS
    for outcome in outcomes:
        att = outcome.attachment
        if att is None:
            continue
        data = store.path_for(att).read_bytes()
        where = outcome.path.name
        assert hashlib.sha256(data).hexdigest() == att.id, where
        facts = probe(data)
        assert facts.format in ("JPEG", "PNG", "WEBP"), where
        assert facts.bit_depth == 8, where
        assert facts.media_type == att.media_type, where
        im = opened(data)  # a real, full decode of what was stored
        assert im.mode in ("RGB", "RGBA"), where
        assert im.size == (att.width, att.height), where
        assert att.width * att.height <= limits.normalized_max_pixels, where
        assert max(att.width, att.height) <= limits.normalized_max_side, where
        assert len(data) == att.byte_size <= limits.normalized_max_bytes, where
        if att.alpha:
            assert im.mode == "RGBA" and band_range(im.getchannel("A"))[0] < 255, where
        if not att.passthrough:
            assert facts.format == ("WEBP" if att.alpha else "JPEG"), where
            assert "icc_profile" not in im.info and "exif" not in im.info, where
        else:
            assert data == outcome.path.read_bytes(), where


@requires_corpus
def test_every_refusal_is_explained(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        if outcome.error is None:
            continue
        error = outcome.error
        assert error.name == outcome.path.name
        assert isinstance(error.reason, RejectReason)
        assert outcome.path.name in str(error) and len(error.rejections[0].detail) > 5


@requires_corpus
def test_known_bad_files_are_refused(outcomes: list[Outcome]) -> None:
    by_name = {o.path.name: o for o in outcomes}
    expected = {
        "decompression_bomb.gif": RejectReason.DECOMPRESSION_BOMB,
        "decompression_bomb_extents.gif": RejectReason.DECOMPRESSION_BOMB,
        "png_decompression_dos.png": RejectReason.DECOMPRESSION_BOMB,
        "truncated_image.png": RejectReason.TRUNCATED,
        "truncated_jpeg.jpg": RejectReason.TRUNCATED,
        "broken_data_stream.png": RejectReason.CORRUPT,
    }
    for name, reason in expected.items():
        error = by_name[name].error
        assert error is not None and error.reason is reason, name


@requires_corpus
def test_most_of_the_corpus_is_admitted(outcomes: list[Outcome]) -> None:
    admitted = sum(1 for o in outcomes if o.attachment is not None)
    assert admitted >= 650  # the rest are deliberately broken fuzz cases
