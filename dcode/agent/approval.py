"""Which tool calls need a person's yes, under the four approval modes (``ApprovalMode``).

- ``manual``: every write, every shell command and every web fetch asks.
- ``edits``: writes inside the workspace run; the shell, web fetches and writes outside the
  workspace ask.
- ``all``: nothing asks.
- ``plan``: only reading runs; writes, the shell and tools dcode does not know are refused
  (``plan_refusal``), web fetches ask as in ``manual``, and the plan itself (``exit_plan_mode``)
  always asks (``dcode.agent.plan_mode``).

With the shell sandboxed (``shell_sandboxed``), ``edits`` runs shell commands without asking, as
it runs edits inside the workspace; ``manual`` still asks. A command that asks to run outside
the sandbox (``ToolSpec.unconfined``) asks in every mode, ``all`` included, every time.

What a call can do comes from its tool's spec (``ToolSpec.kind``). A tool without a spec (an
MCP tool, say) is kind ``other``: nothing says what it does, so it asks in ``manual`` and
``edits`` alike.

The policy is mutable on purpose: Shift+Tab changes the mode mid-turn, and "yes for the rest of
the session" adds to it: an edit, a shell command or a web fetch approves its whole kind
(``session_allowed``); a tool dcode does not know approves that tool alone, or, when the user
says so, every tool of its MCP server (``session_tools``), since nothing says what the server's
other tools do. A subagent's runs use the
session's policy through ``ScopedPolicy``: the session's mode, or the agent's own when that is
stricter, and the same "rest of the session" approvals.

Permission rules (``dcode.agent.permissions``) come before the mode: a ``deny`` rule refuses
the call in every mode, a write to dcode's or Claude's settings asks (``protected``), an ``ask``
rule asks, an ``allow`` rule runs it; only a call no rule decides gets the mode's default
(``ApprovalPolicy.mode_default``, the one place a mode's behaviour lives).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from dcode.agent.backends.protocol import Backend
from dcode.agent.decisions import ApprovalDecision
from dcode.agent.events import ApprovalKind, ApprovalRequested
from dcode.agent.permissions.match import CallFacts, PermissionRules, RuleMatch
from dcode.agent.permissions.protected import is_protected_path
from dcode.agent.permissions.rules import Effect
from dcode.agent.tools.spec import REMOTE_TASK_TOOLS, ToolKind, spec_for
from dcode.settings.config import STRICTNESS, ApprovalMode
from dcode.settings.web_address import BadAddress, parse_address, refused_outright


class Approver(Protocol):
    """Whoever answers approval requests: the TUI asks a person, headless answers at once."""

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision: ...


@dataclass(frozen=True, slots=True)
class ToolOrigin:
    """A tool as its MCP server names it (``server`` "" for a tool of no server). "Yes for the
    session" remembers this, not the name the model calls: that name can pass to another
    server's tool when servers come and go (two whose names clean to the same)."""

    server: str
    tool: str

    def rule(self, *, whole_server: bool = False) -> str:
        """As ``[mcp] allow`` spells it: ``calc__add``, or ``calc__*`` for the whole server."""
        if not self.server:
            return self.tool
        return f"{self.server}__{'*' if whole_server else self.tool}"


@dataclass
class ToolGrants:
    """The tools dcode does not know that the user said yes to for the rest of the session."""

    tools: set[ToolOrigin] = field(default_factory=set)
    servers: set[str] = field(default_factory=set)

    def covers(self, origin: ToolOrigin) -> bool:
        return origin in self.tools or (bool(origin.server) and origin.server in self.servers)

    def add(self, origin: ToolOrigin, *, whole_server: bool = False) -> None:
        if whole_server and origin.server:
            self.servers.add(origin.server)
        else:
            self.tools.add(origin)

    def clear(self) -> None:
        self.tools.clear()
        self.servers.clear()

    def rules(self) -> list[str]:
        """Each one as ``[mcp] allow`` spells it, servers first, in order."""
        servers = [
            ToolOrigin(server, "").rule(whole_server=True) for server in sorted(self.servers)
        ]
        return servers + sorted(origin.rule() for origin in self.tools)

    def __bool__(self) -> bool:
        return bool(self.tools or self.servers)


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: ApprovalKind
    reason: str
    origin: ToolOrigin | None = None
    """For a tool dcode does not know: which one it is (what "yes for the session" covers)."""
    refused: bool = False
    """Refused outright, with ``reason`` for the model: nobody is asked (a ``deny`` rule, or
    what plan mode does not run)."""
    every_time: bool = False
    """A yes covers this call alone, never "for the rest of the session": an ``ask`` rule, a
    protected file, a command to run outside the sandbox."""


@dataclass(frozen=True, slots=True)
class Denial:
    """A call that did not run, for ``/permissions`` and headless results."""

    tool: str
    call_id: str
    args: dict[str, object]
    reason: str


_KINDS = {
    ToolKind.SHELL: ApprovalKind.SHELL,
    ToolKind.NETWORK: ApprovalKind.FETCH,
    ToolKind.WRITE: ApprovalKind.EDIT,
}


UNCONFINED = (
    "run OUTSIDE the sandbox: this command would not be confined (it could write anywhere, use the "
    "network and see every process); this is asked every time"
)


def stricter(mode: ApprovalMode, other: ApprovalMode | None) -> ApprovalMode:
    """The stricter of two modes (``other`` None: ``mode``)."""
    if other is None:
        return mode
    return min(mode, other, key=STRICTNESS.index)


class Policy(Protocol):
    """What a run asks its approval policy: whether a call may run, and what the user has
    approved for the rest of the session."""

    @property
    def session_allowed(self) -> set[ApprovalKind]: ...

    @property
    def session_tools(self) -> ToolGrants: ...

    @property
    def mcp_allow(self) -> Callable[[str], bool]: ...

    @property
    def mcp_origin(self) -> Callable[[str], ToolOrigin | None]: ...

    @property
    def fetch_allow(self) -> tuple[str, ...]: ...

    @property
    def fetch_private(self) -> tuple[str, ...]: ...

    @property
    def shell_sandboxed(self) -> Callable[[], bool]: ...

    @property
    def rules(self) -> PermissionRules | None: ...

    @property
    def denials(self) -> list[Denial]: ...

    @property
    def mode(self) -> ApprovalMode: ...

    def check(self, name: str, args: dict[str, object]) -> Verdict | None: ...

    def enter(self, mode: ApprovalMode) -> None:
        """Switch the session to ``mode`` (a plan approved)."""


@dataclass
class ApprovalPolicy:
    """``backend`` decides what "inside the workspace" means: the policy asks the resolver that
    the file operation itself will use, so the path approved is the path opened."""

    mode: ApprovalMode
    backend: Backend
    session_allowed: set[ApprovalKind] = field(default_factory=set)
    """The kinds (edits, shell, web fetches) the user said yes to for the rest of the session."""
    mcp_allow: Callable[[str], bool] = field(default=lambda name: False)
    """Whether an MCP tool (by the name the model calls) runs without asking: ``[mcp] allow`` in
    the user's config, which only the MCP tools of the turn can answer for (a name alone cannot
    tell which server it is of: ``McpTurn.allowed``)."""
    fetch_allow: tuple[str, ...] = ()
    """``[fetch] allow`` in the user's config: hosts ``web_fetch`` reads without asking."""
    fetch_private: tuple[str, ...] = ()
    """``[fetch] allow_private`` in the user's config: hosts ``web_fetch`` may reach although
    they are private addresses (not a question of approval: nothing else lets it)."""
    session_tools: ToolGrants = field(default_factory=ToolGrants)
    """The tools dcode does not know (or their MCP servers) the user said yes to for the session."""
    mcp_origin: Callable[[str], ToolOrigin | None] = field(default=lambda name: None)
    """Which server's tool the name the model calls is, in the tools of the turn (None: not an
    MCP tool)."""
    shell_sandboxed: Callable[[], bool] = field(default=lambda: False)
    """Whether the shell's commands run in the sandbox now (``/sandbox`` changes it mid-session)."""
    rules: PermissionRules | None = None
    """The permission rules in force (``allow``/``ask``/``deny``); None: none."""
    denials: list[Denial] = field(default_factory=list)
    """The calls that did not run this session, newest last."""

    def check(self, name: str, args: dict[str, object]) -> Verdict | None:
        """None when the call may run now; otherwise what kind of approval it needs and why
        (``refused``: none can be given). In order: a ``deny`` rule; what plan mode does not
        run; the calls that always ask (a protected file, a command outside the sandbox); an
        ``ask`` rule; an ``allow`` rule; and last the mode's default."""
        origin = self.mcp_origin(name)
        found = self._rule(name, args, origin)
        spec = spec_for(name)
        kind = _KINDS.get(spec.kind, ApprovalKind.TOOL)
        if found is not None and found.effect is Effect.DENY:
            return Verdict(
                kind,
                f"denied by the rule {found.rule.text} ({found.rule.source.label}): {found.reason}",
                refused=True,
            )
        if (
            self.mode is ApprovalMode.PLAN
            and (refused := plan_refusal(name, spec.kind)) is not None
        ):
            return refused
        if protected := self._protected(name, args):
            return Verdict(
                ApprovalKind.SHELL if spec.kind is ToolKind.SHELL else ApprovalKind.EDIT,
                f"{protected} decides what dcode may do: writing it always needs approval",
                every_time=True,
            )
        if self.shell_sandboxed() and spec.unconfined(args):
            return Verdict(ApprovalKind.SHELL, UNCONFINED, every_time=True)
        if found is not None and found.effect is Effect.ASK:
            return Verdict(
                kind,
                f"the rule {found.rule.text} ({found.rule.source.label}) asks first: {found.reason}",
                origin,
                every_time=True,
            )
        if found is not None:
            return None  # an allow rule
        return self.mode_default(name, args)

    def _rule(
        self, name: str, args: dict[str, object], origin: ToolOrigin | None
    ) -> RuleMatch | None:
        if self.rules is None:
            return None
        facts = CallFacts(
            origin.server if origin else None, origin.tool if origin else None, self._writable
        )
        return self.rules.decide(name, args, facts)

    def _writable(self, raw: str) -> bool:
        """Whether a shell redirection to ``raw`` stays in bounds an allow rule can vouch for:
        inside the workspace, and not a settings file (those are the sandbox's to guard)."""
        try:
            return self._inside(raw) and not is_protected_path(self.backend.resolve(raw))
        except (OSError, ValueError):
            return False

    def _protected(self, name: str, args: dict[str, object]) -> str | None:
        """The first file the call would write that holds settings, hooks, agents or commands
        (for a shell line, one its words plainly write: ``> .claude/settings.json``)."""
        for raw in _written_paths(name, args):
            try:
                if is_protected_path(self.backend.resolve(raw)):
                    return raw
            except (OSError, ValueError):
                continue
        return None

    def mode_default(self, name: str, args: dict[str, object]) -> Verdict | None:
        """What the mode alone says of a call no rule decides."""
        spec = spec_for(name)
        if self.mode is ApprovalMode.ALL:
            return None
        match spec.kind:
            case ToolKind.READ:
                return None
            case ToolKind.PLAN:  # outside plan mode it has nothing to ask (the tool says so)
                return (
                    Verdict(ApprovalKind.PLAN, "the plan needs your answer")
                    if self.mode is ApprovalMode.PLAN
                    else None
                )
            case ToolKind.SHELL if self.mode is ApprovalMode.EDITS and self.shell_sandboxed():
                return None
            case ToolKind.SHELL:
                return self._gate(Verdict(ApprovalKind.SHELL, "the shell needs approval"))
            case ToolKind.NETWORK if name in REMOTE_TASK_TOOLS:  # text the model wrote leaves
                return self._gate(
                    Verdict(ApprovalKind.FETCH, "sending work to a remote agent needs approval")
                )
            case ToolKind.NETWORK if refused_outright(args.get("url"), self.fetch_private):
                return (
                    None  # web_fetch refuses it before any request: there is nothing to ask about
                )
            case ToolKind.NETWORK if host_allowed(self.fetch_allow, args.get("url")):
                return None  # a site the user named in [fetch] allow
            case ToolKind.NETWORK:  # the URL can carry what the model has read out of the machine
                return self._gate(Verdict(ApprovalKind.FETCH, "fetching a URL needs approval"))
            case ToolKind.WRITE:
                return self._check_write(spec.target_paths(args))
            case _ if self.mcp_allow(name):  # the user named this MCP tool in [mcp] allow
                return None
            case _:  # ToolKind.OTHER: nothing says what the call does, so a person decides
                return self._check_other(name)

    def enter(self, mode: ApprovalMode) -> None:
        self.mode = mode

    def _check_other(self, name: str) -> Verdict | None:
        origin = self.mcp_origin(name) or ToolOrigin("", name)
        if self.session_tools.covers(origin):
            return None
        return Verdict(
            ApprovalKind.TOOL, f"{name} is not one of dcode's tools: it needs approval", origin
        )

    def _check_write(self, targets: list[str]) -> Verdict | None:
        outside = [p for p in targets if not self._inside(p)]
        if outside:
            return self._gate(
                Verdict(
                    ApprovalKind.EDIT,
                    f"writing outside the workspace ({outside[0]}) needs approval",
                )
            )
        if self.mode is ApprovalMode.MANUAL:
            return self._gate(Verdict(ApprovalKind.EDIT, "file edits need approval"))
        return None

    def _gate(self, verdict: Verdict) -> Verdict | None:  # a yes for the session covers it
        return None if verdict.kind in self.session_allowed else verdict

    def _inside(self, raw: str) -> bool:
        return self.backend.is_inside_workspace(raw)


def _written_paths(name: str, args: dict[str, object]) -> list[str]:
    spec = spec_for(name)
    command = args.get("command")
    if spec.kind is not ToolKind.SHELL or not isinstance(command, str):
        return spec.target_paths(args)
    from dcode.agent.permissions.shell_words import plan_command

    return list(plan_command(command, lambda path: True).writes)


PLAN_REFUSES: dict[ToolKind, ApprovalKind] = {
    ToolKind.WRITE: ApprovalKind.EDIT,
    ToolKind.SHELL: ApprovalKind.SHELL,
    ToolKind.OTHER: ApprovalKind.TOOL,
}
"""What plan mode refuses outright: whatever can change something outside the conversation.
A tool dcode does not know (an MCP tool) is refused too, even one ``[mcp] allow`` names: that
says it may run without asking, not that it only reads."""


def plan_refusal(name: str, kind: ToolKind) -> Verdict | None:
    """The refusal of a call of ``name`` in plan mode, or None when plan mode lets it through."""
    if kind not in PLAN_REFUSES:
        return None
    from dcode.agent.plan_mode import refusal

    return Verdict(PLAN_REFUSES[kind], refusal(name), refused=True)


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
    def session_tools(self) -> ToolGrants:
        return self._session.session_tools

    @property
    def mcp_allow(self) -> Callable[[str], bool]:
        return self._session.mcp_allow

    @property
    def mcp_origin(self) -> Callable[[str], ToolOrigin | None]:
        return self._session.mcp_origin

    @property
    def fetch_allow(self) -> tuple[str, ...]:
        return self._session.fetch_allow

    @property
    def fetch_private(self) -> tuple[str, ...]:
        return self._session.fetch_private

    @property
    def shell_sandboxed(self) -> Callable[[], bool]:
        return self._session.shell_sandboxed

    @property
    def rules(self) -> PermissionRules | None:
        return self._session.rules

    @property
    def denials(self) -> list[Denial]:
        return self._session.denials

    @property
    def mode(self) -> ApprovalMode:
        return stricter(self._session.mode, self._floor)

    def check(self, name: str, args: dict[str, object]) -> Verdict | None:
        policy = ApprovalPolicy(
            self.mode,
            self._backend,
            self.session_allowed,
            self.mcp_allow,
            self.fetch_allow,
            self.fetch_private,
            session_tools=self.session_tools,
            mcp_origin=self.mcp_origin,
            shell_sandboxed=self.shell_sandboxed,
            rules=self.rules,
            denials=self.denials,
        )
        return policy.check(name, args)

    def enter(self, mode: ApprovalMode) -> None:
        self._session.enter(mode)


def remember(policy: Policy, verdict: Verdict, *, whole_server: bool = False) -> None:
    """Yes for the rest of the session to what ``verdict`` asked about: its kind, or the tool
    dcode does not know (with ``whole_server``, every tool of its MCP server)."""
    if verdict.every_time:
        return
    if verdict.origin is None:
        policy.session_allowed.add(verdict.kind)
    else:
        policy.session_tools.add(verdict.origin, whole_server=whole_server)


class HeadlessApprover:
    """Nobody can answer in ``-p`` mode, so every request is denied at once with a way forward."""

    async def decide(self, request: ApprovalRequested) -> ApprovalDecision:
        if request.kind is ApprovalKind.PLAN:  # printed by the runner's caller; the turn ends
            from dcode.agent.plan_mode import presented

            return presented()
        if request.every_time and request.reason == UNCONFINED:  # no mode allows it
            return ApprovalDecision(
                False,
                f"{request.reason}; nobody can approve it here: rerun with --sandbox off to run commands unconfined",
            )
        if request.every_time:  # no mode lets it run: say so rather than point at one
            return ApprovalDecision(
                False, f"{request.reason}; a run without a person cannot approve it"
            )
        return ApprovalDecision(False, f"{request.reason}; rerun with --approve all")
