from pathlib import Path

import pytest

from dcode.models.factory import build_chat_model, resolve_model
from dcode.models.profiles import resolve_profile
from dcode.models.spec import ModelSpecError, parse_spec, resolve_endpoint
from dcode.settings.config import ConfigError, Settings, WireApi


def settings(tmp_path: Path, **kw) -> Settings:
    return Settings(home=tmp_path, workspace=tmp_path, **kw)


def test_parse_spec() -> None:
    assert parse_spec("deepseek:deepseek-chat").text == "deepseek:deepseek-chat"
    assert parse_spec("gpt-5.1").text == "openai:gpt-5.1"
    assert parse_spec("openrouter:qwen/qwen3-coder:free").model == "qwen/qwen3-coder:free"
    with pytest.raises(ModelSpecError):
        parse_spec("openai:")


@pytest.mark.parametrize(
    ("spec", "url", "api"),
    [
        ("openai:gpt-5.1", "https://api.openai.com/v1", WireApi.RESPONSES),
        ("deepseek:deepseek-chat", "https://api.deepseek.com/v1", WireApi.CHAT),
        ("openrouter:openai/gpt-5.1", "https://openrouter.ai/api/v1", WireApi.CHAT),
        ("ollama:qwen3-coder", "http://localhost:11434/v1", WireApi.CHAT),
        ("vllm:Qwen/Qwen3-Coder", "http://localhost:8000/v1", WireApi.CHAT),
        ("lmstudio:local", "http://localhost:1234/v1", WireApi.CHAT),
    ],
)
def test_presets(tmp_path: Path, spec: str, url: str, api: WireApi) -> None:
    env = {"OPENAI_API_KEY": "k", "DEEPSEEK_API_KEY": "k", "OPENROUTER_API_KEY": "k"}
    endpoint = resolve_endpoint(settings(tmp_path, model=spec), env)
    assert (endpoint.base_url, endpoint.api) == (url, api)


def test_missing_key_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="set DEEPSEEK_API_KEY"):
        resolve_endpoint(settings(tmp_path, model="deepseek:deepseek-chat"), {})


def test_local_and_custom_servers_need_no_key(tmp_path: Path) -> None:
    assert (
        resolve_endpoint(settings(tmp_path, model="ollama:qwen3-coder"), {}).api_key == "not-needed"
    )
    custom = resolve_endpoint(
        settings(tmp_path, model="mine:m1", base_url="http://127.0.0.1:9/v1"), {}
    )
    assert (custom.base_url, custom.api) == ("http://127.0.0.1:9/v1", WireApi.CHAT)


def test_base_url_env_and_api_flag(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://proxy/v1"}
    endpoint = resolve_endpoint(settings(tmp_path, model="openai:gpt-5.1"), env)
    assert (endpoint.base_url, endpoint.api) == ("http://proxy/v1", WireApi.CHAT)
    forced = resolve_endpoint(
        settings(tmp_path, model="openai:gpt-5.1", api=WireApi.RESPONSES), env
    )
    assert forced.api is WireApi.RESPONSES


def test_unknown_provider_without_url(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="--base-url"):
        resolve_endpoint(settings(tmp_path, model="nowhere:m"), {})


def test_profiles_from_langchain_presets_and_overrides(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "k"}
    openai_profile = resolve_model(settings(tmp_path, model="openai:gpt-5.1"), env).profile
    assert openai_profile.source == "langchain"
    assert openai_profile.max_input_tokens > 100_000 and openai_profile.image_inputs
    assert not openai_profile.guessed

    vision = resolve_profile("deepseek", "deepseek-v4-flash-vision-exp")
    assert (vision.image_inputs, vision.image_max_pixels, vision.image_max_bytes) == (
        True,
        640_000,
        1024 * 1024,
    )

    unknown = resolve_profile("vllm", "mystery-7b")
    assert unknown.source == "fallback" and not unknown.image_inputs
    assert {"max_input_tokens", "image_inputs"} <= unknown.guessed

    custom = resolve_profile(
        "vllm", "mystery-7b", overrides={"vllm:mystery-7b": {"max_input_tokens": 65536}}
    )
    assert custom.max_input_tokens == 65536 and "max_input_tokens" not in custom.guessed
    with pytest.raises(ConfigError, match="unknown profile field"):
        resolve_profile("vllm", "m", overrides={"vllm:m": {"max_tokens_in": 1}})
    with pytest.raises(ConfigError, match="must be int"):
        resolve_profile("vllm", "m", overrides={"vllm:m": {"max_input_tokens": "lots"}})


def test_chat_model_wire_mode(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "k"}
    for api, expected in ((WireApi.CHAT, False), (WireApi.RESPONSES, True)):
        s = settings(tmp_path, model="openai:gpt-5.1", api=api, max_retries=3)
        model = build_chat_model(resolve_model(s, env), s)
        assert model.use_responses_api is expected
        assert model.max_retries == 3


def test_cost() -> None:
    profile = resolve_profile("deepseek", "deepseek-chat")
    assert profile.cost(1_000_000, 1_000_000) == pytest.approx(0.70)
    assert resolve_profile("vllm", "x").cost(1, 1) is None


def test_the_sync_client_shares_the_async_clients_tls_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ChatOpenAI's synchronous client (unused by dcode's turns) is built over the model
    client's TLS context, so the CA bundle loads once; under OPENAI_PROXY ChatOpenAI builds its
    own proxied one, as before."""
    import httpcore2

    from dcode.models.factory import model_http_client

    loads: list[object] = []
    real = httpcore2.default_ssl_context

    def counted(*args: object, **kwargs: object) -> object:
        loads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(httpcore2, "default_ssl_context", counted)
    s = settings(tmp_path, model="openai:gpt-5.1", base_url="https://models.example/v1")
    http = model_http_client(s)
    model = build_chat_model(resolve_model(s, {"OPENAI_API_KEY": "k"}), s, http)
    assert model.http_client is not None and model.openai_proxy is None
    assert len(loads) == 1

    monkeypatch.setenv("OPENAI_PROXY", "http://127.0.0.1:9")
    proxied = build_chat_model(resolve_model(s, {"OPENAI_API_KEY": "k"}), s, http)
    assert proxied.openai_proxy == "http://127.0.0.1:9" and proxied.http_client is not None
    assert proxied.http_client is not model.http_client
