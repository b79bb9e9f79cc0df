"""Which calls ask, by the kind in each tool's spec: the policy alone, then the real middleware
in a real agent loop (ChatOpenAI against the scripted server) with a tool dcode does not know."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI

from dcode.agent.approval import ApprovalDecision, ApprovalPolicy, remember
from dcode.agent.backends import LocalBackend
from dcode.agent.events import ApprovalKind, ApprovalRequested, Event
from dcode.agent.middleware.approval import ApprovalMiddleware
from dcode.agent.run_context import RunContext
from dcode.agent.tools.spec import WEB_FETCH
from dcode.settings.config import ApprovalMode
from tests.support.http_clients import closes_http_clients, own_http_client  # noqa: F401 - the fixture closes them
from tests.support.model_server import ScriptedModelServer, reply, tool_call

UNKNOWN = "mcp__tracker__close_issue"


def policy(mode: ApprovalMode, workspace: Path) -> ApprovalPolicy:
    return ApprovalPolicy(mode, LocalBackend(workspace))


@pytest.mark.parametrize("mode", [ApprovalMode.MANUAL, ApprovalMode.EDITS])
def test_a_tool_without_a_spec_asks(mode: ApprovalMode, tmp_path: Path) -> None:
    verdict = policy(mode, tmp_path).check(UNKNOWN, {"id": 7})
    assert verdict is not None and verdict.kind is ApprovalKind.TOOL
    assert UNKNOWN in verdict.reason


def test_a_tool_without_a_spec_runs_in_all_mode(tmp_path: Path) -> None:
    assert policy(ApprovalMode.ALL, tmp_path).check(UNKNOWN, {"id": 7}) is None


def test_yes_for_the_session_covers_that_unknown_tool_alone(tmp_path: Path) -> None:
    gate = policy(ApprovalMode.MANUAL, tmp_path)
    verdict = gate.check(UNKNOWN, {})
    assert verdict is not None
    remember(gate, verdict)
    assert gate.check(UNKNOWN, {}) is None
    assert gate.check("mcp__tracker__open_issue", {}) is not None
    assert gate.check("execute", {"command": "true"}) is not None


@pytest.mark.parametrize(
    "name", ["ls", "read_file", "glob", "grep", "write_todos", "compact_conversation"]
)
def test_tools_that_change_nothing_outside_the_conversation_never_ask(
    name: str, tmp_path: Path
) -> None:
    assert policy(ApprovalMode.MANUAL, tmp_path).check(name, {"todos": [], "path": "."}) is None


def test_writes_and_the_shell_by_mode(tmp_path: Path) -> None:
    inside = {"file_path": "a.txt", "content": "x"}
    outside = {"file_path": str(tmp_path.parent / "elsewhere.txt"), "content": "x"}
    manual, edits = policy(ApprovalMode.MANUAL, tmp_path), policy(ApprovalMode.EDITS, tmp_path)
    assert manual.check("write_file", inside).kind is ApprovalKind.EDIT  # type: ignore[union-attr]
    assert edits.check("edit_file", {**inside, "old_string": "a", "new_string": "b"}) is None
    assert edits.check("write_file", outside).kind is ApprovalKind.EDIT  # type: ignore[union-attr]
    assert edits.check("execute", {"command": "true"}).kind is ApprovalKind.SHELL  # type: ignore[union-attr]


FETCH = {"url": "https://docs.example.org/guide.html"}


@pytest.mark.parametrize("mode", [ApprovalMode.MANUAL, ApprovalMode.EDITS])
def test_a_web_fetch_asks_in_manual_and_edits(mode: ApprovalMode, tmp_path: Path) -> None:
    verdict = policy(mode, tmp_path).check(WEB_FETCH.name, FETCH)
    assert verdict is not None and verdict.kind is ApprovalKind.FETCH
    assert verdict.reason == "fetching a URL needs approval"


def test_a_web_fetch_runs_in_all_mode(tmp_path: Path) -> None:
    assert policy(ApprovalMode.ALL, tmp_path).check(WEB_FETCH.name, FETCH) is None


def test_yes_for_the_session_to_fetches_covers_fetches_only(tmp_path: Path) -> None:
    gate = policy(ApprovalMode.EDITS, tmp_path)
    gate.session_allowed.add(ApprovalKind.FETCH)
    assert gate.check(WEB_FETCH.name, FETCH) is None
    assert (
        gate.check("execute", {"command": "curl https://docs.example.org"}).kind
        is ApprovalKind.SHELL
    )  # type: ignore[union-attr]
    assert gate.check(UNKNOWN, {}).kind is ApprovalKind.TOOL  # type: ignore[union-attr]
    other = policy(ApprovalMode.MANUAL, tmp_path)
    other.session_allowed |= {ApprovalKind.SHELL, ApprovalKind.TOOL, ApprovalKind.EDIT}
    assert other.check(WEB_FETCH.name, FETCH).kind is ApprovalKind.FETCH  # type: ignore[union-attr]


START = {"description": "summarize the logs", "subagent_type": "research"}


@pytest.mark.parametrize("mode", [ApprovalMode.MANUAL, ApprovalMode.EDITS])
@pytest.mark.parametrize(
    ("name", "args"),
    [("start_async_task", START), ("update_async_task", {"task_id": "t", "message": "more"})],
)
def test_sending_work_to_a_remote_agent_asks_like_a_fetch(
    mode: ApprovalMode, name: str, args: dict[str, object], tmp_path: Path
) -> None:
    verdict = policy(mode, tmp_path).check(name, args)
    assert verdict is not None and verdict.kind is ApprovalKind.FETCH
    assert verdict.reason == "sending work to a remote agent needs approval"
    assert policy(ApprovalMode.ALL, tmp_path).check(name, args) is None
    yes = policy(mode, tmp_path)
    yes.session_allowed.add(ApprovalKind.FETCH)  # "a" to a fetch covers it, as a network action
    assert yes.check(name, args) is None


@pytest.mark.parametrize("name", ["check_async_task", "cancel_async_task", "list_async_tasks"])
def test_asking_after_a_started_task_never_asks(name: str, tmp_path: Path) -> None:
    assert policy(ApprovalMode.MANUAL, tmp_path).check(name, {"task_id": "t"}) is None


def test_sites_named_in_fetch_allow_are_read_without_asking(tmp_path: Path) -> None:
    gate = ApprovalPolicy(
        ApprovalMode.MANUAL,
        LocalBackend(tmp_path),
        fetch_allow=("docs.python.org", "*.readthedocs.io"),
    )
    for url in (
        "https://docs.python.org/3/library/re.html",
        "http://docs.python.org/",
        "https://pip.readthedocs.io/en/stable/",
        "https://DOCS.Python.ORG.:443/3/",  # the host the request goes to, however it is spelled
    ):
        assert gate.check(WEB_FETCH.name, {"url": url}) is None, url
    for url in (
        "https://evil.example/?q=docs.python.org",  # the host decides, not the text
        "https://docs.python.org.evil.example/",
        "https://readthedocs.io.evil.example/",
    ):
        assert gate.check(WEB_FETCH.name, {"url": url}).kind is ApprovalKind.FETCH, url  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pw@docs.python.org/",  # credentials
        "http://docs.python.org@evil.example/",  # a user name that looks like the host
        "http://docs.python.org\\@evil.example/",
        "file:///etc/passwd",
        "not a url",
        "http://127.1:8000/",  # private addresses the user has not named
        "http://LOCALHOST./",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
def test_a_url_web_fetch_refuses_outright_is_not_asked_about(url: str, tmp_path: Path) -> None:
    """Nothing would be fetched: a question would only show a URL that is not going to be used.
    The call runs to web_fetch's own refusal (``test_web_fetch_private``)."""
    from dcode.settings.web_address import refused_outright

    gate = ApprovalPolicy(
        ApprovalMode.MANUAL, LocalBackend(tmp_path), fetch_allow=("docs.python.org",)
    )
    assert refused_outright(url, gate.fetch_private) is not None
    assert gate.check(WEB_FETCH.name, {"url": url}) is None


def test_a_private_host_the_user_named_asks_like_any_other(tmp_path: Path) -> None:
    gate = ApprovalPolicy(
        ApprovalMode.EDITS, LocalBackend(tmp_path), fetch_private=("localhost:8000", "127.0.0.1")
    )
    for url in ("http://localhost:8000/", "http://127.1:9999/"):
        assert gate.check(WEB_FETCH.name, {"url": url}).kind is ApprovalKind.FETCH, url  # type: ignore[union-attr]
    assert (
        gate.check(WEB_FETCH.name, {"url": "http://localhost:8001/"}) is None
    )  # another port: refused outright


def test_fetch_allow_is_the_users_own_setting(tmp_path: Path) -> None:
    from dcode.settings.config import ConfigError, load_settings

    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".dcode").mkdir(parents=True)
    home.mkdir()
    (home / "config.toml").write_text('[fetch]\nallow = ["Docs.Python.org"]\n')
    (project / ".dcode" / "config.toml").write_text('[fetch]\nallow = ["evil.example"]\n')
    settings = load_settings(workspace=project, env={"DCODE_HOME": str(home)})
    assert settings.fetch_allow == ("docs.python.org",)  # the untrusted project's list is left out
    assert [(i.key, i.reason) for i in settings.ignored] == [
        ("fetch.allow", "lets the model fetch URLs from these sites without asking")
    ]
    (home / "config.toml").write_text('[fetch]\nallow = "docs.python.org"\n')
    with pytest.raises(ConfigError, match=r"\[fetch\] allow must be a list of hosts"):
        load_settings(workspace=tmp_path, env={"DCODE_HOME": str(home)})


def test_allow_private_is_read_from_the_users_own_config_only(tmp_path: Path) -> None:
    from dcode.settings.config import ConfigError, load_settings
    from dcode.settings.trust import ProjectFiles, TrustStore

    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".dcode").mkdir(parents=True)
    home.mkdir()
    (home / "config.toml").write_text(
        '[fetch]\nallow_private = ["LOCALHOST.:8000", "127.1", "[::1]:8080", "Intranet.Example"]\n'
    )
    settings = load_settings(workspace=tmp_path, env={"DCODE_HOME": str(home)})
    assert settings.fetch_private == (
        "localhost:8000",
        "127.0.0.1",
        "[::1]:8080",
        "intranet.example",
    )  # as web_fetch spells hosts
    (project / ".dcode" / "config.toml").write_text(
        '[fetch]\nallow_private = ["169.254.169.254"]\n'
    )
    for trusted in (False, True):  # not even a project the user trusts
        if trusted:
            TrustStore(home).trust(project, ProjectFiles.read(project).digest)
        with pytest.raises(
            ConfigError,
            match=r"line 2: \[fetch\] allow_private is read only from your own config \(.*config\.toml\), never a project's",
        ):
            load_settings(workspace=project, env={"DCODE_HOME": str(home)})
    for bad in ('"*.corp.example"', '"http://localhost:8000/"', '"localhost:99999"', '"::1"'):
        (home / "config.toml").write_text(f"[fetch]\nallow_private = [{bad}]\n")
        with pytest.raises(
            ConfigError,
            match=r"\[fetch\] allow_private: .*a list of hosts like \[\"localhost:8000\"",
        ):
            load_settings(workspace=tmp_path, env={"DCODE_HOME": str(home)})


class RecordingApprover:
    def __init__(self, approve: bool) -> None:
        self.approve = approve
        self.requests: list[ApprovalRequested] = []

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(self.approve)


async def run_agent(
    server: ScriptedModelServer, workspace: Path, mode: ApprovalMode, approve: bool
) -> tuple[RecordingApprover, list[dict[str, Any]]]:
    ran: list[dict[str, Any]] = []

    def close_issue(id: int) -> str:
        ran.append({"id": id})
        return f"closed #{id}"

    tool = StructuredTool.from_function(
        close_issue, name=UNKNOWN, description="Close an issue in the tracker."
    )
    model = ChatOpenAI(
        model="test-model",
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_async_client=own_http_client(),
    )
    agent = create_agent(
        model, tools=[tool], middleware=[ApprovalMiddleware()], context_schema=RunContext
    )
    approver = RecordingApprover(approve)
    events: list[Event] = []
    backend = LocalBackend(workspace)
    context = RunContext(approver, ApprovalPolicy(mode, backend), backend, events.append)
    await agent.ainvoke({"messages": [("user", "close issue 7")]}, context=context)
    return approver, ran


@pytest.mark.parametrize("mode", [ApprovalMode.MANUAL, ApprovalMode.EDITS])
async def test_an_unknown_tool_waits_for_a_yes(
    server: ScriptedModelServer, workspace: Path, mode: ApprovalMode
) -> None:
    server.script(reply(tool_calls=[tool_call(UNKNOWN, {"id": 7})]), reply("not closed"))
    approver, ran = await run_agent(server, workspace, mode, approve=False)
    assert [request.kind for request in approver.requests] == [ApprovalKind.TOOL]
    assert approver.requests[0].summary == f"{UNKNOWN} id=7"
    assert ran == []
    [result] = [text for role, text in server.transcript(1) if role == "tool"]
    assert result.startswith("denied:")


async def test_an_approved_unknown_tool_runs(server: ScriptedModelServer, workspace: Path) -> None:
    server.script(reply(tool_calls=[tool_call(UNKNOWN, {"id": 7})]), reply("closed"))
    approver, ran = await run_agent(server, workspace, ApprovalMode.MANUAL, approve=True)
    assert len(approver.requests) == 1 and ran == [{"id": 7}]


async def test_a_made_up_tool_name_is_not_asked_about(
    server: ScriptedModelServer, workspace: Path
) -> None:
    """Nothing would run, so nobody is asked; the model hears that the tool does not exist."""
    server.script(reply(tool_calls=[tool_call("python", {"code": "1"})]), reply("sorry"))
    approver, ran = await run_agent(server, workspace, ApprovalMode.MANUAL, approve=True)
    assert approver.requests == [] and ran == []
    [result] = [text for role, text in server.transcript(1) if role == "tool"]
    assert "python" in result and "not a valid tool" in result
