"""What the sandbox changes about approvals: the policy alone, then the real middleware and the
real ``execute`` tool in an agent loop (ChatOpenAI against the scripted server, real bubblewrap)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI

from dcode.agent.approval import (
    UNCONFINED,
    ApprovalDecision,
    ApprovalPolicy,
    ScopedPolicy,
    remember,
)
from dcode.agent.backends import LocalBackend
from dcode.agent.backends.environment import ShellEnvironment
from dcode.agent.events import ApprovalKind, ApprovalRequested, Event
from dcode.agent.middleware.approval import ApprovalMiddleware
from dcode.agent.run_context import RunContext
from dcode.agent.tools.args import OUTSIDE_SANDBOX
from dcode.agent.tools.execute import make_execute_tool
from dcode.agent.tools.spec import EXECUTE
from dcode.sandbox.confine import Sandbox
from dcode.sandbox.modes import SandboxMode, SandboxSettings
from dcode.sandbox.probe import availability
from dcode.settings.config import ApprovalMode
from tests.support.http_clients import closes_http_clients, own_http_client  # noqa: F401 - the fixture closes them
from tests.support.model_server import ScriptedModelServer, reply, tool_call

SHELL = {"command": "make test"}
OUTSIDE = {"command": "make test", OUTSIDE_SANDBOX: True}


def policy(mode: ApprovalMode, workspace: Path, sandboxed: bool) -> ApprovalPolicy:
    return ApprovalPolicy(mode, LocalBackend(workspace), shell_sandboxed=lambda: sandboxed)


def test_sandboxed_the_shell_runs_unasked_in_edits_mode_only(tmp_path: Path) -> None:
    assert policy(ApprovalMode.EDITS, tmp_path, sandboxed=True).check(EXECUTE.name, SHELL) is None
    manual = policy(ApprovalMode.MANUAL, tmp_path, sandboxed=True).check(EXECUTE.name, SHELL)
    assert manual is not None and manual.kind is ApprovalKind.SHELL
    unconfined = policy(ApprovalMode.EDITS, tmp_path, sandboxed=False).check(EXECUTE.name, SHELL)
    assert unconfined is not None and unconfined.kind is ApprovalKind.SHELL


@pytest.mark.parametrize("mode", [mode for mode in ApprovalMode if mode is not ApprovalMode.PLAN])
def test_outside_the_sandbox_asks_in_every_mode_every_time(
    mode: ApprovalMode, tmp_path: Path
) -> None:
    rules = policy(mode, tmp_path, sandboxed=True)
    verdict = rules.check(EXECUTE.name, OUTSIDE)
    assert (
        verdict is not None
        and verdict.reason == UNCONFINED
        and "OUTSIDE the sandbox" in verdict.reason
    )
    remember(rules, verdict)  # "yes for the rest of the session" covers this one call only
    assert rules.check(EXECUTE.name, OUTSIDE) is not None
    assert rules.session_allowed == set()


def test_a_subagent_asks_the_same(tmp_path: Path) -> None:
    scoped = ScopedPolicy(
        policy(ApprovalMode.ALL, tmp_path, sandboxed=True), None, LocalBackend(tmp_path)
    )
    assert scoped.check(EXECUTE.name, OUTSIDE) is not None
    assert (
        ScopedPolicy(
            policy(ApprovalMode.EDITS, tmp_path, sandboxed=True), None, LocalBackend(tmp_path)
        ).check(EXECUTE.name, SHELL)
        is None
    )


def test_without_the_sandbox_the_argument_changes_nothing(tmp_path: Path) -> None:
    assert policy(ApprovalMode.ALL, tmp_path, sandboxed=False).check(EXECUTE.name, OUTSIDE) is None


class RecordingApprover:
    def __init__(self, approve: bool) -> None:
        self.approve = approve
        self.requests: list[ApprovalRequested] = []

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(self.approve)


@pytest.fixture
def outside() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dcode-sandbox-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def run_agent(
    server: ScriptedModelServer, workspace: Path, mode: ApprovalMode, approve: bool, home: Path
) -> RecordingApprover:
    backend = LocalBackend(
        workspace,
        environment=ShellEnvironment.of(),
        sandbox=Sandbox(SandboxSettings(SandboxMode.WORKSPACE_WRITE), workspace, home),
    )
    model = ChatOpenAI(
        model="test-model",
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_async_client=own_http_client(),
    )
    agent = create_agent(
        model,
        tools=[make_execute_tool(backend)],
        middleware=[ApprovalMiddleware()],
        context_schema=RunContext,
    )
    approver = RecordingApprover(approve)
    events: list[Event] = []
    rules = ApprovalPolicy(
        mode, backend, shell_sandboxed=lambda: backend.sandbox is not None and backend.sandbox.on
    )
    await agent.ainvoke(
        {"messages": [("user", "build it")]},
        context=RunContext(approver, rules, backend, events.append),
    )
    return approver


needs_bwrap = pytest.mark.skipif(
    not availability().works, reason=f"no working sandbox here: {availability().problem}"
)


@needs_bwrap
async def test_edits_mode_runs_a_sandboxed_command_and_says_when_the_sandbox_stopped_it(
    server: ScriptedModelServer, workspace: Path, outside: Path
) -> None:
    target = outside / "escaped"
    server.script(
        reply(
            tool_calls=[
                tool_call(EXECUTE.name, {"command": f"echo built > out.txt; echo x > {target}"})
            ]
        ),
        reply("done"),
    )
    approver = await run_agent(
        server, workspace, ApprovalMode.EDITS, approve=False, home=outside / "home"
    )
    assert approver.requests == []
    assert (workspace / "out.txt").read_text() == "built\n" and not target.exists()
    [result] = [text for role, text in server.transcript(1) if role == "tool"]
    assert "Read-only file system" in result and f"{OUTSIDE_SANDBOX}=true" in result


@needs_bwrap
@pytest.mark.parametrize("approve", [False, True])
async def test_running_outside_asks_even_in_all_mode(
    server: ScriptedModelServer, workspace: Path, outside: Path, approve: bool
) -> None:
    target = outside / "unconfined"
    server.script(
        reply(
            tool_calls=[
                tool_call(EXECUTE.name, {"command": f"echo x > {target}", OUTSIDE_SANDBOX: True})
            ]
        ),
        reply("ok"),
    )
    approver = await run_agent(
        server, workspace, ApprovalMode.ALL, approve=approve, home=outside / "home"
    )
    [request] = approver.requests
    assert request.reason == UNCONFINED
    assert target.exists() is approve


def test_plan_mode_refuses_the_shell_outside_the_sandbox_too(tmp_path: Path) -> None:
    verdict = policy(ApprovalMode.PLAN, tmp_path, sandboxed=True).check(EXECUTE.name, OUTSIDE)
    assert verdict is not None and verdict.refused and verdict.reason != UNCONFINED
