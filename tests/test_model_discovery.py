"""What a model's own server says of it (Ollama, LM Studio, vLLM, OpenRouter), asked through the
scripted server's copies of their endpoints, kept a week in $DCODE_HOME, under the user's config."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from PIL import Image

from dcode.models.discovery import CACHE_NAME
from dcode.models.factory import model_profile, resolve_model
from dcode.models.spec import parse_spec
from dcode.settings.config import Settings
from tests.support.model_server import ScriptedModelServer, reply


def settings_for(home: Path, server: ScriptedModelServer, model: str, **changes) -> Settings:
    return replace(
        Settings(home=home, workspace=home.parent, model=model, base_url=server.base_url), **changes
    )


def asked(server: ScriptedModelServer, path: str) -> int:
    return sum(1 for r in server.all_requests if r.path == path)


def test_ollama_says_vision_and_the_window_it_runs_with(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.ollama_show["qwen2.5vl:7b"] = {
        "capabilities": ["completion", "vision", "tools"],
        "parameters": 'num_ctx 16384\nstop "<|im_end|>"',
        "model_info": {"qwen25vl.context_length": 128000},  # trained, not what a request gets
    }
    settings = settings_for(tmp_path / "home", server, "ollama:qwen2.5vl:7b")
    profile = resolve_model(settings).profile
    assert profile.image_inputs and profile.max_input_tokens == 16384
    assert "its server" in profile.source and "image_inputs" not in profile.guessed
    resolve_model(settings)
    assert asked(server, "/api/show") == 1  # kept: not asked again
    cache = tmp_path / "home" / CACHE_NAME
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert (
        model_profile(parse_spec(settings.model), settings).max_input_tokens == 16384
    )  # read, nobody asked


def test_the_server_outranks_a_preset_and_the_user_outranks_both(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.ollama_show["gemma3:1b"] = {
        "capabilities": ["completion"]
    }  # the small gemma3 sees no images
    settings = settings_for(tmp_path / "home", server, "ollama:gemma3:1b")
    assert resolve_model(settings).profile.image_inputs is False
    mine = replace(
        settings,
        model_overrides={"ollama:gemma3:1b": {"image_inputs": True, "max_input_tokens": 4096}},
    )
    profile = resolve_model(mine).profile
    assert profile.image_inputs is True and profile.max_input_tokens == 4096


def test_lm_studio_vllm_and_openrouter_in_their_own_words(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.lmstudio_models["qwen/qwen2.5-vl-7b"] = {
        "type": "vlm",
        "max_context_length": 128000,
        "loaded_context_length": 32768,
    }
    server.catalog["Qwen/Qwen3-Coder-30B"] = {"max_model_len": 65536}
    server.catalog["google/gemini-2.5-flash"] = {
        "context_length": 1048576,
        "architecture": {
            "input_modalities": ["text", "image", "file"],
            "output_modalities": ["text"],
        },
        "top_provider": {"max_completion_tokens": 65535},
        "pricing": {
            "prompt": "0.0000003",
            "completion": "0.0000025",
            "input_cache_read": "0.000000075",
        },
    }
    home = tmp_path / "home"
    lmstudio = resolve_model(settings_for(home, server, "lmstudio:qwen/qwen2.5-vl-7b")).profile
    assert lmstudio.image_inputs and lmstudio.max_input_tokens == 32768
    vllm = resolve_model(settings_for(home, server, "vllm:Qwen/Qwen3-Coder-30B")).profile
    assert vllm.max_input_tokens == 65536
    openrouter = resolve_model(
        settings_for(home, server, "openrouter:google/gemini-2.5-flash"),
        env={"OPENROUTER_API_KEY": "or-key"},
    ).profile
    assert (openrouter.image_inputs, openrouter.pdf_inputs, openrouter.audio_inputs) == (
        True,
        True,
        False,
    )
    assert openrouter.max_input_tokens == 1048576 and openrouter.max_output_tokens == 65535
    assert (openrouter.input_price, openrouter.output_price, openrouter.cached_input_price) == (
        0.3,
        2.5,
        0.075,
    )
    listing = [r for r in server.all_requests if r.path == "/v1/models"][-1]
    assert listing.headers["authorization"] == "Bearer or-key" and listing.headers[
        "user-agent"
    ].startswith("dcode/")


def test_a_server_that_cannot_tell_leaves_the_guess_and_is_asked_again_an_hour_later(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    settings = settings_for(home, server, "ollama:mystery")  # /api/show: 404
    profile = resolve_model(settings).profile
    assert profile.image_inputs is False and "image_inputs" in profile.guessed
    resolve_model(settings)
    assert asked(server, "/api/show") == 1  # the failure is kept for an hour
    cache = home / CACHE_NAME
    data = json.loads(cache.read_text())
    for entry in data.values():
        entry["at"] -= 3601
    cache.write_text(json.dumps(data))
    server.ollama_show["mystery"] = {"capabilities": ["completion", "vision"]}
    assert resolve_model(settings).profile.image_inputs is True and asked(server, "/api/show") == 2
    cache.write_text("{not json")  # damaged: asked again, and rewritten whole
    assert resolve_model(settings).profile.image_inputs is True and json.loads(cache.read_text())


def test_a_dead_server_costs_a_refused_connection_not_a_failure(tmp_path: Path) -> None:
    dead = Settings(
        home=tmp_path / "home",
        workspace=tmp_path,
        model="ollama:llava",
        base_url="http://127.0.0.1:9/v1",
    )
    profile = resolve_model(dead).profile
    assert profile.image_inputs is False and "image_inputs" in profile.guessed


def test_headless_sends_a_screenshot_to_a_vision_model_its_server_vouches_for(
    server: ScriptedModelServer, tmp_path: Path, workspace: Path
) -> None:
    server.ollama_show["qwen2.5vl:7b"] = {"capabilities": ["completion", "vision"]}
    Image.new("RGB", (64, 40), (10, 200, 10)).save(workspace / "shot.png")
    server.script(reply("A green box."))
    env = {"PATH": os.environ["PATH"], "DCODE_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    dcode = str(Path(sys.executable).with_name("dcode"))
    done = subprocess.run(
        [
            dcode,
            "-p",
            "what is this?",
            "-i",
            "shot.png",
            "-m",
            "ollama:qwen2.5vl:7b",
            "--base-url",
            server.base_url,
        ],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    content = server.requests[0].messages[-1]["content"]
    assert any(block.get("type") == "image_url" for block in content), content


def test_doctor_says_what_the_server_said(
    server: ScriptedModelServer, tmp_path: Path, workspace: Path
) -> None:
    server.ollama_show["llava:13b"] = {
        "capabilities": ["completion", "vision"],
        "parameters": "num_ctx 8192",
    }
    env = {"PATH": os.environ["PATH"], "DCODE_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    dcode = str(Path(sys.executable).with_name("dcode"))
    done = subprocess.run(
        [dcode, "doctor", "-m", "ollama:llava:13b", "--base-url", server.base_url],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "profile      source: its server" in done.stdout
    assert (
        "  its server   ollama /api/show: image_inputs True, max_input_tokens 8192 (kept a week in "
        in done.stdout
    )
    assert "image_inputs         True\n" in done.stdout


def test_litellm_says_what_its_config_gives_the_model(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    """LiteLLM's proxy: the ``model_info`` of ``/model/info`` (in the shape its proxy answers),
    so the window is the configured one and not the 32k guess."""
    server.litellm_model_info["coder"] = {
        "id": "6e3d0d",
        "max_input_tokens": 8192,
        "max_output_tokens": 1024,
        "max_tokens": None,
        "supports_vision": True,
        "supports_pdf_input": None,
        "input_cost_per_token": 2e-07,
        "output_cost_per_token": 8e-07,
    }
    profile = resolve_model(settings_for(tmp_path / "home", server, "litellm:coder")).profile
    assert (profile.max_input_tokens, profile.max_output_tokens, profile.image_inputs) == (
        8192,
        1024,
        True,
    )
    assert (profile.input_price, profile.output_price) == (0.2, 0.8)
    assert "max_input_tokens" not in profile.guessed and asked(server, "/model/info") == 1


def test_litellm_without_model_info_is_read_from_its_listing(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.catalog["coder"] = {
        "max_input_tokens": 16384,
        "max_output_tokens": 2048,
    }  # /model/info: a 404
    profile = resolve_model(settings_for(tmp_path / "home", server, "litellm:coder")).profile
    assert (profile.max_input_tokens, profile.max_output_tokens) == (16384, 2048)
    assert asked(server, "/model/info") == 1 and asked(server, "/v1/models") == 1


def test_any_other_server_is_asked_its_listing_for_a_window(
    server: ScriptedModelServer, tmp_path: Path
) -> None:
    """A provider that is not a preset (``--base-url``, ``[providers.*]``): ``/v1/models`` is read
    for a window in the fields servers use; a trained maximum is not a window."""
    server.catalog["qwen-local"] = {"context_window": 12288}
    server.catalog["llama-local"] = {"meta": {"n_ctx_train": 131072}}
    home = tmp_path / "home"
    assert (
        resolve_model(settings_for(home, server, "mine:qwen-local")).profile.max_input_tokens
        == 12288
    )
    unknown = resolve_model(settings_for(home, server, "mine:llama-local")).profile
    assert unknown.max_input_tokens == 32768 and "max_input_tokens" in unknown.guessed
    hosted = resolve_model(
        settings_for(home, server, "openai:qwen-local")
    ).profile  # a preset: not asked
    assert hosted.max_input_tokens != 12288 and asked(server, "/v1/models") == 2
