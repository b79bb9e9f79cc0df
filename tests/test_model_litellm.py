"""A real LiteLLM proxy in front of the scripted server, on loopback: dcode's tries do not
multiply the proxy's, and discovery reads the window from its ``/model/info``.

LiteLLM's proxy is large (its ``[proxy]`` extra installs hundreds of megabytes and takes
minutes), so it is not a test dependency: this runs where a ``litellm`` command is on the PATH
or named by ``DCODE_TEST_LITELLM``, and is skipped elsewhere. ``tests/test_model_retries.py``
covers the same rules on every run, with the scripted server answering as the proxy does.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from dcode.models.factory import resolve_model
from dcode.settings.config import Settings
from tests.support.model_server import ScriptedModelServer, fault
from tests.test_model_limits import headless

LITELLM = os.environ.get("DCODE_TEST_LITELLM") or shutil.which("litellm")
pytestmark = pytest.mark.skipif(
    not LITELLM, reason="LiteLLM's proxy is not installed (pip install 'litellm[proxy]')"
)

CONFIG = """\
model_list:
  - model_name: coder
    litellm_params:
      model: openai/test-model
      api_base: {upstream}
      api_key: upstream-key
    model_info:
      max_input_tokens: 8192
      max_output_tokens: 1024
"""


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def proxy(server: ScriptedModelServer, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The proxy's base URL and master key; it forwards ``coder`` to the scripted server."""
    config = tmp_path / "litellm.yaml"
    config.write_text(CONFIG.format(upstream=server.base_url))
    key, port = f"sk-{secrets.token_hex(16)}", free_port()
    # Its price table is read from the package, never fetched.
    env = {
        **os.environ,
        "LITELLM_MASTER_KEY": key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
    }
    log = (tmp_path / "litellm.log").open("wb")
    process = subprocess.Popen(
        [str(LITELLM), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=log,
    )
    try:
        wait_until_live(f"http://127.0.0.1:{port}", process)
        yield f"http://127.0.0.1:{port}/v1", key
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        log.close()


def wait_until_live(root: str, process: subprocess.Popen[bytes], limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"litellm exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{root}/health/liveliness", timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise TimeoutError("litellm did not start")


def one_plain_request(base_url: str, key: str) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="coder", messages=[{"role": "user", "content": "hi"}])


async def test_a_persistent_500_behind_litellm_costs_its_tries_only(
    server: ScriptedModelServer, proxy, make_settings, monkeypatch
) -> None:
    base_url, key = proxy
    server.script(fault.status(500, repeat=True))
    one_plain_request(base_url, key)  # what one request costs upstream: the proxy's own tries
    per_request = len(server.requests)
    assert per_request >= 1
    monkeypatch.setenv("LITELLM_API_KEY", key)
    settings = make_settings(
        model="litellm:coder", base_url=base_url, max_retries=4, retry_budget=60
    )
    code, _, lines = await headless(settings)
    assert code == 1 and len(lines) == 1 and "model server error (500)" in lines[0]
    assert len(server.requests) == 2 * per_request  # one try of dcode's, not five


def test_discovery_reads_the_window_from_litellm(proxy, tmp_path: Path) -> None:
    base_url, key = proxy
    settings = replace(
        Settings(
            home=tmp_path / "home", workspace=tmp_path, model="litellm:coder", base_url=base_url
        )
    )
    profile = resolve_model(settings, env={"LITELLM_API_KEY": key}).profile
    assert (profile.max_input_tokens, profile.max_output_tokens) == (8192, 1024)
    assert "max_input_tokens" not in profile.guessed
