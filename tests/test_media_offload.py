"""Request-size offload: the stepped oldest-first prefix and its two passes."""

from __future__ import annotations

import pytest

from dcode.media.offload import (
    OffloadLimits,
    base64_length,
    byte_prefix,
    count_prefix,
    offload_two_pass,
    placeholder_text,
    plan_offload,
    refine_offload,
    upper_bound,
)

MiB = 1024 * 1024


def test_129_one_mib_images_drop_the_oldest_65() -> None:
    plan = plan_offload([MiB] * 129)
    assert plan.drop == 65 and plan.by == "bytes"
    assert plan.kept_bytes == 64 * MiB
    assert list(plan.dropped) == list(range(65))


def test_nothing_dropped_within_limits() -> None:
    plan = plan_offload([MiB] * 128)
    assert plan.drop == 0 and plan.by == "none" and plan.kept_bytes == 128 * MiB
    assert plan_offload([]).drop == 0


def test_prefix_is_stable_until_the_history_passes_192_mib() -> None:
    drops = {n: plan_offload([MiB] * n).drop for n in range(120, 260)}
    assert all(drops[n] == 0 for n in range(120, 129))
    assert all(drops[n] == 65 for n in range(129, 193)), "prefix moved before 192 MiB"
    assert drops[193] == 129  # just past 192 MiB: the next whole step
    assert all(drops[n] == 129 for n in range(193, 257))
    assert drops[257] == 193


def test_byte_sweep_in_small_units_keeps_the_prefix() -> None:
    # Grow the history one 256 KiB image at a time: the dropped prefix changes only when the
    # total crosses L + k·S.
    quarter = MiB // 4
    limits = OffloadLimits()
    previous = None
    changes = []
    for n in range(1, 1100):
        drop = plan_offload([quarter] * n, limits).drop
        if drop != previous:
            changes.append((n * quarter / MiB, drop))
            previous = drop
    totals = [total for total, _ in changes[1:]]
    assert totals == [128.25, 192.25, 256.25]


def test_uneven_sizes_drop_the_shortest_prefix_exceeding_k_steps() -> None:
    limits = OffloadLimits(max_bytes=100, max_images=600)
    # total 130 > 100; k = ceil(30/50) = 1; need a prefix with more than 50 bytes.
    assert byte_prefix([30, 20, 5, 75], limits) == 3
    assert byte_prefix([60, 10, 60], limits) == 1


def test_count_rule_drops_whole_steps_of_twenty() -> None:
    assert count_prefix(600) == 0
    assert count_prefix(601) == 20
    assert count_prefix(620) == 20
    assert count_prefix(621) == 40
    plan = plan_offload([10] * 601)
    assert plan.drop == 20 and plan.by == "count"


def test_the_longer_prefix_wins() -> None:
    limits = OffloadLimits(max_bytes=1000, max_images=10, count_step=5)
    sizes = [100] * 12  # 1200 bytes: k=1 → drop > 500 → 6; count: 12 > 10 → 5
    plan = plan_offload(sizes, limits)
    assert plan.drop == 6 and plan.by == "bytes"
    sizes = [1] * 30  # bytes fine; count drops 20
    assert plan_offload(sizes, limits).drop == 20


def test_upper_bound_and_base64() -> None:
    assert upper_bound(5 * MiB, MiB) == MiB
    assert upper_bound(1000, MiB) == 1000
    assert base64_length(3) == 4 and base64_length(4) == 8


def test_second_pass_never_re_adds_and_never_reads_dropped_images() -> None:
    bounds = [MiB] * 129
    measured: list[int] = []

    def measure(i: int) -> int | None:
        measured.append(i)
        return MiB // 2  # real variants came out smaller than their bound

    plan = offload_two_pass(bounds, measure)
    assert plan.drop == 65, "a smaller exact size must not bring dropped images back"
    assert min(measured) == 65 and len(measured) == 64


def test_second_pass_drops_more_when_exact_sizes_exceed_bounds() -> None:
    limits = OffloadLimits(max_bytes=100)
    bounds = [10] * 10  # 100 bytes: nothing to drop on bounds
    first = plan_offload(bounds, limits)
    assert first.drop == 0
    exact: list[int | None] = [30] * 10  # unreachable budgets made them bigger
    second = refine_offload(first, bounds, exact, limits)
    assert second.drop > 0 and second.kept_bytes <= 300


def test_missing_attachment_dropped_in_pass_one_never_blocks() -> None:
    def measure(i: int) -> int | None:
        if i < 65:
            raise AssertionError(f"image {i} was dropped in pass one and must not be read")
        return MiB

    assert offload_two_pass([MiB] * 129, measure).drop == 65


def test_missing_kept_attachment_counts_as_a_placeholder() -> None:
    plan = offload_two_pass([MiB] * 129, lambda i: None if i == 100 else MiB)
    assert plan.drop == 65 and plan.kept_bytes == 63 * MiB


def test_negative_sizes_and_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="image sizes must be >= 0"):
        plan_offload([-1])
    with pytest.raises(ValueError, match="max_bytes must be > 0"):
        OffloadLimits(max_bytes=0)
    with pytest.raises(ValueError, match="bounds and exact must describe the same images"):
        refine_offload(plan_offload([1]), [1], [1, 2])


def test_placeholder_is_one_line_that_says_how_to_read_again() -> None:
    text = placeholder_text(
        "screen shot.png", "/home/u/.dcode/attachments/objects/ab/ab.jpg", width=1130, height=565
    )
    assert "\n" not in text
    assert "screen shot.png" in text and "1130x565" in text
    assert "read_file" in text and "/home/u/.dcode/attachments/objects/ab/ab.jpg" in text
