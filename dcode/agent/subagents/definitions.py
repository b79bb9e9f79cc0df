"""Agent definitions: the built-in ``general-purpose`` agent and the user's and project's own.

An agent is a Markdown file with YAML frontmatter (``name``, ``description``, optionally
``tools``, ``model``, ``approve``) whose body is its system prompt: Claude Code's format, so
that ``~/.claude/agents`` and a project's ``.claude/agents`` work as they are. Claude's tool
names (``Read``, ``Bash``…) mean dcode's (``read_file``, ``execute``…), its ``model: inherit``
means the parent's model, and its ``permissionMode`` is read as an approval mode when
``approve`` is absent.

Sources are read lowest priority first (``agent_sources``), ``*.md`` directly in each, and an
agent of the same name in a later source replaces the earlier one in its place. A broken file
is skipped and listed with the reason (``AgentCatalog.problems``), as skills are.

What an agent may change, whoever wrote it, only narrows what its runs may do: ``tools`` is an
allow-list of the parent's tools, and ``approve`` counts only when it is stricter than the
parent's mode (``effective_mode``). The one setting that could widen is ``model``: in a project
the user has not trusted (``dcode.settings.trust``), a project agent's model is left out, with the
reason, unless ``project_gate.model_refusal`` finds it keeps requests and keys where the user's
own settings send them. A project source or file that resolves outside the project is skipped,
so that a repository cannot make dcode read the user's files as agents (``dcode.settings.project_files``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from dcode.agent.frontmatter import FrontmatterError, cut, read_document
from dcode.agent.tools.args import GENERAL_PURPOSE
from dcode.agent.tools.claude_names import CLAUDE_TOOLS
from dcode.settings.config import ApprovalMode, Settings
from dcode.settings.project_files import OUTSIDE_PROJECT, inside, real_path

BUILT_IN = "built-in"
MAX_AGENT_BYTES = 256 * 1024  # the body is a system prompt, sent with each of the agent's requests
MAX_DESCRIPTION = 1024
MAX_FILES_PER_SOURCE = 100
NAME_RULE = (
    "1-64 lowercase letters, digits, hyphens and underscores, starting with a letter or digit"
)

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_TOOL_SPLIT = re.compile(r"[\s,]+")
_CLAUDE_MODELS = frozenset({"sonnet", "opus", "haiku"})
_INHERIT = "inherit"
_CLAUDE_PERMISSIONS: dict[str, ApprovalMode | None] = {
    "default": None,  # whatever the parent runs with
    "acceptEdits": ApprovalMode.EDITS,
    "bypassPermissions": ApprovalMode.ALL,
    "dontAsk": ApprovalMode.MANUAL,  # Claude denies what is not allowed; dcode asks
    "plan": ApprovalMode.PLAN,  # read-only: writes, the shell and unknown tools are refused
}


@dataclass(frozen=True)
class AgentDefinition:
    """One agent a ``task`` call may name."""

    name: str
    description: str
    system_prompt: str
    """Its instructions; ``""``: dcode's own."""
    tools: tuple[str, ...] | None = None
    """The tools it may use; None: all of the parent's."""
    model: str | None = None
    """The model it runs on; None: the parent's."""
    approve: ApprovalMode | None = None
    """The approval mode it asks for; it only ever makes its runs stricter (``effective_mode``)."""
    path: str | None = None
    """The file it was read from; None for a built-in agent."""
    source: str = BUILT_IN
    """The directory it was read from, or ``"built-in"``."""


GENERAL_PURPOSE_AGENT = AgentDefinition(
    name=GENERAL_PURPOSE,
    description=(
        "A general agent for self-contained, multi-step jobs: researching a question across the "
        "code, making a change and checking it, running and reading long commands. It has all of "
        "your tools."
    ),
    system_prompt="",
)


@dataclass
class AgentCatalog:
    """The agents in priority order, ``general-purpose`` first, then each in the place its
    name was first seen; and (path, reason) for each file left out, or setting ignored."""

    agents: dict[str, AgentDefinition] = field(
        default_factory=lambda: {GENERAL_PURPOSE: GENERAL_PURPOSE_AGENT}
    )
    problems: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class AgentTrust:
    """What the loader must know to judge a project's agents: which sources are the project's
    (resolved), whether the user trusts the project as it is now, and the user's settings."""

    project_sources: frozenset[Path]
    workspace: Path
    trusted: bool
    mine: Settings

    @classmethod
    def of(cls, settings: Settings, user: Path | None = None) -> AgentTrust:
        from dcode.settings.trust import TrustState, project_trust

        workspace = real_path(settings.workspace)
        own = {real_path(path) for path in _user_sources(settings.home, user)}
        project = frozenset(real_path(path) for path in _project_sources(workspace)) - own
        trusted = project_trust(settings.home, workspace) is TrustState.TRUSTED
        return cls(project_sources=project, workspace=workspace, trusted=trusted, mine=settings)


def _user_sources(home: Path, user: Path | None) -> list[Path]:
    user = user or Path.home()
    return [home / "agents", user / ".claude" / "agents"]


def _project_sources(workspace: Path) -> list[Path]:
    from dcode.settings.trust import AGENT_DIRS  # the trust digest covers exactly these

    return [workspace / name for name in AGENT_DIRS]


def agent_sources(home: Path, workspace: Path, user: Path | None = None) -> list[Path]:
    """Where agents are looked for, lowest priority first: dcode's own (``$DCODE_HOME/agents``),
    the user's Claude ones, then the project's dcode and Claude ones. A directory reached twice
    (the workspace is the home directory) counts once, as the user's."""
    sources: dict[Path, Path] = {}
    for path in _user_sources(home, user) + _project_sources(workspace):
        sources.setdefault(real_path(path), path)
    return list(sources.values())


def effective_mode(parent_mode: ApprovalMode, agent: AgentDefinition) -> ApprovalMode:
    """The mode an agent's run obeys: the parent's, or the agent's own when that is stricter."""
    from dcode.agent.approval import stricter

    return stricter(parent_mode, agent.approve)


def agent_tools(agent: AgentDefinition, available: Sequence[str]) -> list[str]:
    """The tools of ``available`` (the parent's, in its order) that ``agent`` may use: all of
    them, or those its allow-list names. A name the parent lacks grants nothing."""
    if agent.tools is None:
        return list(available)
    allowed = set(agent.tools)
    return [tool for tool in available if tool in allowed]


def catalog_for(settings: Settings, user: Path | None = None) -> AgentCatalog:
    """The agents of this user and workspace, as the session would see them now."""
    return load_agents(
        agent_sources(settings.home, settings.workspace, user), trust=AgentTrust.of(settings, user)
    )


def models_awaiting_trust(settings: Settings, user: Path | None = None) -> list[AgentDefinition]:
    """The project's agents whose model is left out until the project is trusted, as trusting
    it would load them (their models set): what the trust question lists."""
    trust = AgentTrust.of(settings, user)
    if trust.trusted or not trust.project_sources:
        return []
    sources = agent_sources(settings.home, settings.workspace, user)
    now = load_agents(sources, trust=trust).agents
    trusted = load_agents(sources, trust=replace(trust, trusted=True)).agents
    return [
        agent for name, agent in trusted.items() if name in now and agent.model != now[name].model
    ]


def load_agents(sources: Sequence[Path], *, trust: AgentTrust) -> AgentCatalog:
    """Every agent in ``sources`` (lowest priority first) after the built-in one, a later one
    replacing an earlier one of the same name; and the problems met on the way."""
    agents: dict[str, AgentDefinition] = {GENERAL_PURPOSE: GENERAL_PURPOSE_AGENT}
    problems: list[tuple[str, str]] = []
    for source in sources:
        project = real_path(source) in trust.project_sources
        if project and source.exists() and not inside(source, trust.workspace):
            problems.append((str(source), OUTSIDE_PROJECT))
            continue
        found: dict[str, AgentDefinition] = {}
        for path in _agent_files(source, problems):
            if project and not inside(path, trust.workspace):
                problems.append((str(path), OUTSIDE_PROJECT))
                continue
            agent, notes = parse_agent(path, source)
            problems += [(str(path), note) for note in notes]
            if agent is None:
                continue
            if project and not trust.trusted:
                agent = _gate_model(agent, trust.mine, problems)
            if (earlier := found.get(agent.name)) is not None:
                problems.append(
                    (
                        str(earlier.path),
                        f"{Path(str(agent.path)).name} in the same directory is also named {agent.name!r}, and is used instead",
                    )
                )
            found[agent.name] = agent
        agents.update(found)
    return AgentCatalog(agents=agents, problems=problems)


def _agent_files(source: Path, problems: list[tuple[str, str]]) -> list[Path]:
    try:
        if not source.is_dir():
            return []
        files = sorted(
            entry for entry in source.iterdir() if entry.suffix == ".md" and entry.is_file()
        )
    except OSError as exc:
        problems.append((str(source), f"could not be listed ({exc.strerror or exc})"))
        return []
    if len(files) > MAX_FILES_PER_SOURCE:
        problems.append(
            (
                str(source),
                f"only the first {MAX_FILES_PER_SOURCE} of its {len(files)} .md files are read",
            )
        )
    return files[:MAX_FILES_PER_SOURCE]


def _gate_model(
    agent: AgentDefinition, mine: Settings, problems: list[tuple[str, str]]
) -> AgentDefinition:
    """An untrusted project's agent keeps its model only where project_gate allows a model."""
    from dcode.settings.project_gate import model_refusal

    if agent.model is None or (reason := model_refusal(agent.model, mine)) is None:
        return agent
    problems.append(
        (
            str(agent.path),
            f"model {agent.model!r} ignored: {reason}; it runs on the parent's model until you trust the project (dcode trust)",
        )
    )
    return replace(agent, model=None)


def parse_agent(path: Path, source: Path) -> tuple[AgentDefinition | None, list[str]]:
    """The agent in ``path``, or None; and the reasons (why it was skipped, or what of it was
    ignored). Whether its source may set a model is ``load_agents``' business."""
    try:
        document = read_document(path, MAX_AGENT_BYTES)
    except FrontmatterError as exc:
        return None, [str(exc)]
    meta = document.meta
    name = str(meta["name"]).strip()
    if not _NAME.match(name):
        return None, [f"the name {cut(name, 80)!r} is not {NAME_RULE}"]
    notes: list[str] = []
    try:
        tools = _tools(meta)
        model = _model(meta.get("model"), notes)
        approve = _approve(meta)
    except ValueError as exc:
        return None, [str(exc)]
    agent = AgentDefinition(
        name=name,
        description=cut(str(meta["description"]), MAX_DESCRIPTION),
        system_prompt=document.body.strip(),
        tools=tools,
        model=model,
        approve=approve,
        path=str(path),
        source=str(source),
    )
    return agent, notes


def _tools(meta: dict[str, object]) -> tuple[str, ...] | None:
    """The allow-list in dcode's names, or None (all the parent's tools) when there is none."""
    tools = _tool_names(meta.get("tools"), "tools")
    denied = _tool_names(meta.get("disallowedTools"), "disallowedTools")
    if not denied:
        return tools
    if tools is None:
        raise ValueError("disallowedTools needs a tools list: dcode takes an allow-list only")
    return tuple(tool for tool in tools if tool not in denied)


def _tool_names(value: object, key: str) -> tuple[str, ...] | None:
    match value:
        case None:
            return None
        case str():
            names = [part for part in _TOOL_SPLIT.split(value) if part]
        case list() if all(isinstance(item, str) for item in value):
            names = [part for item in value for part in _TOOL_SPLIT.split(item) if part]
        case _:
            raise ValueError(f"{key} must be a list of tool names or a comma-separated string")
    return tuple(dict.fromkeys(_dcode_tool(name) for name in names))


def _dcode_tool(name: str) -> str:
    """Claude's name for a tool as dcode's (``Read`` -> ``read_file``; ``Task(x)`` -> ``task``)."""
    bare = name.split("(", 1)[0]
    return CLAUDE_TOOLS.get(bare, name)


def _model(value: object, notes: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("model must be a string: provider:model, or inherit")
    spec = value.strip()
    if not spec or spec == _INHERIT:
        return None
    if spec in _CLAUDE_MODELS:
        notes.append(
            f"model {spec!r} is a Claude Code alias, not a dcode model (provider:model); it runs on the parent's model"
        )
        return None
    return spec


def _approve(meta: dict[str, object]) -> ApprovalMode | None:
    if (value := meta.get("approve")) is not None:
        try:
            return ApprovalMode(str(value).strip().lower())
        except ValueError:
            raise ValueError(
                f"approve must be manual, edits, all or plan, not {cut(str(value), 40)!r}"
            ) from None
    if (permission := meta.get("permissionMode")) is not None:
        if str(permission) not in _CLAUDE_PERMISSIONS:
            known = ", ".join(_CLAUDE_PERMISSIONS)
            raise ValueError(
                f"permissionMode {cut(str(permission), 40)!r} is not one dcode knows ({known})"
            )
        return _CLAUDE_PERMISSIONS[str(permission)]
    return None
