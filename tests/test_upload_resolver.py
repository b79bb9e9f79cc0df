"""The resolver against the scripted server's Files API, through the real OpenAI client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import openai
import pytest

from dcode.media.uploads.index import FileMapping, Scope, UploadIndex
from dcode.media.uploads.policy import DAY, HOUR, FilesPolicy
from dcode.media.uploads.resolver import UploadRefused, UploadResolver
from dcode.models.files_api import OpenAIFiles
from dcode.models.user_agent import USER_AGENT
from tests.support.model_server import ScriptedModelServer

KEY = "sk-test-resolver-key"


@dataclass(frozen=True)
class Shot:
    """A request variant on disk, as ``Variant`` is."""

    path: Path
    variant_id: str
    media_type: str = "image/png"

    @property
    def byte_size(self) -> int:
        return self.path.stat().st_size

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()


def shot(tmp_path: Path, name: str, size: int = 2000) -> Shot:
    path = tmp_path / f"{name}.png"
    path.write_bytes(name.encode() * (size // len(name)))
    return Shot(path, f"variant-{name}")


@pytest.fixture
async def files(server: ScriptedModelServer) -> AsyncIterator[OpenAIFiles]:
    client = openai.AsyncOpenAI(
        api_key=KEY,
        base_url=server.base_url,
        max_retries=0,
        default_headers={"User-Agent": USER_AGENT},
    )
    yield OpenAIFiles(client)
    await client.close()


def resolver(
    server: ScriptedModelServer, files: OpenAIFiles, home: Path, **policy: object
) -> UploadResolver:
    scope = Scope.of(server.base_url, KEY)
    return UploadResolver(
        files, UploadIndex(home), scope, FilesPolicy(**policy), clock=server.files.clock
    )  # type: ignore[arg-type]


async def test_one_upload_serves_every_later_request(server, files, tmp_path: Path) -> None:
    uploads = resolver(server, files, tmp_path / "home")
    image = shot(tmp_path, "a")
    first = await uploads.resolve(image)
    second = await uploads.resolve(image)
    assert first == second and len(server.files.uploads) == 1
    upload = server.files.uploads[0]
    assert upload.content == image.read_bytes() and upload.filename.startswith("dcode-variant-a")
    assert upload.expires_after == {"anchor": "created_at", "seconds": 7 * DAY}
    assert first.expires_at == pytest.approx(server.files.clock() + 7 * DAY, abs=5)
    # Another process (a new resolver on the same home) reuses the same file, asking nothing.
    again = resolver(server, files, tmp_path / "home")
    assert await again.resolve(image) == first and len(server.files.requests) == 1
    assert all(r.headers.get("user-agent") == USER_AGENT for r in server.files.requests)


async def test_a_mapping_inside_its_last_hour_is_replaced_without_asking_the_remote(
    server, files, tmp_path: Path
) -> None:
    uploads = resolver(server, files, tmp_path / "home")
    image = shot(tmp_path, "a")
    old = await uploads.resolve(image)
    server.files.advance(7 * DAY - HOUR + 60)  # 59 minutes left
    new = await uploads.resolve(image)
    assert new.file_id != old.file_id and uploads.stats.refreshed == 1
    assert [r.method for r in server.files.requests] == ["POST", "POST"]  # no GET of the old id
    assert UploadIndex(tmp_path / "home").lookup(uploads.scope, image.variant_id) == new


@pytest.mark.parametrize("kind", ["incomplete", "wrong_bytes", "error"])
async def test_an_answer_that_is_not_a_whole_file_object_leaves_no_mapping(
    server, files, tmp_path: Path, kind: str
) -> None:
    uploads = resolver(server, files, tmp_path / "home")
    image = shot(tmp_path, "a")
    server.files.fail_next_upload(kind)
    with pytest.raises(Exception) as failure:  # noqa: PT011 - the kind decides the type, checked below
        await uploads.resolve(image)
    assert isinstance(failure.value, UploadRefused) or kind == "error"
    assert UploadIndex(tmp_path / "home").mappings(uploads.scope) == []
    mapping = await uploads.resolve(image)  # the next request uploads again
    assert len(server.files.uploads) == 2 and mapping.file_id in server.files.stored


async def test_a_quota_error_deletes_the_oldest_own_files_after_listing_every_page(
    server, files, tmp_path: Path
) -> None:
    server.files.page_size = 2
    foreign = server.files.add(b"theirs", filename="report.pdf")
    uploads = resolver(server, files, tmp_path / "home", quota_release=3)
    images = [shot(tmp_path, f"s{n}") for n in range(5)]
    for image in images:
        await uploads.resolve(image)
        server.files.advance(10)  # distinct creation times
    server.files.fail_next_upload("quota")
    fresh = await uploads.resolve(shot(tmp_path, "new"))
    deleted = server.files.deleted
    oldest = [
        m.file_id
        for m in sorted(
            UploadIndex(tmp_path / "home").mappings(uploads.scope), key=lambda m: m.created_at
        )
    ]
    assert len(deleted) == 3 and foreign.id not in deleted
    assert fresh.file_id not in deleted and all(i not in oldest for i in deleted)
    actions = [r.action for r in server.files.requests]
    last_list = max(i for i, a in enumerate(actions) if a == "list")
    first_delete = actions.index("delete")
    assert last_list < first_delete and actions.count("list") >= 3  # every page before any delete
    assert (
        len(UploadIndex(tmp_path / "home").mappings(uploads.scope)) == 3
    )  # 5 - 3 released + the new one


async def test_a_second_quota_error_is_the_answer(server, files, tmp_path: Path) -> None:
    uploads = resolver(server, files, tmp_path / "home")
    server.files.fail_next_upload("quota", times=2)
    with pytest.raises(UploadRefused, match="no room"):
        await uploads.resolve(shot(tmp_path, "a"))
    assert len(server.files.uploads) == 2  # the upload and its one retry


async def test_the_documented_limits_are_checked_before_any_call(
    server, files, tmp_path: Path
) -> None:
    uploads = resolver(server, files, tmp_path / "home", max_chat_image_bytes=1000)
    with pytest.raises(UploadRefused, match="over"):
        await uploads.resolve(shot(tmp_path, "big", size=2000))
    assert server.files.requests == []
    counted = resolver(server, files, tmp_path / "home2", max_files=2, quota_release=1)
    for n in range(2):
        await counted.resolve(shot(tmp_path, f"c{n}"))
        server.files.advance(10)
    await counted.resolve(shot(tmp_path, "c2"))  # over the count: the oldest goes first
    assert len(server.files.deleted) == 1 and len(counted.index.mappings(counted.scope)) == 2


async def test_concurrent_resolutions_share_one_upload(server, files, tmp_path: Path) -> None:
    uploads = resolver(server, files, tmp_path / "home")
    image = shot(tmp_path, "a")
    results = await asyncio.gather(*(uploads.resolve(image) for _ in range(5)))
    assert len({r.file_id for r in results}) == 1 and len(server.files.uploads) == 1


async def test_one_waiter_cancelling_does_not_cancel_the_others(
    server, files, tmp_path: Path
) -> None:
    server.files.upload_delay = 0.5
    uploads = resolver(server, files, tmp_path / "home")
    image = shot(tmp_path, "a")
    leaving = asyncio.ensure_future(uploads.resolve(image))
    staying = asyncio.ensure_future(uploads.resolve(image))
    await asyncio.sleep(0.2)
    leaving.cancel()
    mapping = await staying
    assert leaving.cancelled() and mapping.file_id in server.files.stored
    assert len(server.files.uploads) == 1


async def test_the_upload_stops_when_every_waiter_has_cancelled(
    server, files, tmp_path: Path
) -> None:
    server.files.upload_delay = 1.0
    uploads = resolver(server, files, tmp_path / "home")
    image = shot(tmp_path, "a")
    waiters = [asyncio.ensure_future(uploads.resolve(image)) for _ in range(2)]
    await asyncio.sleep(0.2)
    for waiter in waiters:
        waiter.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)
    await asyncio.sleep(
        1.2
    )  # the server has answered by now: had the upload gone on, it would be indexed
    assert UploadIndex(tmp_path / "home").mappings(uploads.scope) == []
    assert uploads.stats.uploads == 0


async def test_a_dead_endpoint_is_a_files_error_not_a_hang(tmp_path: Path) -> None:
    client = openai.AsyncOpenAI(
        api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=httpx2.Timeout(2.0)
    )
    uploads = UploadResolver(
        OpenAIFiles(client), UploadIndex(tmp_path), Scope.of("http://127.0.0.1:9/v1", KEY)
    )
    with pytest.raises(Exception, match="upload failed"):
        await uploads.resolve(shot(tmp_path, "a"))
    await client.close()


def test_forgotten_ids_are_dropped_exactly(tmp_path: Path) -> None:
    index = UploadIndex(tmp_path)
    scope = Scope.of("http://a/v1", KEY)
    for n in range(3):
        index.put(scope, FileMapping(f"v{n}", f"file-{n}", 1, 10**10, n, "dcode-x"))
    uploads = UploadResolver(None, index, scope)  # type: ignore[arg-type]  # forgetting asks no remote
    asyncio.run(uploads.forget({"file-1"}))
    assert [m.file_id for m in index.mappings(scope)] == ["file-0", "file-2"]
