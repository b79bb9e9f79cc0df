"""The upload index: per endpoint and key scope, private, never the key, malformed reads empty."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from dcode.media.uploads.index import INDEX_NAME, FileMapping, Scope, UploadIndex

KEY = "sk-proj-very-secret-key-0123456789"


def mapping(
    variant: str, file_id: str, *, created: int = 100, expires: int = 10_000
) -> FileMapping:
    return FileMapping(variant, file_id, 1234, expires, created, f"dcode-{variant}.jpg")


def test_a_mapping_round_trips_per_scope(tmp_path: Path) -> None:
    index = UploadIndex(tmp_path)
    here, other_key, other_endpoint = (
        Scope.of("http://a/v1/", KEY),
        Scope.of("http://a/v1", "sk-other"),
        Scope.of("http://b/v1", KEY),
    )
    index.put(here, mapping("v1", "file-1"))
    assert index.lookup(here, "v1") == mapping("v1", "file-1")
    assert (
        index.lookup(Scope.of("http://a/v1", KEY), "v1") is not None
    )  # the trailing slash is the same endpoint
    assert index.lookup(other_key, "v1") is None
    assert index.lookup(other_endpoint, "v1") is None
    # A second instance (another process) reads what the first wrote.
    assert UploadIndex(tmp_path).mappings(here) == [mapping("v1", "file-1")]


def test_the_key_never_reaches_the_file_and_the_file_is_private(tmp_path: Path) -> None:
    index = UploadIndex(tmp_path)
    index.put(Scope.of("http://a/v1", KEY), mapping("v1", "file-1"))
    text = (tmp_path / INDEX_NAME).read_text()
    assert KEY not in text and KEY[8:24] not in text
    assert stat.S_IMODE(os.stat(tmp_path / INDEX_NAME).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "uploads.lock").st_mode) == 0o600


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe\x00garbage",
        b'{"version": 1, "scopes": []}',
        b'{"version": 99, "scopes": {}}',
        b"[1, 2]",
    ],
)
def test_a_malformed_index_reads_empty_and_is_replaced_by_the_next_write(
    tmp_path: Path, content: bytes
) -> None:
    (tmp_path / INDEX_NAME).write_bytes(content)
    index = UploadIndex(tmp_path)
    scope = Scope.of("http://a/v1", KEY)
    assert index.lookup(scope, "v1") is None and index.mappings(scope) == []
    index.put(scope, mapping("v1", "file-1"))
    assert json.loads((tmp_path / INDEX_NAME).read_text())["version"] == 1
    assert UploadIndex(tmp_path).lookup(scope, "v1") == mapping("v1", "file-1")


def test_a_damaged_entry_is_skipped_and_the_others_kept(tmp_path: Path) -> None:
    scope = Scope.of("http://a/v1", KEY)
    good = mapping("v2", "file-2").to_json()
    data = {
        "version": 1,
        "scopes": {scope.name: {"v1": {"file_id": "file-1"}, "v2": good, "v3": "nonsense"}},
    }
    (tmp_path / INDEX_NAME).write_text(json.dumps(data))
    assert [m.variant_id for m in UploadIndex(tmp_path).mappings(scope)] == ["v2"]


def test_an_io_failure_is_an_error_not_an_empty_index(tmp_path: Path) -> None:
    (tmp_path / INDEX_NAME).mkdir()  # a directory where the file should be
    with pytest.raises(IsADirectoryError):
        UploadIndex(tmp_path).lookup(Scope.of("http://a/v1", KEY), "v1")


def test_drops_by_file_variant_and_scope(tmp_path: Path) -> None:
    index = UploadIndex(tmp_path)
    scope, other = Scope.of("http://a/v1", KEY), Scope.of("http://a/v1", "sk-other")
    for n in range(4):
        index.put(scope, mapping(f"v{n}", f"file-{n}", created=n))
    index.put(other, mapping("v0", "file-x"))
    assert [m.file_id for m in index.drop_files(scope, {"file-1", "file-9"})] == ["file-1"]
    assert [m.variant_id for m in index.drop_variants(scope, ["v2"])] == ["v2"]
    assert [m.file_id for m in index.mappings(scope)] == ["file-0", "file-3"]  # oldest first
    assert len(index.drop_scope(scope)) == 2 and index.mappings(scope) == []
    assert index.lookup(other, "v0") is not None


def _writer(home: str, start: int) -> None:
    index = UploadIndex(Path(home))
    for n in range(start, start + 25):
        index.put(Scope.of("http://a/v1", KEY), mapping(f"v{n}", f"file-{n}"))


def test_two_processes_writing_at_once_both_keep_their_mappings(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_writer, args=(str(tmp_path), start)) for start in (0, 100)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    ids = {m.variant_id for m in UploadIndex(tmp_path).mappings(Scope.of("http://a/v1", KEY))}
    assert ids == {f"v{n}" for n in (*range(25), *range(100, 125))}
