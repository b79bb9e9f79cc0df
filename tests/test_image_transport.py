"""Which transport a route's images take, and the part that names an uploaded image."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcode.models.factory import resolve_model
from dcode.models.image_transport import file_image_part, image_transport
from dcode.settings.config import ConfigError, Settings, WireApi


def resolved(
    tmp_path: Path,
    model: str,
    *,
    base_url: str | None = None,
    api: WireApi | None = None,
    overrides: dict | None = None,
):
    settings = Settings(
        home=tmp_path,
        workspace=tmp_path,
        model=model,
        base_url=base_url,
        api=api,
        model_overrides=overrides or {},
    )
    return resolve_model(settings, env={"OPENAI_API_KEY": "k", "DEEPSEEK_API_KEY": "k"})


def test_files_is_the_default_only_on_the_providers_own_endpoints(tmp_path: Path) -> None:
    assert (
        resolved(tmp_path, "openai:gpt-4.1").image_transport == "files"
    )  # Responses on OpenAI's own
    assert (
        resolved(tmp_path, "openai:gpt-4.1", api=WireApi.CHAT).image_transport == "inline"
    )  # no file-id image part
    assert resolved(tmp_path, "deepseek:deepseek-v4-flash-vision-exp").image_transport == "files"
    assert (
        resolved(
            tmp_path, "openai:gpt-4.1", base_url="http://127.0.0.1:9/v1", api=WireApi.RESPONSES
        ).image_transport
        == "inline"
    )
    assert (
        resolved(tmp_path, "deepseek:deepseek-chat", base_url="http://proxy/v1").image_transport
        == "inline"
    )
    assert resolved(tmp_path, "ollama:qwen2.5vl").image_transport == "inline"


def test_config_says_otherwise_in_either_direction(tmp_path: Path) -> None:
    local = resolved(
        tmp_path,
        "openai:test-model",
        base_url="http://127.0.0.1:9/v1",
        overrides={"openai:test-model": {"image_transport": "files"}},
    )
    assert local.image_transport == "files"
    official = resolved(
        tmp_path, "openai:gpt-4.1", overrides={"openai:*": {"image_transport": "inline"}}
    )
    assert official.image_transport == "inline"
    with pytest.raises(ConfigError, match='image_transport must be "inline" or "files"'):
        resolved(
            tmp_path, "openai:gpt-4.1", overrides={"openai:gpt-4.1": {"image_transport": "s3"}}
        )


def test_the_file_part_is_the_wires_own() -> None:
    assert file_image_part("responses", "file-1") == {
        "type": "input_image",
        "file_id": "file-1",
        "detail": "auto",
    }
    assert file_image_part("chat", "file-1") == {"type": "file", "file": {"file_id": "file-1"}}
    assert image_transport("openai", "https://api.openai.com/v1/", WireApi.RESPONSES) == "files"


def test_the_request_image_budgets_come_from_the_profile(tmp_path: Path) -> None:
    openai = resolved(tmp_path, "openai:gpt-4.1").profile
    assert (openai.request_image_bytes, openai.request_max_images) == (50_000_000, 500)
    deepseek = resolved(tmp_path, "deepseek:deepseek-v4-flash-vision-exp").profile
    assert deepseek.request_image_bytes == 48 * 1024 * 1024
