"""Which tool calls need a person's yes, under the three approval modes (``ApprovalMode``).

- ``manual``: every write, every shell command and every web fetch asks.
- ``edits``: writes inside the workspace run; the shell, web fetches and writes outside the
  workspace ask.
- ``all``: nothing asks.

What a call can do comes from its tool's spec (``ToolSpec.kind``). A tool without a spec (an
MCP tool, say) is kind ``other``: nothing says what it does, so it asks in ``manual`` and
``edits`` alike.

The policy is mutable on purpose: Shift+Tab changes the mode mid-turn, and "approve the same
kind for the rest of the session" adds to ``session_allowed``. A subagent's runs use the
session's policy through ``ScopedPolicy``: the session's mode, or the agent's own when that is
stricter, and the same "rest of the session" approvals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from dcode.agent.backends.protocol import Backend
from dcode.agent.events import ApprovalKind, ApprovalRequested
from dcode.agent.tools.spec import ToolKind, spec_for
from dcode.agent.tools.web_address import BadAddress, parse_address, refused_outright
from dcode.config import ApprovalMode


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    approved: bool
    feedback: str = ""
    remember: bool = False


class Approver(Protocol):
    """Whoever answers approval requests: the TUI asks a person, headless answers at once."""

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision: ...


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: ApprovalKind
    reason: str


STRICTNESS = (ApprovalMode.MANUAL, ApprovalMode.EDITS, ApprovalMode.ALL)
"""The modes, strictest first."""


def stricter(mode: ApprovalMode, other: ApprovalMode | None) -> ApprovalMode:
    """The stricter of two modes (``other`` None: ``mode``)."""
    if other is None:
        return mode
    return min(mode, other, key=STRICTNESS.index)


class Policy(Protocol):
    """What a run asks its approval policy: whether a call may run, and what the user has
    approved for the rest of the session."""

    session_allowed: set[ApprovalKind]
    mcp_allow: Callable[[str], bool]
    fetch_allow: tuple[str, ...]
    fetch_private: tuple[str, ...]

    @property
    def mode(self) -> ApprovalMode: ...

    def check(self, name: str, args: dict[str, Any]) -> Verdict | None: ...


@dataclass
class ApprovalPolicy:
    """``backend`` decides what "inside the workspace" means: the policy asks the resolver that
    the file operation itself will use, so the path approved is the path opened."""

    mode: ApprovalMode
    backend: Backend
    session_allowed: set[ApprovalKind] = field(default_factory=set)
    mcp_allow: Callable[[str], bool] = field(default=lambda name: False)
    """Whether an MCP tool (by the name the model calls) runs without asking: ``[mcp] allow`` in
    the user's config, which only the MCP tools of the turn can answer for (a name alone cannot
    tell which server it is of: ``McpTurn.allowed``)."""
    fetch_allow: tuple[str, ...] = ()
    """``[fetch] allow`` in the user's config: hosts ``web_fetch`` reads without asking."""
    fetch_private: tuple[str, ...] = ()
    """``[fetch] allow_private`` in the user's config: hosts ``web_fetch`` may reach although
    they are private addresses (not a question of approval: nothing else lets it)."""

    def check(self, name: str, args: dict[str, Any]) -> Verdict | None:
        """None when the call may run now; otherwise what kind of approval it needs and why."""
        if self.mode is ApprovalMode.ALL:
            return None
        spec = spec_for(name)
        match spec.kind:
            case ToolKind.READ:
                return None
            case ToolKind.SHELL:
                return self._gate(Verdict(ApprovalKind.SHELL, "the shell needs approval"))
            case ToolKind.NETWORK if refused_outright(args.get("url"), self.fetch_private):
                return None  # web_fetch refuses it before any request: there is nothing to ask about
            case ToolKind.NETWORK if host_allowed(self.fetch_allow, args.get("url")):
                return None  # a site the user named in [fetch] allow
            case ToolKind.NETWORK:  # the URL can carry what the model has read out of the machine
                return self._gate(Verdict(ApprovalKind.FETCH, "fetching a URL needs approval"))
            case ToolKind.WRITE:
                return self._check_write(spec.target_paths(args))
            case _ if self.mcp_allow(name):  # the user named this MCP tool in [mcp] allow
                return None
            case _:  # ToolKind.OTHER: nothing says what the call does, so a person decides
                return self._gate(Verdict(ApprovalKind.TOOL, f"{name} is not one of dcode's tools: it needs approval"))

    def _check_write(self, targets: list[str]) -> Verdict | None:
        outside = [p for p in targets if not self._inside(p)]
        if outside:
            return self._gate(Verdict(ApprovalKind.EDIT, f"writing outside the workspace ({outside[0]}) needs approval"))
        if self.mode is ApprovalMode.MANUAL:
            return self._gate(Verdict(ApprovalKind.EDIT, "file edits need approval"))
        return None

    def _gate(self, verdict: Verdict) -> Verdict | None:
        return None if verdict.kind in self.session_allowed else verdict

    def _inside(self, raw: str) -> bool:
        return self.backend.is_inside_workspace(raw)


def host_allowed(patterns: tuple[str, ...], url: object) -> bool:
    """Whether ``url`` (http or https, no credentials) is on a host ``patterns`` name:
    ``docs.python.org`` exactly, ``*.readthedocs.io`` any host under it. The host is the one
    the request would go to (``web_address``), whatever the URL's spelling."""
    if not patterns or not isinstance(url, str):
        return False
    try:
        host = parse_address(url).host
    except BadAddress:
        return False
    return any(host == p or (p.startswith("*.") and host.endswith(p[1:])) for p in patterns)


class ScopedPolicy:
    """A subagent's view of the session's policy: the session's mode as it is now (Shift+Tab
    reaches running subagents too), or ``floor`` when that is stricter; approvals "for the rest
    of the session" are shared both ways."""

    def __init__(self, session: Policy, floor: ApprovalMode | None, backend: Backend) -> None:
        self._session, self._floor, self._backend = session, floor, backend

    @property
    def session_allowed(self) -> set[ApprovalKind]:
        return self._session.session_allowed

    @property
    def mcp_allow(self) -> Callable[[str], bool]:
        return self._session.mcp_allow

    @property
    def fetch_allow(self) -> tuple[str, ...]:
        return self._session.fetch_allow

    @property
    def fetch_private(self) -> tuple[str, ...]:
        return self._session.fetch_private

    @property
    def mode(self) -> ApprovalMode:
        return stricter(self._session.mode, self._floor)

    def check(self, name: str, args: dict[str, Any]) -> Verdict | None:
        policy = ApprovalPolicy(self.mode, self._backend, self.session_allowed, self.mcp_allow, self.fetch_allow, self.fetch_private)
        return policy.check(name, args)


class HeadlessApprover:
    """Nobody can answer in ``-p`` mode, so every request is denied at once with a way forward."""

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        return ApprovalDecision(False, f"{request.reason}; rerun with --approve all")
