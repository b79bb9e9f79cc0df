"""langchain's known profiles read lightly: the same profile as ``ChatOpenAI``, none of its imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from dcode.models import known_profiles
from dcode.models.factory import model_profile
from dcode.models.known_profiles import known_openai_profile
from dcode.models.profiles import resolve_profile
from dcode.models.spec import parse_spec
from dcode.settings.config import Settings
from tests.test_media_fixtures import PROJECT_ROOT

SPECS = [
    "openai:gpt-5.1",
    "openai:gpt-5-mini",
    "openai:gpt-4.1-nano",
    "openai:gpt-4o",
    "openai:gpt-3.5-turbo",
    "openai:o3",
    "openrouter:openai/gpt-5.1",
    "openrouter:openai/gpt-4o-mini",
    "openai:no-such-model",
    "deepseek:deepseek-chat",
]
# ChatOpenAI turns this one off on Chat Completions; dcode reads no such field.
WIRE_DEPENDENT = {"mid_conversation_tools"}


def probed(model: str, responses: bool) -> dict | None:
    """What the engine used to build a ChatOpenAI for: its ``profile``."""
    name = model.split("/", 1)[1] if model.startswith("openai/") else model
    probe = ChatOpenAI(
        model=name, api_key="profile-probe", max_retries=0, use_responses_api=responses
    )
    return dict(probe.profile) if probe.profile else None


@pytest.mark.parametrize("text", SPECS)
@pytest.mark.parametrize("responses", [False, True])
def test_the_light_profile_is_the_one_chat_openai_reports(
    text: str, responses: bool, tmp_path: Path
) -> None:
    spec = parse_spec(text)
    settings = Settings(home=tmp_path, workspace=tmp_path, model=text)
    theirs = probed(spec.model, responses) if spec.provider in {"openai", "openrouter"} else None
    assert model_profile(spec, settings) == resolve_profile(spec.provider, spec.model, known=theirs)
    if spec.provider in {"openai", "openrouter"}:
        ours = known_openai_profile(spec.model)
        if theirs is None:
            assert ours is None
        else:
            assert ours is not None
            drop = lambda d: {k: v for k, v in d.items() if k not in WIRE_DEPENDENT}  # noqa: E731
            assert drop(ours) == drop(theirs)


def test_known_models_resolve_to_langchain_figures(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, workspace=tmp_path)
    profile = model_profile(parse_spec("openai:gpt-5.1"), settings)
    assert (
        profile.source == "langchain"
        and profile.max_input_tokens == 272_000
        and profile.image_inputs
    )
    assert model_profile(parse_spec("openai:no-such-model"), settings).source == "fallback"


def test_each_call_gets_its_own_copy() -> None:
    first = known_openai_profile("gpt-5.1")
    assert first is not None
    first["max_input_tokens"] = 1
    assert known_openai_profile("gpt-5.1")["max_input_tokens"] == 272_000  # type: ignore[index]


def test_without_the_data_file_the_probe_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(known_profiles, "_data_file", lambda: None)
    known_profiles._shipped_table.cache_clear()
    try:
        assert known_openai_profile("gpt-4o") == probed("gpt-4o", responses=False)
    finally:
        known_profiles._shipped_table.cache_clear()


LOAD_PROBE = """
import json, sys
from dcode.models import known_profiles
profile = known_profiles.known_openai_profile("gpt-5.1")
print(json.dumps({
    "from_file": known_profiles._shipped_table() is not None,
    "max_input_tokens": profile["max_input_tokens"],
    "heavy": sorted({m.split(".")[0] for m in sys.modules} & {"langchain_openai", "langchain_core", "openai", "pydantic"}),
}))
"""


def test_the_table_loads_from_its_file_alone() -> None:
    out = subprocess.run(
        [sys.executable, "-c", LOAD_PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    )
    assert json.loads(out.stdout) == {"from_file": True, "max_input_tokens": 272_000, "heavy": []}
