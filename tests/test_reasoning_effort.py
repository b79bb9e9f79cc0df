"""Reasoning effort: from the model's profile, --effort or /effort, to each wire's own field."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.models.factory import resolve_model
from dcode.settings.config import ConfigError, ReasoningEffort, load_settings
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import running_app


async def ask(engine: Engine) -> None:
    runner = engine.runner(HeadlessApprover())
    events = [e async for e in runner.run_turn("think")]
    assert not events[-1].is_error, events[-1]


async def test_each_wire_gets_the_effort_in_its_own_field(
    server: ScriptedModelServer, make_settings
) -> None:
    server.script(
        reply("chat", reasoning="thinking hard"),
        reply("responses", reasoning="thought about it"),
        reply("plain"),
    )
    async with await Engine.open(make_settings("chat", effort=ReasoningEffort.HIGH)) as engine:
        await ask(engine)
    async with await Engine.open(make_settings("responses", effort=ReasoningEffort.LOW)) as engine:
        await ask(engine)
    async with await Engine.open(make_settings("chat")) as engine:
        await ask(engine)
    chat, responses, plain = (request.body for request in server.requests)
    assert chat["reasoning_effort"] == "high" and "reasoning" not in chat
    assert (
        responses["reasoning"] == {"effort": "low", "summary": "auto"}
        and "reasoning_effort" not in responses
    )
    assert (
        "reasoning_effort" not in plain and "reasoning" not in plain
    )  # nothing asked: nothing sent


def test_the_profile_sets_it_the_flag_overrides_it_and_bad_levels_are_one_line(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[models."openai:gpt-5.1"]\nreasoning_effort = "medium"\n')
    env = {"DCODE_HOME": str(home), "OPENAI_API_KEY": "k"}
    settings = load_settings(workspace=tmp_path, env=env, cli={"model": "openai:gpt-5.1"})
    assert resolve_model(settings, env).profile.reasoning_effort == "medium"
    flagged = load_settings(
        workspace=tmp_path,
        env=env,
        cli={"model": "openai:gpt-5.1", "effort": ReasoningEffort.XHIGH},
    )
    assert resolve_model(flagged, env).profile.reasoning_effort == "xhigh"
    from_env = load_settings(
        workspace=tmp_path, env={**env, "DCODE_EFFORT": "minimal"}, cli={"model": "openai:gpt-5.1"}
    )
    assert resolve_model(from_env, env).profile.reasoning_effort == "minimal"
    with pytest.raises(ConfigError, match="effort = 'maximal' is not valid"):
        load_settings(workspace=tmp_path, env={**env, "DCODE_EFFORT": "maximal"})
    (home / "config.toml").write_text('[models."openai:gpt-5.1"]\nreasoning_effort = "extreme"\n')
    with pytest.raises(
        ConfigError, match="reasoning_effort must be one of none, minimal, low, medium, high, xhigh"
    ):
        resolve_model(
            load_settings(workspace=tmp_path, env=env, cli={"model": "openai:gpt-5.1"}), env
        )


async def test_effort_in_the_tui_changes_the_next_request_and_the_status_bar(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("one"), reply("two")) as h:
        await h.send("/effort")
        await h.until(
            lambda: "no reasoning effort is asked for" in h.text(), what="the current effort"
        )
        await h.send("/effort high")
        await h.until(
            lambda: "reasoning effort for openai:test-model: high" in h.text(),
            what="the new effort",
        )
        assert h.app.status.model == "openai:test-model · high"
        await h.send("hi")
        await h.idle()
        await h.send("/effort loud")
        await h.until(
            lambda: (
                "/effort takes none · minimal · low · medium · high · xhigh or default, not 'loud'"
                in h.text()
            ),
            what="the refusal",
        )
        await h.send("/effort default")
        await h.until(lambda: h.app.status.model == "openai:test-model", what="the default again")
        await h.send("again")
        await h.idle()
    first, second = (request.body for request in server.requests)
    assert first["reasoning_effort"] == "high" and "reasoning_effort" not in second
