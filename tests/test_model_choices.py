"""What ``/model`` offers: recent, configured and preset models, each once, with what is wrong."""

from pathlib import Path

from dcode.models.choices import RECENT_LIMIT, ModelOrigin, model_choices
from dcode.settings.config import ProviderOverride, Settings
from dcode.settings.presets import PROVIDERS

ENV = {"OPENAI_API_KEY": "sk-test"}


def settings(tmp_path: Path, **kw) -> Settings:
    return Settings(home=tmp_path, workspace=tmp_path, **kw)


def test_recent_then_configured_then_presets_each_once(tmp_path: Path) -> None:
    config = settings(
        tmp_path,
        model="openai:gpt-5.1",
        model_overrides={
            "vllm:Qwen/Qwen3-Coder": {"max_input_tokens": 131_072},
            "*:qwen3*": {"max_input_tokens": 1},
        },
    )
    recent = ["openai:mine", "gpt-5.1", "openai:mine", "deepseek:deepseek-chat"]
    choices = model_choices(config, recent, env=ENV)
    specs = [choice.spec for choice in choices]
    assert len(specs) == len(set(specs))
    # a bare name is an OpenAI model, and a model is listed where it is most relevant
    assert specs[:3] == ["openai:mine", "openai:gpt-5.1", "deepseek:deepseek-chat"]
    assert [choice.origin for choice in choices[:3]] == [ModelOrigin.RECENT] * 3
    assert (
        choices[3].spec == "vllm:Qwen/Qwen3-Coder" and choices[3].origin is ModelOrigin.CONFIGURED
    )
    assert not any("*" in spec for spec in specs)  # a pattern table names no model to pick
    presets = [f"{name}:{model}" for name, preset in PROVIDERS.items() for model in preset.models]
    assert set(presets) <= set(specs)
    assert "openai:gpt-5.1-codex" in presets and "deepseek:deepseek-reasoner" in presets


def test_recent_models_are_capped(tmp_path: Path) -> None:
    recent = [f"openai:m{n}" for n in range(RECENT_LIMIT + 5)]
    choices = model_choices(settings(tmp_path, model="openai:gpt-5.1"), recent, env=ENV)
    assert [c.spec for c in choices if c.origin is ModelOrigin.RECENT] == recent[:RECENT_LIMIT]


def test_a_missing_key_is_said_and_a_provider_without_models_is_left_to_finish(
    tmp_path: Path,
) -> None:
    config = settings(
        tmp_path,
        model="openai:gpt-5.1",
        providers={"corp": ProviderOverride(base_url="http://llm.corp.example/v1")},
    )
    by_spec = {choice.spec: choice for choice in model_choices(config, [], env=ENV)}
    assert "DEEPSEEK_API_KEY" in by_spec["deepseek:deepseek-chat"].problem
    assert by_spec["openai:gpt-5.1"].problem == "" and by_spec["ollama:qwen3-coder"].problem == ""
    assert by_spec["corp:"].partial and by_spec["corp:"].origin is ModelOrigin.CONFIGURED
    assert by_spec["lmstudio:"].partial and by_spec["vllm:"].partial  # they serve what was loaded
    assert not any(spec.startswith("corp:") and spec != "corp:" for spec in by_spec)


def test_the_configured_default_is_offered_beside_the_running_model(tmp_path: Path) -> None:
    running = settings(tmp_path, model="openai:switched-to")
    specs = [c.spec for c in model_choices(running, [], default="deepseek:deepseek-chat", env=ENV)]
    assert specs[:2] == ["openai:switched-to", "deepseek:deepseek-chat"]


def test_each_choice_says_which_profile_figures_would_be_guessed(tmp_path: Path) -> None:
    config = settings(
        tmp_path,
        model="openai:gpt-5.1",
        model_overrides={
            "openai:mine": {
                "image_inputs": True,
                "max_input_tokens": 8192,
                "max_output_tokens": 1024,
            }
        },
    )
    by_spec = {
        choice.spec: choice
        for choice in model_choices(config, ["openai:unknown-model", "openai:mine"], env=ENV)
    }
    assert (
        by_spec["openai:unknown-model"].guessed
        == "image_inputs = false, max_input_tokens = 32768, max_output_tokens = 4096"
    )
    assert by_spec["openai:gpt-5.1"].guessed == ""  # langchain knows it
    assert by_spec["openai:mine"].guessed == ""  # the config says all three
    assert (
        by_spec["deepseek:deepseek-chat"].guessed == ""
        and by_spec["ollama:qwen3-coder"].guessed == ""
    )  # text-only presets say so
