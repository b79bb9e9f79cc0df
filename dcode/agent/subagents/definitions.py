"""What a subagent is: its name, what it is for, its instructions and what it may use."""

from __future__ import annotations

from dataclasses import dataclass, field

from dcode.agent.tools.args import GENERAL_PURPOSE
from dcode.config import ApprovalMode


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    system_prompt: str
    """Its instructions; ``""``: dcode's own."""
    tools: tuple[str, ...] | None = None
    """The tools it may use; None: all of the parent's."""
    model: str | None = None
    """The model it runs on; None: the parent's."""
    approve: ApprovalMode | None = None
    """The approval mode it asks for; it only ever makes its runs stricter."""
    path: str | None = None
    """The file it was read from; None for a built-in agent."""
    source: str = "built-in"


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
    agents: dict[str, AgentDefinition] = field(default_factory=lambda: {GENERAL_PURPOSE: GENERAL_PURPOSE_AGENT})
    problems: list[tuple[str, str]] = field(default_factory=list)
