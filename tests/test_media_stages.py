"""Stage timings: recorded only on request, and covering the pipeline's named stages."""

from __future__ import annotations

import threading
from pathlib import Path

from dcode.media.limits import ImageRoute
from dcode.media.pool import TransformPool
from dcode.media.stages import recording, stage
from dcode.media.store import AttachmentStore
from dcode.media.variants import VariantService
from tests.test_media_fixtures import encode, noise


def test_nothing_is_recorded_without_a_recording() -> None:
    with stage("decode"):
        pass
    with recording() as timings:
        pass
    assert timings == {}


def test_repeated_stages_add_up() -> None:
    with recording() as timings:
        for _ in range(3):
            with stage("encode"):
                pass
    assert set(timings) == {"encode"} and timings["encode"] >= 0


def test_recordings_belong_to_their_own_thread() -> None:
    seen: dict[str, float] = {}

    def other() -> None:
        with stage("elsewhere"):
            pass

    with recording() as timings:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        seen.update(timings)
    assert seen == {}


def test_the_pipeline_reports_every_stage(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path / "attachments")
    with recording() as timings, TransformPool() as pool:
        [att] = store.admit([(encode(noise((2400, 1600)), "PNG"), "big.png")])
        VariantService(store, pool).get_sync(att, ImageRoute(640_000, 1024 * 1024))
    admission = {"decode", "colour", "resize", "encode", "verify", "store"}
    variant = {f"variant_{s}" for s in ("lookup", "read", "decode", "resize", "encode", "verify")}
    assert admission | variant | {"variant_store"} <= set(timings)
    assert all(ms >= 0 for ms in timings.values())
