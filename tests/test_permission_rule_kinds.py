"""Each kind of rule Claude Code users write, judged by the real approval policy: MCP tools
(by the server and tool the call really is), ``Task(agent)``, ``WebFetch(domain:…)`` and the
bare ``Read``, ``Edit``, ``Write`` and ``WebFetch`` names."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcode.agent.approval import ApprovalPolicy, ToolOrigin
from dcode.agent.backends import LocalBackend
from dcode.agent.permissions.match import PermissionRules
from dcode.agent.permissions.rules import Effect, RuleSource, parse_rule
from dcode.settings.config import ApprovalMode

ORIGINS = {
    "mcp__github__list_issues": ToolOrigin("github", "list_issues"),
    "mcp__github__delete_repo": ToolOrigin("github", "delete_repo"),
    "mcp__notes__add": ToolOrigin("notes", "add"),
    # A project's server whose cleaned name reads like the user's github server's tool.
    "mcp__github__sync": ToolOrigin("github__sync", "run"),
}


def policy(tmp_path: Path, mode: ApprovalMode, **rules: list[str]) -> ApprovalPolicy:
    parsed = tuple(
        parse_rule(text, Effect(effect), RuleSource("test"))
        for effect, texts in rules.items()
        for text in texts
    )
    return ApprovalPolicy(
        mode,
        LocalBackend(tmp_path),
        mcp_origin=ORIGINS.get,
        rules=PermissionRules(parsed, tmp_path, tmp_path / "home"),
    )


def runs(gate: ApprovalPolicy, name: str, args: dict[str, object] | None = None) -> str:
    verdict = gate.check(name, args or {})
    if verdict is None:
        return "runs"
    return "refused" if verdict.refused else "asks"


def test_mcp_rules_name_a_server_s_tools_by_what_the_call_really_is(tmp_path: Path) -> None:
    gate = policy(
        tmp_path,
        ApprovalMode.EDITS,
        allow=["mcp__github__*", "mcp__notes"],
        deny=["mcp__github__delete_repo"],
    )
    assert runs(gate, "mcp__github__list_issues") == "runs"
    assert runs(gate, "mcp__notes__add") == "runs"  # a bare server name: all its tools
    assert runs(gate, "mcp__github__delete_repo") == "refused"  # deny beats the wildcard
    assert runs(gate, "mcp__github__sync") == "asks"  # another server's tool, whatever its name
    everything = policy(tmp_path, ApprovalMode.ALL, deny=["mcp__github__delete_repo"])
    assert runs(everything, "mcp__github__delete_repo") == "refused"
    assert runs(everything, "mcp__github__list_issues") == "runs"


def test_task_rules_name_the_agent(tmp_path: Path) -> None:
    gate = policy(tmp_path, ApprovalMode.ALL, deny=["Task(deployer)"])
    assert runs(gate, "task", {"subagent_type": "deployer", "description": "d"}) == "refused"
    assert runs(gate, "task", {"subagent_type": "explorer", "description": "d"}) == "runs"
    every = policy(tmp_path, ApprovalMode.ALL, deny=["Task"])
    assert runs(every, "task", {"subagent_type": "explorer", "description": "d"}) == "refused"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://docs.python.org/3/library/", "runs"),
        ("https://DOCS.python.org./3/", "runs"),
        ("https://docs.python.org.evil.example/", "asks"),
        ("https://evil.example/?q=docs.python.org", "asks"),
        ("http://evil.example/docs.python.org", "asks"),
        ("https://pypi.org/project/x/", "runs"),  # *.pypi.org does not name pypi.org itself
        ("https://files.pypi.org/x", "runs"),
        ("https://notpypi.org/x", "asks"),
        ("https://paste.example/upload", "refused"),
    ],
)
def test_fetch_rules_name_the_host_the_request_reaches(
    url: str, expected: str, tmp_path: Path
) -> None:
    gate = policy(
        tmp_path,
        ApprovalMode.EDITS,
        allow=[
            "WebFetch(domain:docs.python.org)",
            "WebFetch(domain:pypi.org)",
            "WebFetch(domain:*.pypi.org)",
        ],
        deny=["WebFetch(domain:paste.example)"],
    )
    assert runs(gate, "web_fetch", {"url": url}) == expected


def test_a_fetch_deny_holds_in_all_mode_and_a_bare_name_covers_every_site(tmp_path: Path) -> None:
    gate = policy(tmp_path, ApprovalMode.ALL, deny=["WebFetch(domain:paste.example)"])
    assert runs(gate, "web_fetch", {"url": "https://paste.example/x"}) == "refused"
    assert runs(gate, "web_fetch", {"url": "https://docs.python.org/"}) == "runs"
    bare = policy(tmp_path, ApprovalMode.ALL, deny=["WebFetch"])
    assert runs(bare, "web_fetch", {"url": "https://docs.python.org/"}) == "refused"


def test_bare_read_edit_and_write_cover_every_tool_of_their_kind(tmp_path: Path) -> None:
    reads = policy(tmp_path, ApprovalMode.ALL, deny=["Read"])
    for name, args in [
        ("read_file", {"file_path": "a.py"}),
        ("grep", {"pattern": "x"}),
        ("glob", {"pattern": "*.py"}),
        ("ls", {"path": "."}),
    ]:
        assert runs(reads, name, args) == "refused", name
    assert runs(reads, "write_file", {"file_path": "a.py", "content": ""}) == "runs"
    for rule in ("Edit", "Write"):
        edits = policy(tmp_path, ApprovalMode.MANUAL, allow=[rule])
        assert runs(edits, "write_file", {"file_path": "a.py", "content": ""}) == "runs", rule
        change = {"file_path": "a.py", "old_string": "a", "new_string": "b"}
        assert runs(edits, "edit_file", change) == "runs", rule
        assert runs(edits, "execute", {"command": "true"}) == "asks", rule
