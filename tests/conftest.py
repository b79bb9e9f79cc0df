"""Shared fixtures: a scripted model server and settings pointing dcode at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from dcode.config import ApprovalMode, Settings, WireApi
from tests.support.model_server import ScriptedModelServer

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as running:
        yield running


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def dcode_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("DCODE_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("DCODE_MODEL", raising=False)
    return home


@pytest.fixture
def make_settings(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> Callable[..., Settings]:
    def build(api: WireApi | str = WireApi.CHAT, **changes: object) -> Settings:
        base = Settings(
            home=dcode_home,
            workspace=workspace,
            model="openai:test-model",
            base_url=server.base_url,
            api=WireApi(api),
            approve=ApprovalMode.EDITS,
            max_retries=2,
        )
        return replace(base, **changes)

    return build


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    return request.param
