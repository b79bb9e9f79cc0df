"""The JSON context of a served run, and the live ``RunContext`` the server builds from it.

LangGraph's server hands a run's ``context`` (a JSON object) to the graph's ``context_schema``;
dcode's middleware and tools read a ``RunContext`` (an approver, a policy, a backend, an event
emitter), which JSON cannot carry. ``ServedContext`` is the schema a client fills in, and
``live`` is the ``RunContext`` built from it on first use, once per run
(``dcode.agent.run_context.require_run_context`` reads it there).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from dcode.agent.run_context import RunContext


@dataclass
class ServedContext:
    """What a client may set for one run; every key is optional (the server's defaults)."""

    mode: str = ""
    """The approval mode: manual, edits, all or plan (default: the server's, manual unless
    its config says otherwise)."""
    model: str = ""
    """provider:model for this run (default: the model ``dcode serve`` was started with)."""
    base_url: str = ""
    api: str = ""
    """chat or responses."""
    effort: str = ""
    """none, minimal, low, medium, high or xhigh."""
    workspace: str = ""
    """The workspace the client expects; a run for another one than the server's is refused."""
    budget_usd: str = ""
    """The session's cap in USD (default: the server's ``budget_usd``)."""
    budget_tokens: str = ""
    """The session's cap in tokens (default: the server's ``budget_tokens``)."""
    attachments: list[str] = field(default_factory=list)
    """The ids of the images the run's prompt carries to the server's attachment store
    (``dcode.server.carried``)."""

    def __post_init__(self) -> None:
        # Not a field: the schema clients see holds only what JSON can carry.
        self._live: RunContext | None = None

    @property
    def live(self) -> RunContext:
        if self._live is None:
            from dcode.server.host import ServedHost

            self._live = ServedHost.current().live(asdict(self))
        return self._live
