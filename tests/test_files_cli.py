"""``dcode files list|info|delete|prune``: the real binary against the scripted Files API."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from dcode.media.uploads.index import Scope, UploadIndex
from dcode.media.uploads.resolver import UploadResolver
from dcode.models.factory import model_http_client, resolve_model
from dcode.models.files_api import OpenAIFiles
from dcode.models.user_agent import USER_AGENT
from dcode.settings.config import Settings, WireApi
from tests.test_upload_resolver import shot

DCODE = str(Path(sys.executable).with_name("dcode"))
KEY = "sk-cli-files-key"


def dcode(
    home: Path, base_url: str, *args: str, retries: int = 4
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": KEY,
        "DCODE_MAX_RETRIES": str(retries),
    }
    argv = [DCODE, "files", *args, "-m", "openai:test-model", "--base-url", base_url]
    return subprocess.run(
        argv, cwd=home.parent, env=env, capture_output=True, text=True, timeout=60
    )


def upload_three(home: Path, base_url: str, tmp_path: Path) -> list:
    settings = Settings(
        home=home,
        workspace=tmp_path,
        model="openai:test-model",
        base_url=base_url,
        api=WireApi.CHAT,
        max_retries=0,
    )
    endpoint = resolve_model(settings, env={"OPENAI_API_KEY": KEY}).endpoint

    async def go() -> list:
        http = model_http_client(settings)
        try:
            resolver = UploadResolver(
                OpenAIFiles.for_endpoint(endpoint, settings, http),
                UploadIndex(home),
                Scope.of(base_url, KEY),
            )
            return [await resolver.resolve(shot(tmp_path, f"s{n}")) for n in range(3)]
        finally:
            await http.aclose()

    return asyncio.run(go())


def test_list_info_delete_prune(server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    server.files.page_size = 2
    foreign = server.files.add(b"not ours", filename="report.pdf")
    mappings = upload_three(home, server.base_url, tmp_path)
    listed = dcode(home, server.base_url, "list")
    assert listed.returncode == 0, listed.stderr
    for mapping in mappings:
        assert (
            mapping.file_id in listed.stdout
            and f"variant {mapping.variant_id[:12]}" in listed.stdout
        )
    assert f"{foreign.id}  report.pdf" in listed.stdout and "not dcode's" in listed.stdout
    assert "4 files, 3 uploaded by dcode" in listed.stdout and "expires in 7.0 d" in listed.stdout

    info = dcode(home, server.base_url, "info", mappings[0].variant_id)
    assert (
        info.returncode == 0 and mappings[0].file_id in info.stdout and "2,000 bytes" in info.stdout
    )
    assert f"variant    {mappings[0].variant_id}" in info.stdout

    deleted = dcode(home, server.base_url, "delete", mappings[1].file_id)
    assert deleted.returncode == 0 and deleted.stdout.startswith(
        f"deleted {mappings[1].file_id} (variant"
    )
    scope = Scope.of(server.base_url, KEY)
    assert [m.file_id for m in UploadIndex(home).mappings(scope)] == [
        mappings[0].file_id,
        mappings[2].file_id,
    ]
    again = dcode(home, server.base_url, "delete", mappings[1].file_id)
    assert again.returncode == 0 and "already gone" in again.stdout

    pruned = dcode(home, server.base_url, "prune")
    assert pruned.returncode == 0 and "2 files deleted, 2 mappings dropped" in pruned.stdout
    assert list(server.files.stored) == [foreign.id]  # another tool's file is never deleted
    assert UploadIndex(home).mappings(scope) == []
    # Every Files request, the setup's included, said it was dcode's.
    assert {r.headers.get("user-agent") for r in server.files.requests} == {USER_AGENT}


def test_a_dead_endpoint_is_one_clear_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = dcode(home, "http://127.0.0.1:9/v1", "list", retries=0)
    assert result.returncode == 1 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(
        "dcode: error: listing files failed: cannot reach the model server at http://127.0.0.1:9/v1"
    )
