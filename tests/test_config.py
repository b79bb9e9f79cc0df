import re
from pathlib import Path

import pytest

from dcode.settings.config import ApprovalMode, ConfigError, WireApi, load_settings, save_preference
from dcode.settings.trust import ProjectFiles, TrustStore


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_without_files(home: Path, workspace: Path) -> None:
    settings = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    assert settings.home == home
    assert settings.model == "openai:gpt-5.1"
    assert settings.approve is None
    assert settings.sessions_db == home / "sessions.db"
    assert settings.sources == ()


def test_precedence_cli_env_project_user(home: Path, workspace: Path) -> None:
    write(home / "config.toml", 'model = "user:m"\napi = "chat"\nmax_turns = 7\ntheme = "nord"\n')
    write(workspace / ".dcode" / "config.toml", 'model = "project:m"\napprove = "all"\n')
    TrustStore(home).trust(
        workspace, ProjectFiles.read(workspace).digest
    )  # a trusted project's file applies whole
    env = {"DCODE_HOME": str(home)}
    settings = load_settings(workspace=workspace, env=env)
    assert (settings.model, settings.api, settings.max_turns, settings.approve) == (
        "project:m",
        WireApi.CHAT,
        7,
        ApprovalMode.ALL,
    )
    env["DCODE_MODEL"] = "env:m"
    assert load_settings(workspace=workspace, env=env).model == "env:m"
    settings = load_settings(
        workspace=workspace, env=env, cli={"model": "cli:m", "approve": "manual", "base_url": None}
    )
    assert settings.model == "cli:m"
    assert settings.approve is ApprovalMode.MANUAL
    assert len(settings.sources) == 2


def test_malformed_file_names_file_and_line(home: Path, workspace: Path) -> None:
    path = write(home / "config.toml", 'model = "a"\n\napi = = "chat"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    message = str(info.value)
    assert str(path) in message and "line 3" in message


def test_bad_value_names_file_and_line(home: Path, workspace: Path) -> None:
    path = write(home / "config.toml", 'model = "a"\napprove = "sometimes"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    assert (
        str(path) in str(info.value) and "line 2" in str(info.value) and "manual" in str(info.value)
    )


def test_unknown_key_is_an_error(home: Path, workspace: Path) -> None:
    write(home / "config.toml", 'model = "a"\nmodle = "b"\n')
    with pytest.raises(ConfigError, match="line 2: unknown setting 'modle'"):
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})


def test_bad_env_value(home: Path, workspace: Path) -> None:
    with pytest.raises(ConfigError, match="environment"):
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home), "DCODE_API": "soap"})


def test_provider_and_model_tables(home: Path, workspace: Path) -> None:
    write(
        home / "config.toml",
        '[providers.corp]\nbase_url = "http://corp/v1"\napi_key_env = "CORP_KEY"\n\n'
        '[models."corp:big"]\nmax_input_tokens = 64000\nimage_inputs = true\n',
    )
    settings = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    assert settings.providers["corp"].base_url == "http://corp/v1"
    assert settings.model_overrides["corp:big"] == {"max_input_tokens": 64000, "image_inputs": True}


def test_theme_preference_persists_over_config(home: Path, workspace: Path) -> None:
    write(home / "config.toml", 'theme = "nord"\n')
    settings = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    save_preference(settings, "theme", "dracula")
    assert load_settings(workspace=workspace, env={"DCODE_HOME": str(home)}).theme == "dracula"


def test_mode_cycle() -> None:
    """After ``all`` comes ``plan``, the strictest: one press too many never loosens anything."""
    assert [
        ApprovalMode.MANUAL.next(),
        ApprovalMode.EDITS.next(),
        ApprovalMode.ALL.next(),
        ApprovalMode.PLAN.next(),
    ] == [
        ApprovalMode.EDITS,
        ApprovalMode.ALL,
        ApprovalMode.PLAN,
        ApprovalMode.MANUAL,
    ]


def test_model_limits_default_to_minutes_not_hours(home: Path, workspace: Path) -> None:
    settings = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    limits = (
        settings.connect_timeout,
        settings.request_timeout,
        settings.stall_timeout,
        settings.retry_budget,
    )
    assert limits == (10.0, 60.0, 120.0, 180.0)


def test_model_limits_from_file_and_environment(home: Path, workspace: Path) -> None:
    write(
        home / "config.toml",
        "connect_timeout = 3\nrequest_timeout = 45.5\nstall_timeout = 300\nretry_budget = 600\n",
    )
    env = {"DCODE_HOME": str(home)}
    settings = load_settings(workspace=workspace, env=env)
    assert (
        settings.connect_timeout,
        settings.request_timeout,
        settings.stall_timeout,
        settings.retry_budget,
    ) == (3.0, 45.5, 300.0, 600.0)
    env |= {
        "DCODE_CONNECT_TIMEOUT": "1",
        "DCODE_REQUEST_TIMEOUT": "2",
        "DCODE_STALL_TIMEOUT": "3",
        "DCODE_RETRY_BUDGET": "4",
    }
    settings = load_settings(workspace=workspace, env=env)
    assert (
        settings.connect_timeout,
        settings.request_timeout,
        settings.stall_timeout,
        settings.retry_budget,
    ) == (1.0, 2.0, 3.0, 4.0)


@pytest.mark.parametrize("raw", ["0", "-5", "soon", "inf", "nan"])
def test_a_limit_must_be_a_positive_number_of_seconds(
    home: Path, workspace: Path, raw: str
) -> None:
    with pytest.raises(
        ConfigError,
        match=r"request_timeout = .* \(environment\); expected a positive number of seconds",
    ):
        load_settings(
            workspace=workspace, env={"DCODE_HOME": str(home), "DCODE_REQUEST_TIMEOUT": raw}
        )
    write(home / "config.toml", 'model = "a"\nstall_timeout = true\n')
    with pytest.raises(ConfigError, match="line 2: stall_timeout = True"):
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})


def test_compaction_triggers_by_tokens_messages_or_share_of_the_window(
    home: Path, workspace: Path
) -> None:
    from dcode.settings.compaction_triggers import Threshold, Triggers, Unit

    assert load_settings(workspace=workspace, env={"DCODE_HOME": str(home)}).triggers == Triggers()
    write(
        home / "config.toml",
        'compact_at = 120000\ncompact_keep = "6 messages"\ntruncate_at = "60%"\n',
    )
    triggers = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)}).triggers
    assert triggers == Triggers(
        Threshold(Unit.TOKENS, 120_000), Threshold(Unit.MESSAGES, 6), Threshold(Unit.FRACTION, 0.6)
    )
    assert (str(triggers.summarize_at), str(triggers.keep), str(triggers.truncate_at)) == (
        "120000 tokens",
        "6 messages",
        "60%",
    )
    assert (
        Threshold.parse(0.85)
        == Threshold.parse("85%")
        == Threshold.parse("0.85")
        == Threshold(Unit.FRACTION, 0.85)
    )
    for bad in ("0%", "150%", 0, -5, True, "lots", "2.5 messages"):
        with pytest.raises(ValueError):  # noqa: PT011 - each bad value words it its own way
            Threshold.parse(bad)
    write(home / "config.toml", 'compact_at = "lots"\n')
    with pytest.raises(
        ConfigError, match=r"line 1: compact_at = 'lots' is not valid .* a count of messages"
    ):
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})


def test_tier_one_must_fire_below_tier_two(home: Path, workspace: Path) -> None:
    write(home / "config.toml", 'compact_at = "80%"\ntruncate_at = "90%"\n')
    with pytest.raises(ConfigError, match=r"truncate_at \(90%\) must be below compact_at \(80%\)"):
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    write(
        home / "config.toml", 'compact_at = "40 messages"\ntruncate_at = "90%"\n'
    )  # other units: each fires on its own
    assert (
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)}).truncate_at.value == 0.9
    )


ASYNC_AGENTS = """model = "a"

[[async_agents]]
name = "research"
url = "https://agents.example.com"
assistant = "researcher"
headers = { Authorization = "Bearer ${AGENTS_TOKEN}" }

[[async_agents]]
name = "local"
url = "http://127.0.0.1:2024"
assistant = "agent"
"""


def test_async_agents_from_the_users_config(home: Path, workspace: Path) -> None:
    from dcode.settings.config import describe
    from dcode.settings.values import AsyncAgentConfig

    write(home / "config.toml", ASYNC_AGENTS)
    settings = load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    assert settings.async_agents == (
        AsyncAgentConfig(
            "research",
            "https://agents.example.com",
            "researcher",
            {"Authorization": "Bearer ${AGENTS_TOKEN}"},  # expanded only when a request is made
        ),
        AsyncAgentConfig("local", "http://127.0.0.1:2024", "agent"),
    )
    shown = describe(settings)["async_agents"]
    assert shown == [  # a header's value may be a token: `config show` names the header only
        {
            "name": "research",
            "url": "https://agents.example.com",
            "assistant": "researcher",
            "headers": ["Authorization"],
        },
        {"name": "local", "url": "http://127.0.0.1:2024", "assistant": "agent", "headers": []},
    ]


def test_async_agents_are_never_a_projects(home: Path, workspace: Path) -> None:
    path = write(workspace / ".dcode" / "config.toml", ASYNC_AGENTS)
    TrustStore(home).trust(workspace, ProjectFiles.read(workspace).digest)
    with pytest.raises(ConfigError) as info:
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
    assert str(info.value) == (
        f"{path} line 3: [[async_agents]] is read from your own config only, not a project's: "
        f"move it to {home / 'config.toml'}"
    )


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('name = "a"\nurl = "http://h"', "every [[async_agents]] needs assistant (text)"),
        ('name = "a"\nurl = "ftp://h"\nassistant = "x"', "url must be an http:// or https://"),
        ('name = "a"\nurl = "http://h"\nassistant = "x"\ngraph = "y"', "unknown key 'graph'"),
        ('name = "a"\nurl = "http://h"\nassistant = "x"\nheaders = { A = 1 }', "table of text"),
        (
            (
                'name = "a"\nurl = "http://h"\nassistant = "x"\n[[async_agents]]\n'
                'name = "a"\nurl = "http://g"\nassistant = "y"'
            ),
            "two [[async_agents]] are named 'a'",
        ),
    ],
)
def test_a_wrong_async_agent_is_one_line(
    entry: str, problem: str, home: Path, workspace: Path
) -> None:
    write(home / "config.toml", f"[[async_agents]]\n{entry}\n")
    with pytest.raises(ConfigError, match=re.escape(problem)):
        load_settings(workspace=workspace, env={"DCODE_HOME": str(home)})
