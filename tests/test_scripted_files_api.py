"""Tests of the scripted server's Files API, driven by the real ``openai`` SDK.

dcode will upload images with ``AsyncOpenAI().files`` and refer to them by id in chat requests,
so the server must answer exactly what the SDK parses (multipart uploads, cursor pages it walks
by itself, OpenAI's error bodies) and refuse chat requests that name files that are gone.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.files_api import referenced_file_ids
from tests.support.model_server import (
    FileError,
    ModelServerProcess,
    ScriptedModelServer,
    fault,
    reply,
    steps_from_json,
    steps_to_json,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) + b"\r\n--not-a-boundary\r\n"
"""Binary content with CR/LF and dashes, which a careless multipart parser would mangle."""
T0 = 1_800_000_000.75
HOUR = {"anchor": "created_at", "seconds": 3600}


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as running:
        running.files.now = lambda: T0
        yield running


@pytest.fixture
def client(server: ScriptedModelServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=5) as sync:
        yield sync


@pytest.fixture
async def aclient(server: ScriptedModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=5
    ) as async_client:
        yield async_client


def upload(
    client: openai.OpenAI, name: str = "shot.png", content: bytes = PNG, **kwargs: Any
) -> Any:
    return client.files.create(
        file=(name, content, "image/png"), purpose=kwargs.pop("purpose", "vision"), **kwargs
    )


def post_json(server: ScriptedModelServer, path: str, body: Any) -> tuple[int, Any]:
    """A raw POST, so the test sees the status and body whatever the SDK would make of them."""
    request = urllib.request.Request(
        f"{server.url}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def chat_body(*file_ids: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": "what is in these?"}]
    parts += [{"type": "file", "file": {"file_id": i}} for i in file_ids]
    return {"model": "test-model", "messages": [{"role": "user", "content": parts}]}


def responses_input(*file_ids: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": "what is in these?"}]
    parts += [{"type": "input_image", "file_id": i, "detail": "auto"} for i in file_ids]
    return [{"role": "user", "content": parts}]


# -- uploads --------------------------------------------------------------


async def test_upload_with_expiry_is_stored_and_recorded_without_using_the_script(
    server: ScriptedModelServer, aclient: openai.AsyncOpenAI
) -> None:
    server.script(reply("kept for the chat"))
    created = await aclient.files.create(
        file=("shot.png", PNG, "image/png"), purpose="vision", expires_after=HOUR
    )

    assert created.id.startswith("file-")
    assert (created.object, created.bytes, created.filename, created.purpose, created.status) == (
        "file",
        len(PNG),
        "shot.png",
        "vision",
        "processed",
    )
    assert created.created_at == 1_800_000_000
    assert created.expires_at == 1_800_000_000 + 3600
    [sent] = server.files.uploads
    assert (sent.filename, sent.content_type, sent.purpose, sent.content) == (
        "shot.png",
        "image/png",
        "vision",
        PNG,
    )
    assert sent.expires_after == HOUR
    assert (sent.status, sent.file_id, sent.bytes) == (200, created.id, len(PNG))
    assert server.files.stored[created.id].content == PNG
    assert server.requests == []
    assert len(server.remaining) == 1
    assert [r.path for r in server.all_requests] == ["/v1/files"]


def test_upload_without_expiry_never_expires_and_ids_are_unique(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    first, second = upload(client, purpose="user_data"), upload(client)
    assert first.expires_at is None and first.purpose == "user_data"
    assert server.files.uploads[0].expires_after is None
    assert first.id != second.id
    server.files.advance(365 * 24 * 3600)
    assert client.files.retrieve(first.id).id == first.id


@pytest.mark.parametrize(
    "expires_after",
    [{"anchor": "created_at", "seconds": 60}, {"anchor": "last_used_at", "seconds": 3600}],
)
def test_an_expiry_openai_refuses_is_refused_and_nothing_stored(
    server: ScriptedModelServer, client: openai.OpenAI, expires_after: Any
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        upload(client, expires_after=expires_after)
    assert raised.value.body["param"].startswith("expires_after.")
    assert server.files.stored == {}
    assert server.files.uploads[0].file_id is None


def test_a_body_that_is_not_multipart_is_a_400(server: ScriptedModelServer) -> None:
    status, body = post_json(server, "/v1/files", {"purpose": "vision"})
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    assert server.files.requests[0].status == 400


# -- listing ----------------------------------------------------------------


async def test_list_pages_of_two_are_walked_by_the_sdk_in_both_orders(
    server: ScriptedModelServer, aclient: openai.AsyncOpenAI
) -> None:
    server.files.page_size = 2
    ids = []
    for n in range(5):
        server.files.offset = n // 2  # created_at ties are broken by creation order
        ids.append(
            (await aclient.files.create(file=(f"{n}.png", PNG, "image/png"), purpose="vision")).id
        )

    newest_first = [f.id async for f in aclient.files.list()]
    oldest_first = [f.id async for f in aclient.files.list(order="asc", limit=50)]

    assert newest_first == ids[::-1]
    assert oldest_first == ids
    pages = [r for r in server.files.requests if r.action == "list"]
    assert [r.query.get("after") for r in pages] == [None, ids[3], ids[1], None, ids[1], ids[3]]
    assert all(r.status == 200 for r in pages)


def test_a_page_reports_its_cursor_and_the_limit_below_the_cap_is_kept(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    ids = [upload(client, f"{n}.png").id for n in range(3)]
    page = client.files.list(limit=1, order="asc")
    assert [f.id for f in page.data] == [ids[0]]
    assert page.has_more is True
    raw = client.files.with_raw_response.list(after=ids[0], order="asc").http_response.json()
    assert (raw["object"], raw["first_id"], raw["last_id"], raw["has_more"]) == (
        "list",
        ids[1],
        ids[2],
        False,
    )


def test_list_filters_by_purpose(server: ScriptedModelServer, client: openai.OpenAI) -> None:
    vision = upload(client, purpose="vision").id
    upload(client, purpose="user_data")
    assert [f.id for f in client.files.list(purpose="vision")] == [vision]


# -- retrieve and delete ------------------------------------------------------


def test_retrieve_then_delete_then_both_are_404(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    file_id = upload(client, expires_after=HOUR).id
    assert client.files.retrieve(file_id).bytes == len(PNG)

    deleted = client.files.delete(file_id)

    assert (deleted.id, deleted.object, deleted.deleted) == (file_id, "file", True)
    assert server.files.deleted == [file_id]
    assert server.files.stored == {}
    for call in (client.files.retrieve, client.files.delete):
        with pytest.raises(openai.NotFoundError) as raised:
            call(file_id)
        assert raised.value.body == {
            "message": f"No such File object: {file_id}",
            "type": "invalid_request_error",
            "code": None,
            "param": "id",
        }
    assert server.files.deleted == [file_id]
    assert [f.id for f in client.files.list()] == []


def test_paths_without_the_v1_prefix_work(server: ScriptedModelServer) -> None:
    stored = server.files.add(PNG, filename="old.png")
    with urllib.request.urlopen(f"{server.url}/files/{stored.id}", timeout=5) as response:
        assert json.loads(response.read())["filename"] == "old.png"
    assert server.files.requests[0].action == "retrieve"


# -- upload faults ------------------------------------------------------------


def test_incomplete_answer_lacks_bytes_and_expiry_but_the_file_is_stored(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    server.files.fail_next_upload("incomplete")
    answer = client.files.with_raw_response.create(
        file=("shot.png", PNG, "image/png"), purpose="vision", expires_after=HOUR
    ).http_response.json()
    assert "bytes" not in answer and "expires_at" not in answer
    assert server.files.stored[answer["id"]].expires_at == 1_800_000_000 + 3600
    assert upload(client).bytes == len(PNG)  # used once


def test_wrong_bytes_is_off_by_one_and_the_content_is_right(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    server.files.fail_next_upload("wrong_bytes")
    created = upload(client)
    assert created.bytes == len(PNG) + 1
    assert server.files.stored[created.id].content == PNG


def test_quota_is_a_400_and_nothing_is_stored(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    server.files.fail_next_upload("quota", times=2)
    for _ in range(2):
        with pytest.raises(openai.BadRequestError) as raised:
            upload(client)
        assert raised.value.body == {
            "message": "File storage quota exceeded: delete files to upload more.",
            "type": "invalid_request_error",
            "code": "quota_exceeded",
            "param": None,
        }
    assert server.files.stored == {}
    assert [(u.status, u.file_id) for u in server.files.uploads] == [(400, None), (400, None)]
    assert upload(client).id in server.files.stored


def test_error_is_a_500_the_sdk_does_not_retry(server: ScriptedModelServer) -> None:
    server.files.fail_next_upload("error")
    with (
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=3) as retrying,
        pytest.raises(openai.InternalServerError) as raised,
    ):
        upload(retrying)
    assert raised.value.response.headers["x-should-retry"] == "false"
    assert raised.value.body["type"] == "server_error"
    assert len(server.files.uploads) == 1
    assert server.files.stored == {}


def test_a_repeated_fault_lasts_until_cleared_and_faults_queue_in_order(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    server.files.fail_next_upload("wrong_bytes", times=None)
    for _ in range(3):
        assert upload(client).bytes == len(PNG) + 1
    server.files.clear_faults()
    server.files.fail_next_upload("quota")
    server.files.fail_next_upload("wrong_bytes")
    with pytest.raises(openai.BadRequestError):
        upload(client)
    assert upload(client).bytes == len(PNG) + 1
    assert upload(client).bytes == len(PNG)
    with pytest.raises(ValueError, match="unknown upload fault"):
        server.files.fail_next_upload("flaky")  # type: ignore[arg-type]


def test_max_files_refuses_uploads_until_one_is_deleted(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    server.files.max_files = 2
    first = upload(client).id
    upload(client)
    with pytest.raises(openai.BadRequestError) as raised:
        upload(client)
    assert raised.value.code == "quota_exceeded"
    client.files.delete(first)
    assert upload(client).id in server.files.stored
    assert len(server.files.stored) == 2


# -- expiry --------------------------------------------------------------------


def test_an_expired_file_is_gone_for_retrieve_delete_list_and_chat(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    server.script(reply("never used"))
    file_id = upload(client, expires_after=HOUR).id
    lasting = upload(client).id
    server.files.offset = 3599.0
    assert client.files.retrieve(file_id).id == file_id

    server.files.offset = 3600.0

    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(file_id)
    with pytest.raises(openai.NotFoundError):
        client.files.delete(file_id)
    assert [f.id for f in client.files.list()] == [lasting]
    assert list(server.files.stored) == [lasting]
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="test-model", input=responses_input(file_id))
    assert raised.value.code == "invalid_file_id"
    assert len(server.remaining) == 1


def test_expire_and_forget_act_server_side_without_a_request(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    expired, forgotten, kept = (upload(client).id for _ in range(3))
    server.files.expire(expired)
    server.files.forget(forgotten)
    assert list(server.files.stored) == [kept]
    assert server.files.deleted == []
    assert len(server.files.requests) == 3
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(forgotten)
    with pytest.raises(KeyError):
        server.files.forget("file-never")


# -- the chat side ---------------------------------------------------------------


def test_chat_wire_refuses_a_gone_file_without_using_a_step(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    server.script(reply("I see a cat."))
    live, gone = upload(client).id, upload(client).id
    client.files.delete(gone)

    status, body = post_json(server, "/v1/chat/completions", chat_body(live, gone, "file-unknown"))

    assert status == 400
    assert body == {
        "error": {
            "message": f"Invalid file id: {gone}, file-unknown has expired or been deleted.",
            "type": "invalid_request_error",
            "code": "invalid_file_id",
            "param": "file_id",
        }
    }
    [refused] = server.requests
    assert (refused.index, refused.step, refused.refused, refused.wire) == (
        0,
        None,
        "invalid_file_id",
        "chat",
    )
    assert len(server.remaining) == 1

    status, body = post_json(server, "/v1/chat/completions", chat_body(live))
    assert status == 200 and body["choices"][0]["message"]["content"] == "I see a cat."
    assert [r.refused for r in server.requests] == ["invalid_file_id", None]


def test_responses_wire_refuses_through_the_sdk_and_can_leave_ids_unnamed(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    server.script(reply("fine"))
    server.files.name_bad_ids = False
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="test-model", input=responses_input("file-unknown"))
    assert (
        raised.value.body["message"]
        == "File invalid: one or more referenced files are unavailable."
    )
    assert "file-unknown" not in raised.value.message
    live = upload(client).id
    answer = client.responses.create(model="test-model", input=responses_input(live))
    assert answer.output_text == "fine"
    assert [r.step is None for r in server.requests] == [True, False]


def test_file_error_step_names_the_request_ids_or_the_given_ones_or_none(
    server: ScriptedModelServer, client: openai.OpenAI
) -> None:
    first, second = upload(client).id, upload(client).id
    server.script(
        fault.file_error(), fault.file_error(ids=["file-zzz"]), fault.file_error(named=False)
    )
    messages = []
    for _ in range(3):
        status, body = post_json(server, "/v1/chat/completions", chat_body(first, second, first))
        assert status == 400 and body["error"]["code"] == "invalid_file_id"
        messages.append(body["error"]["message"])
    assert messages == [
        f"Invalid file id: {first}, {second} has expired or been deleted.",
        "Invalid file id: file-zzz has expired or been deleted.",
        "File invalid: one or more referenced files are unavailable.",
    ]
    assert [type(r.step) for r in server.requests] == [FileError] * 3
    assert server.remaining == []
    assert set(server.files.stored) == {first, second}


def test_file_error_step_survives_a_script_file() -> None:
    steps = [
        fault.file_error(),
        fault.file_error(ids=["file-a", "file-b"], named=False, repeat=True),
    ]
    assert steps_from_json(steps_to_json(steps)) == steps
    assert json.loads(steps_to_json(steps))[1] == {
        "type": "file_error",
        "ids": ["file-a", "file-b"],
        "named": False,
        "repeat": True,
    }


def test_referenced_file_ids_walks_both_wires_once_each() -> None:
    body = {
        "input": responses_input("file-a", "file-b"),
        "messages": chat_body("file-b", "file-c")["messages"],
        "metadata": {"file_id": 7},
    }
    assert referenced_file_ids(body) == ["file-a", "file-b", "file-c"]


def test_subprocess_mode_refuses_unknown_files_and_serves_file_error(tmp_path: Path) -> None:
    with ModelServerProcess([fault.file_error(ids=["file-x"])], workdir=tmp_path) as process:
        root = process.base_url.removesuffix("/v1")

        def post(body: Any) -> tuple[int, Any]:
            request = urllib.request.Request(
                f"{root}/v1/chat/completions",
                data=json.dumps(body).encode(),
                method="POST",
                headers={"content-type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read())

        unknown = post(chat_body("file-unknown"))
        scripted = post(chat_body())
        logged = process.requests()
    assert unknown[0] == 400 and "file-unknown" in unknown[1]["error"]["message"]
    assert scripted[0] == 400 and "file-x" in scripted[1]["error"]["message"]
    assert [(r.refused, type(r.step)) for r in logged] == [
        ("invalid_file_id", type(None)),
        (None, FileError),
    ]


# -- recording --------------------------------------------------------------------


def test_every_files_request_is_recorded_in_order_with_its_headers(
    server: ScriptedModelServer,
) -> None:
    with openai.OpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        default_headers={"User-Agent": "dcode/test"},
    ) as client:
        server.files.page_size = 1
        ids = [upload(client, f"{n}.png").id for n in range(2)]
        listed = [f.id for f in client.files.list()]
        for file_id in listed:
            client.files.delete(file_id)

    records = server.files.requests
    assert [r.action for r in records] == ["upload", "upload", "list", "list", "delete", "delete"]
    assert [r.index for r in records] == list(range(6))
    assert all(r.headers["user-agent"] == "dcode/test" for r in records)
    assert all(k == k.lower() for r in records for k in r.headers)
    first_delete = next(r.index for r in records if r.method == "DELETE")
    assert max(r.index for r in records if r.action == "list") < first_delete
    assert [r.file_id for r in records if r.action == "delete"] == ids[::-1]
    assert [u.bytes for u in server.files.uploads] == [len(PNG), len(PNG)]
    assert records[2].query == {} and records[3].query == {"after": ids[1]}
    assert server.requests == []
