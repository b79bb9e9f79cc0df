"""Where a session's tokens go: the figures behind ``/context``.

Each category of the next request is counted by the session's token counter (the model
family's BPE, the chat format's overhead, images by the route's per-image formula, scaled by
the session's calibration): the base instructions, the tool schemas, the local context, the
memory, the skills index (and how many skills it leaves out), the messages by role (as they
would be sent: after a compaction, the summary and what follows it), and the images. The provider's figure for the last request,
when there is one, is ground truth for that request, and is reported beside the estimate, with
the part of it the provider read from its prompt cache; so are the session's totals and their
cost (``Spend``), cached input at its own price when the profile knows it. The remaining space
is split into what is left before compaction triggers and the reserve beyond it. Nothing here
imports the UI.
"""

# Any: LangGraph's state values (the thread's channels) are untyped; the skills index is one of them

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from dcode.agent.compaction.record import effective_messages, read_compaction
from dcode.agent.middleware.local_context import local_context_prompt
from dcode.agent.middleware.memory import memory_entry, memory_prompt
from dcode.context.tokens.counter import PER_MESSAGE, REPLY_PRIMING, TokenCounter
from dcode.media.attachment import is_reference_block
from dcode.models.profiles import ModelProfile
from dcode.models.usage import cached_input_tokens

if TYPE_CHECKING:
    from dcode.context.tokens.counter import Tool


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _skills_detail(skills: Mapping[str, Any]) -> str:
    """How many skills the index lists, and how many it leaves out (a cap, see ``skills``)."""
    listed = _count(len(skills.get("found", [])), "skill")
    left_out = int(skills.get("left_out", 0))
    return f"{listed}, {left_out:,} left out" if left_out else listed


def estimate_text(text: str, counter: TokenCounter, thread: str | None = None) -> int:
    """Tokens for ``text`` in session ``thread``, as the compaction triggers estimate them."""
    return counter.estimate(counter.count_text(text), thread) if text else 0


@dataclass(frozen=True)
class Category:
    name: str
    tokens: int
    detail: str = ""
    parts: tuple[Category, ...] = ()
    """What the category is made of (each memory file), shown under it; counted in ``tokens``."""


@dataclass(frozen=True)
class Spend:
    """A session's tokens as the provider reported them, and what they cost."""

    input_tokens: int
    cached_tokens: int  # the part of input_tokens read from the provider's prompt cache
    output_tokens: int
    cost: float | None  # USD; None when the model's prices are not known
    cached_priced: bool  # cached input has its own price; otherwise it is priced as other input
    subagents: Spend | None = None  # the part of these figures the session's subagents used

    @classmethod
    def of(
        cls,
        input_tokens: int,
        output_tokens: int,
        cached_tokens: int,
        profile: ModelProfile,
        subagents: tuple[int, int, int] = (0, 0, 0),
    ) -> Spend:
        """``subagents``: the part of the tokens (input, output, cached) subagents used."""
        cost = profile.cost(input_tokens, output_tokens, cached_tokens)
        part = cls.of(*subagents, profile) if any(subagents) else None
        return cls(
            input_tokens,
            cached_tokens,
            output_tokens,
            cost,
            profile.cached_input_price is not None,
            part,
        )


@dataclass(frozen=True)
class ContextReport:
    categories: tuple[Category, ...]  # what the next request holds, estimated
    window: int  # the model's input window
    trigger: int  # where compaction starts
    reported: int | None  # the provider's input tokens for the last request, when known
    compacted: bool  # the older messages are sent as a summary
    cached: int | None = None  # the part of ``reported`` read from the provider's prompt cache
    spend: Spend | None = None  # the session's totals so far; None for a new session
    counting: str = ""  # how the figures were counted

    @property
    def used(self) -> int:
        return sum(category.tokens for category in self.categories)

    @property
    def before_compaction(self) -> int:
        """Tokens left before compaction triggers."""
        return max(0, self.trigger - self.used)

    @property
    def reserve(self) -> int:
        """The space past the trigger, kept for the answer and the compaction itself."""
        return max(0, self.window - max(self.trigger, self.used))


def _image_blocks(message: BaseMessage) -> list[dict[str, object]]:
    content = message.content
    return (
        [block for block in content if is_reference_block(block)]
        if isinstance(content, list)
        else []
    )


def _without_images(message: BaseMessage) -> BaseMessage:
    if not isinstance(message.content, list):
        return message
    return message.model_copy(
        update={"content": [block for block in message.content if not is_reference_block(block)]}
    )


def image_tokens(
    messages: Sequence[BaseMessage], counter: TokenCounter, thread: str | None = None
) -> tuple[int, int]:
    """How many images the messages carry, and their tokens at the route's size and formula."""
    count = total = 0
    for message in messages:
        for block in _image_blocks(message):
            count += 1
            total += counter.count_block(block)
    return count, counter.estimate(total, thread)


def memory_category(
    memory: Mapping[str, str], counter: TokenCounter, thread: str, workspace: Path | None
) -> Category:
    """The memory section, and each file in it (by the path a user knows it by)."""
    parts = tuple(
        Category(_shown(path, workspace), estimate_text(memory_entry(path, text), counter, thread))
        for path, text in memory.items()
    )
    return Category(
        "memory",
        estimate_text(memory_prompt(dict(memory)), counter, thread),
        _count(len(memory), "file"),
        parts,
    )


def _shown(path: str, workspace: Path | None) -> str:
    """``AGENTS.md`` in the workspace, ``~/.claude/CLAUDE.md`` at home, else the whole path."""
    where = Path(path)
    for base, prefix in ((workspace, ""), (Path.home(), "~/")):
        if base is not None and where.is_relative_to(base) and where != base:
            return prefix + str(where.relative_to(base))
    return path


def build_report(
    *,
    values: dict[str, Any],
    instructions: str,
    tools: Sequence[Tool],
    window: int,
    counter: TokenCounter,
    thread: str = "",
    trigger: int | None = None,
    spend: Spend | None = None,
    mcp_tools: Mapping[str, Sequence[Tool]] | None = None,
    mcp_prompt: str = "",
    workspace: Path | None = None,
) -> ContextReport:
    """The report for session ``thread`` whose state is ``values``, sent with ``instructions``
    (the static system prompt) and ``tools``, counted by ``counter`` (with the session's
    calibration); ``trigger``: tier 2's in tokens (None when it counts messages: then the whole window); ``spend``: the session's totals, when it has any. The system message's frame
    and the answer's priming are counted with the system prompt. ``mcp_tools``: each MCP
    server's tools (counted one row a server, besides ``tools``); ``mcp_prompt``: the MCP
    servers' section of the system message. ``workspace``: memory files in it are named by
    their path in it."""
    compaction = read_compaction(values)
    messages = effective_messages(list(values.get("messages", [])), compaction)
    skills = values.get("skills") or {}
    by_role: dict[str, list[BaseMessage]] = {"user": [], "assistant": [], "tool results": []}
    for message in messages:
        role = (
            "assistant"
            if isinstance(message, AIMessage)
            else "tool results"
            if isinstance(message, ToolMessage)
            else "user"
        )
        by_role[role].append(_without_images(message))
    images, media = image_tokens(messages, counter, thread)
    frame = PER_MESSAGE + counter.count_text("system") + REPLY_PRIMING
    memory = values.get("memory") or {}
    categories = [
        Category(
            "system prompt", counter.estimate(counter.count_text(instructions) + frame, thread)
        ),
        Category(
            "tool schemas",
            counter.estimate(counter.count_tools(tools), thread),
            _count(len(tools), "tool"),
        ),
        *(
            Category(
                f"MCP tools: {server}",
                counter.estimate(counter.count_tools(group), thread),
                _count(len(group), "tool"),
            )
            for server, group in (mcp_tools or {}).items()
        ),
        *(
            [Category("MCP servers", estimate_text(mcp_prompt, counter, thread))]
            if mcp_prompt
            else []
        ),
        Category(
            "local context",
            estimate_text(local_context_prompt(values.get("local_context")), counter, thread),
        ),
        memory_category(memory, counter, thread, workspace),
        Category(
            "skills index",
            estimate_text(str(skills.get("prompt", "")), counter, thread),
            _skills_detail(skills),
        ),
        *(
            Category(
                f"messages: {role}",
                counter.estimate(counter.count_messages(group), thread),
                _count(len(group), "message"),
            )
            for role, group in by_role.items()
        ),
        Category("media", media, _count(images, "image")),
    ]
    usage = next(
        (
            m.usage_metadata
            for m in reversed(messages)
            if isinstance(m, AIMessage) and m.usage_metadata
        ),
        None,
    )
    reported = usage.get("input_tokens") if usage else None
    cached = cached_input_tokens(usage) if usage else None
    trigger = trigger if trigger is not None else window
    return ContextReport(
        tuple(categories),
        window,
        trigger,
        reported,
        compaction is not None,
        cached=cached,
        spend=spend,
        counting=counter.describe(thread),
    )
