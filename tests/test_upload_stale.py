"""Reading a chat error for the file ids it says are gone."""

from __future__ import annotations

from dcode.media.uploads.stale import StaleFiles, stale_files

USED = ("file-abc123", "file-def456", "file-ghi789")


def test_named_ids_are_exactly_the_stale_ones() -> None:
    message = (
        "Invalid file id: file-abc123, file-ghi789 has expired or been deleted. [invalid_file_id]"
    )
    assert stale_files(message, USED) == StaleFiles(
        frozenset({"file-abc123", "file-ghi789"}), named=True
    )


def test_an_unnamed_file_error_suspects_every_id_the_request_used() -> None:
    assert stale_files(
        "File invalid: one or more referenced files are unavailable.", USED
    ) == StaleFiles(frozenset(USED), named=False)


def test_an_id_the_request_did_not_use_is_not_named() -> None:
    result = stale_files("The file file-zzz999 was not found", USED)
    assert result == StaleFiles(frozenset(USED), named=False)


def test_a_longer_id_sharing_a_prefix_is_not_a_match() -> None:
    result = stale_files("file file-abc1234 does not exist", ("file-abc123",))
    assert result is not None and not result.named


def test_errors_not_about_files_are_not_stale() -> None:
    assert stale_files("This model's maximum context length is 128000 tokens.", USED) is None
    assert stale_files("Invalid value for 'temperature'", USED) is None
    assert stale_files("The file was deleted", ()) is None
