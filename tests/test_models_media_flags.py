"""The media flags of a profile: langchain's table where it has them, a config table over it."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from dcode.agent.media_policy import MediaPolicy
from dcode.models.factory import model_profile
from dcode.models.spec import parse_spec
from dcode.settings.config import load_settings

FLAGS = (
    "image_inputs",
    "audio_inputs",
    "video_inputs",
    "pdf_inputs",
    "image_tool_message",
    "pdf_tool_message",
)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-5.1", "gpt-realtime-2.1", "gpt-3.5-turbo"])
def test_known_models_carry_every_media_flag_langchain_has(model: str, tmp_path: Path) -> None:
    theirs = ChatOpenAI(model=model, api_key="profile-probe", max_retries=0).profile or {}
    settings = load_settings(workspace=tmp_path, env={"DCODE_HOME": str(tmp_path / "home")})
    profile = model_profile(parse_spec(f"openai:{model}"), settings)
    carried = {flag: getattr(profile, flag) for flag in FLAGS if isinstance(theirs.get(flag), bool)}
    assert carried == {flag: theirs[flag] for flag in carried}
    assert {"image_inputs", "pdf_inputs", "pdf_tool_message"} <= set(
        carried
    ) or model == "gpt-3.5-turbo"


def test_the_table_has_audio_and_pdf_tool_message_models(tmp_path: Path) -> None:
    settings = load_settings(workspace=tmp_path, env={"DCODE_HOME": str(tmp_path / "home")})
    realtime = model_profile(parse_spec("openai:gpt-realtime-2.1"), settings)
    assert realtime.audio_inputs and not realtime.video_inputs
    gpt4o = model_profile(parse_spec("openai:gpt-4o"), settings)
    assert (
        gpt4o.pdf_inputs
        and gpt4o.pdf_tool_message
        and gpt4o.image_tool_message
        and not gpt4o.audio_inputs
    )


@pytest.mark.parametrize("flag", FLAGS)
def test_a_config_table_overrides_each_flag(flag: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    settings = load_settings(workspace=tmp_path, env={"DCODE_HOME": str(home)})
    known = getattr(model_profile(parse_spec("openai:gpt-4o"), settings), flag)
    (home / "config.toml").write_text(
        f'[models."openai:gpt-4o"]\n{flag} = {str(not known).lower()}\n'
    )
    settings = load_settings(workspace=tmp_path, env={"DCODE_HOME": str(home)})
    profile = model_profile(parse_spec("openai:gpt-4o"), settings)
    assert getattr(profile, flag) is (not known)
    assert profile.source == "langchain + user config"
    others = {f: getattr(profile, f) for f in FLAGS if f != flag}
    assert others == {
        f: getattr(
            model_profile(
                parse_spec("openai:gpt-4o"),
                load_settings(workspace=tmp_path, env={"DCODE_HOME": str(tmp_path / "none")}),
            ),
            f,
        )
        for f in others
    }


def test_the_policy_reads_each_flag_and_the_wire() -> None:
    from dcode.models.profiles import ModelProfile

    everything = ModelProfile(**dict.fromkeys(FLAGS, True))
    chat, responses = (
        MediaPolicy.of(everything, wire="chat"),
        MediaPolicy.of(everything, wire="responses"),
    )
    assert [chat.accepts(m) for m in ("image", "audio", "video", "pdf", "file")] == [
        True,
        True,
        False,
        True,
        True,
    ]
    assert [responses.accepts(m) for m in ("image", "audio", "video", "pdf", "file")] == [
        True,
        False,
        False,
        True,
        True,
    ]
    assert [chat.stays_in_tool(m) for m in ("image", "audio", "video", "pdf")] == [
        True,
        False,
        False,
        True,
    ]
    for flag, modality in zip(FLAGS[:4], ("image", "audio", "video", "pdf"), strict=True):
        assert not MediaPolicy.of(
            ModelProfile(**{f: f != flag for f in FLAGS}), wire="chat"
        ).accepts(modality)
    assert not MediaPolicy.of(
        ModelProfile(**{f: f != "image_tool_message" for f in FLAGS}), wire="chat"
    ).stays_in_tool("image")
    assert not MediaPolicy.of(
        ModelProfile(**{f: f != "pdf_tool_message" for f in FLAGS}), wire="chat"
    ).stays_in_tool("pdf")
    assert not MediaPolicy.of(
        ModelProfile(**{f: f != "image_inputs" for f in FLAGS}), wire="chat"
    ).stays_in_tool("image")
