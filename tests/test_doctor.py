import subprocess
import sys
from pathlib import Path

from tests.support.videos import without_modules

DCODE = str(Path(sys.executable).with_name("dcode"))


def doctor(args, tmp_path, env_extra=None):
    env = {"PATH": "/usr/bin:/bin", "DCODE_HOME": str(tmp_path / "home"), **(env_extra or {})}
    return subprocess.run(
        [DCODE, "doctor", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )


def test_doctor_marks_guessed_figures_and_says_what_the_mark_means(tmp_path) -> None:
    result = doctor(["-m", "vllm:mystery-model"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "profile      source: fallback" in result.stdout
    guessed = [line for line in result.stdout.splitlines() if line.endswith("⚠ guessed")]
    assert {line.split()[0] for line in guessed} == {
        "max_input_tokens",
        "max_output_tokens",
        "image_inputs",
    }
    legend = [
        line.strip() for line in result.stdout.splitlines() if line.strip().startswith("⚠ guessed:")
    ]
    config = tmp_path / "home" / "config.toml"
    assert legend == [
        (
            "⚠ guessed: no profile source (langchain, dcode's presets, the model's server, your config) gives these for "
            "vllm:mystery-model, so dcode assumes image_inputs = false, max_input_tokens = 32768, max_output_tokens = 4096 "
            f'(images you attach reach it as text placeholders). If they are wrong, set them under [models."vllm:mystery-model"] in {config}.'
        )
    ]


def test_doctor_known_model_has_no_guesses(tmp_path) -> None:
    result = doctor(
        ["-m", "deepseek:deepseek-v4-flash-vision-exp"], tmp_path, {"DEEPSEEK_API_KEY": "k"}
    )
    assert result.returncode == 0
    assert "⚠" not in result.stdout
    assert "image_max_pixels     640000" in result.stdout


def test_a_text_only_preset_says_no_images_rather_than_guessing(tmp_path) -> None:
    result = doctor(["-m", "deepseek:deepseek-chat"], tmp_path, {"DEEPSEEK_API_KEY": "k"})
    assert result.returncode == 0
    assert "  image_inputs         False\n" in result.stdout and "⚠" not in result.stdout


def test_doctor_check_reports_connection(server, tmp_path) -> None:
    ok = doctor(["-m", "openai:test-model", "--base-url", server.base_url, "--check"], tmp_path)
    assert ok.returncode == 0 and "connection   ok" in ok.stdout
    dead = doctor(
        ["-m", "openai:test-model", "--base-url", "http://127.0.0.1:9/v1", "--check"], tmp_path
    )
    assert (
        dead.returncode == 1 and "connection   FAILED: cannot reach the model server" in dead.stdout
    )


def test_doctor_missing_key(tmp_path) -> None:
    result = doctor(["-m", "openrouter:x/y"], tmp_path)
    assert result.returncode == 1 and "set OPENROUTER_API_KEY" in result.stdout


def test_doctor_says_video_frame_sampling_works(tmp_path) -> None:
    import av

    result = doctor(["-m", "vllm:mystery-model"], tmp_path)
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("video ")]
    assert (
        line
        == f"video        frame sampling works (PyAV {av.__version__}, FFmpeg {av.ffmpeg_version_info})"
    )


def test_doctor_without_av_says_how_to_enable_video(tmp_path) -> None:
    hidden = without_modules(tmp_path / "no-av", {"av"})
    result = doctor(["-m", "vllm:mystery-model"], tmp_path, hidden)
    assert result.returncode == 0, (
        result.stderr
    )  # a missing video stack is no error: videos degrade
    [line] = [line for line in result.stdout.splitlines() if line.startswith("video ")]
    python = Path(DCODE).read_text().splitlines()[0].removeprefix("#!")  # dcode's own interpreter
    assert line == (
        "video        frame sampling off: video frame sampling needs PyAV (the av package), which is not "
        f"installed; install it into dcode's environment: {python} -m pip install av "
        "(pipx: pipx inject dcode av)"
    )


def test_doctor_says_whether_prompt_cache_key_is_sent(tmp_path) -> None:
    official = doctor(["-m", "openai:gpt-5.1"], tmp_path, {"OPENAI_API_KEY": "k"})
    assert (
        "prompt cache prompt_cache_key sent (the session id; OpenAI's own endpoint)"
        in official.stdout
    )
    local = doctor(["-m", "ollama:qwen3-coder"], tmp_path)
    assert (
        'prompt cache prompt_cache_key not sent (set prompt_cache_key = true under [models."ollama:qwen3-coder"]'
        in local.stdout
    )
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text('[models."ollama:*"]\nprompt_cache_key = true\n')
    configured = doctor(["-m", "ollama:qwen3-coder"], tmp_path)
    assert configured.returncode == 0, configured.stderr
    assert (
        "prompt_cache_key sent (the session id; prompt_cache_key = true in config.toml)"
        in configured.stdout
    )


def test_doctor_and_media_inspect_name_the_image_transport(tmp_path) -> None:
    official = doctor(["-m", "openai:gpt-4.1"], tmp_path, {"OPENAI_API_KEY": "k"})
    assert "images       files: each image uploaded once through the Files API" in official.stdout
    assert (
        "the default on this provider's own endpoint" in official.stdout
        and "0 uploaded for this key" in official.stdout
    )
    local = doctor(["-m", "ollama:qwen2.5vl"], tmp_path)
    assert "images       inline: each request carries its images as base64" in local.stdout
    assert 'image_transport = "files" under [models."ollama:qwen2.5vl"]' in local.stdout
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text(
        '[models."ollama:*"]\nimage_transport = "files"\n'
    )
    assert "images       files:" in doctor(["-m", "ollama:qwen2.5vl"], tmp_path).stdout
    from tests.test_media_request import screenshot

    shot = screenshot(tmp_path / "shot.png", (640, 400))
    env = {"PATH": "/usr/bin:/bin", "DCODE_HOME": str(tmp_path / "home")}
    inspected = subprocess.run(
        [DCODE, "media", "inspect", str(shot), "-m", "ollama:qwen2.5vl", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert inspected.returncode == 0, inspected.stderr
    assert '"transport": "files"' in inspected.stdout
    text = subprocess.run(
        [DCODE, "media", "inspect", str(shot), "-m", "openai:gpt-4.1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert "  transport   files: each image uploaded once" in text.stdout  # known without a key


def test_doctor_ping_sends_the_model_one_tiny_request(server, tmp_path) -> None:
    from tests.support.model_server import reply

    server.script(reply("pong"))
    result = doctor(
        ["-m", "openai:test-model", "--base-url", server.base_url, "--ping"],
        tmp_path,
        {"OPENAI_API_KEY": "k"},
    )
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("ping ")]
    assert line.startswith("ping         ok: openai:test-model answered in ") and line.endswith(
        " s: pong"
    )
    [request] = server.requests  # one request, the prompt a person can read in the server's log
    assert request.transcript()[-1] == ("user", "Reply with the single word: pong")


def test_doctor_ping_says_why_the_model_did_not_answer(server, tmp_path) -> None:
    from tests.support.model_server import fault

    server.script(fault.status(401, repeat=True))
    result = doctor(
        ["-m", "openai:test-model", "--base-url", server.base_url, "--ping"],
        tmp_path,
        {"OPENAI_API_KEY": "wrong"},
    )
    assert result.returncode == 1
    [line] = [line for line in result.stdout.splitlines() if line.startswith("ping ")]
    assert (
        line.startswith("ping         FAILED after ")
        and "authentication failed (401)" in line
        and "check the API key" in line
    )
    assert len(server.requests) == 1  # never retried: a ping is one request
