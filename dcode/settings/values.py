"""The settings' values: the ``Settings`` a session runs with, and the types of its fields.

Apart from the loader (``config``), so that what reads settings (the project gate, the
provider presets) does not depend on how they are loaded. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from dcode.sandbox.modes import SandboxSettings
from dcode.settings.compaction_triggers import KEEP, SUMMARIZE_AT, TRUNCATE_AT, Threshold, Triggers
from dcode.settings.hook_sources import HookCommand
from dcode.settings.permission_sources import RuleText
from dcode.settings.trust import TrustState


class ApprovalMode(StrEnum):
    """In the order Shift+Tab cycles through them: after ``all`` comes ``plan``, the strictest,
    so that one press too many never loosens anything."""

    MANUAL = "manual"
    EDITS = "edits"
    ALL = "all"
    PLAN = "plan"
    """Only read tools run; the model ends with a plan the user approves, refines or rejects."""

    def next(self) -> ApprovalMode:
        order = list(ApprovalMode)
        return order[(order.index(self) + 1) % len(order)]


STRICTNESS = (ApprovalMode.PLAN, ApprovalMode.MANUAL, ApprovalMode.EDITS, ApprovalMode.ALL)
"""The modes, strictest first."""


class WireApi(StrEnum):
    CHAT = "chat"
    RESPONSES = "responses"


class ReasoningEffort(StrEnum):
    """How hard a reasoning model thinks before it answers (``reasoning_effort``); which
    levels a model takes is the provider's business, and it says so when it refuses one."""

    NONE = "none"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"


class ConfigError(Exception):
    """A config file or value is wrong; the message names the file and, when known, the line."""


DEFAULT_MODEL = "openai:gpt-5.1"
PROJECT_DIR = ".dcode"


@dataclass(frozen=True, slots=True)
class ProviderOverride:
    base_url: str | None = None
    api_key_env: str | None = None
    api: WireApi | None = None


@dataclass(frozen=True, slots=True)
class IgnoredSetting:
    """A project setting left out because the project is not trusted: ``key`` is dotted
    (``providers.openai.api_key_env``), ``reason`` says what it would have widened."""

    key: str
    value: object
    reason: str


@dataclass(frozen=True, slots=True)
class AsyncAgentConfig:
    """One ``[[async_agents]]`` entry of the user's own config: an Agent Protocol (LangGraph)
    server that ``start_async_task`` may hand work to. ``assistant`` is the assistant id or
    graph name there; ``headers`` are sent with every request, as written (``${VAR}`` and
    ``${VAR:-default}`` are expanded from the environment when a request is made, so a token
    need not be written in the file)."""

    name: str
    url: str
    assistant: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class McpSettings:
    """``[mcp]`` in config.toml, and the MCP flags."""

    allow: tuple[str, ...] = ()
    """``server__tool`` or ``server__*``: MCP tools that run without asking."""
    project_env: tuple[str, ...] = ()
    """Environment variables a project's ``.mcp.json`` may expand (the user's own config only;
    never a provider's key, see ``dcode.mcp.config.ProjectEnv``)."""
    connect_timeout: float = 10.0
    """Seconds a server may take to start and list its tools."""
    call_timeout: float = 120.0
    """Seconds one MCP tool call may take."""
    configs: tuple[Path, ...] = ()
    """``--mcp-config FILE``, in order."""
    enabled: bool = True
    """False with ``--no-mcp``."""
    trust_project: bool = False
    """``--trust-project-mcp``: headless starts the project's servers without an approval."""


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    workspace: Path
    add_dirs: tuple[Path, ...] = ()
    """More directories to work in as in the workspace (``--add-dir``, resolved): writes there
    run without asking in ``edits``, the sandbox lets commands write there, MCP servers are
    offered them as roots. From the command line only: a project cannot widen its own reach."""
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api: WireApi | None = None
    approve: ApprovalMode | None = None
    max_turns: int | None = None
    budget_usd: float | None = None
    """A session's spend cap in USD (``dcode.agent.budget``): from the user's own config or
    ``--max-budget-usd``, never a project's."""
    budget_tokens: int | None = None
    """A session's cap in tokens, input and output (``--max-tokens``): what bounds a model
    without prices. From the user's own config or the command line, never a project's."""
    theme: str | None = None
    bell: bool = True
    """Ring the terminal's bell when a turn ends or an approval waits while the terminal is not
    in focus (terminals turn it into a notification, a badge or a sound)."""
    effort: ReasoningEffort | None = None
    """The reasoning effort asked of the model, over its profile's ``reasoning_effort``; None:
    the profile's, or nothing sent (the provider's default)."""
    connect_timeout: float = 10.0
    """Seconds to open a connection to the model server."""
    request_timeout: float = 60.0
    """Seconds from sending a request to the first byte of the answer (each try)."""
    stall_timeout: float = 120.0
    """Seconds of silence tolerated between two streamed events of an answer."""
    retry_budget: float = 180.0
    """Seconds one request may take, tries and back-off included, before its answer starts."""
    max_retries: int = 4
    compact_at: Threshold = SUMMARIZE_AT
    """Tier 2: the conversation is summarized when the request reaches this."""
    compact_keep: Threshold = KEEP
    """The newest messages sent verbatim after a summary (and left whole by tier 1)."""
    truncate_at: Threshold = TRUNCATE_AT
    """Tier 1: old file-writing arguments are cut from the request from this on (below tier 2)."""
    task_depth: int = 1
    """How deep subagents nest: 1, the session's agent starts them and they start none; 2,
    they may start their own (the most allowed)."""
    task_concurrency: int = 4
    """Subagents that run at the same time; more ``task`` calls wait for a slot."""
    # Variables the shell may see although they look like secrets (the shell's environment
    # lacks provider keys, OPENAI_* and DCODE_* otherwise).
    pass_env: tuple[str, ...] = ()
    providers: dict[str, ProviderOverride] = field(default_factory=dict)
    mcp: McpSettings = field(default_factory=lambda: McpSettings())
    fetch_allow: tuple[str, ...] = ()
    """``[fetch] allow``: hosts (``docs.python.org``, ``*.readthedocs.io``) ``web_fetch`` reads
    without asking."""
    fetch_private: tuple[str, ...] = ()
    """``[fetch] allow_private``, from the user's own config only: hosts (``localhost:8000``)
    ``web_fetch`` may reach although they are private addresses."""
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    async_agents: tuple[AsyncAgentConfig, ...] = ()
    """``[[async_agents]]``, from the user's own config only: the remote agents the async task
    tools reach (the tools exist only when there is one)."""
    database_url: str | None = None
    """Sessions in this PostgreSQL server (``dcode.settings.database``) instead of
    ``sessions_db``: from ``DCODE_DATABASE_URL`` or the user's own config, never a project's."""
    """``[sandbox]`` and ``--sandbox``: whether the shell's commands run confined."""
    model_overrides: dict[str, dict[str, object]] = field(default_factory=dict)
    sources: tuple[Path, ...] = ()
    trust: TrustState = TrustState.NONE
    project_digest: str | None = None
    ignored: tuple[IgnoredSetting, ...] = ()
    permission_rules: tuple[RuleText, ...] = ()
    """Every permission rule in force, highest source first (``dcode.settings.permission_sources``)."""
    waiting_rules: tuple[RuleText, ...] = ()
    """The project's allow rules, left out until the user trusts the project."""
    hooks: tuple[HookCommand, ...] = ()
    """Every hook that runs, the project's first (``dcode.settings.hook_sources``)."""
    skipped_hooks: tuple[HookCommand, ...] = ()
    """The project's hooks, left out until the user trusts the project."""

    @property
    def triggers(self) -> Triggers:
        return Triggers(
            summarize_at=self.compact_at, keep=self.compact_keep, truncate_at=self.truncate_at
        )

    @property
    def sessions_db(self) -> Path:
        return self.home / "sessions.db"

    @property
    def attachments_dir(self) -> Path:
        return self.home / "attachments"

    @property
    def history_file(self) -> Path:
        return self.home / "history.jsonl"

    @property
    def user_config(self) -> Path:
        return self.home / "config.toml"

    @property
    def project_config(self) -> Path:
        return self.workspace / PROJECT_DIR / "config.toml"

    @property
    def preferences_file(self) -> Path:
        return self.home / "preferences.json"
