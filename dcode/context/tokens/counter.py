"""One counter for a session's tokens: what the status bar, ``/context``, the compaction
triggers and the overflow clip all use.

A request is counted as the chat wire sends it: each message costs its text in the model
family's BPE plus OpenAI's documented overhead (``PER_MESSAGE`` for the role and the frame,
``PER_NAME`` for a name), the reply's priming is ``REPLY_PRIMING``, a tool call costs its
name and its JSON arguments, the tool schemas cost their function definitions' JSON, and an
image costs the route's per-image formula at the size the route sends. ``count_*`` give that
raw figure (what the provider reports, for an OpenAI model); ``estimate_*`` scale it by the
session's calibration (for models whose tokenizer dcode does not ship).

Counting is incremental: a message's count is kept under its id and its content, so only new
or changed messages go through the encoder; and under the message object itself
(``MessageMemo``), so the history's messages, the same objects from one call to the next, cost
a lookup each rather than building that key again (a ``repr`` of the tool calls).

The encoding (about 50 MB, a fraction of a second to build) is loaded only when a
figure needs it. A byte-level BPE never makes more tokens than the text has UTF-8 bytes, so
``surely_under`` can tell from lengths alone that a request is below a trigger; a short
session (a one-line ``dcode -p``, a few prompts in the TUI) never loads the encoding at all.
Where a count is about to be needed on the event loop, ``load`` builds the encoding in a worker
thread first, so the loop never waits for it. Until it is loaded, the calibration's
observations wait (``observe_later``) and are counted, in order, the first time the
calibration is asked for.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from dcode.context.tokens.calibration import HIGH, Calibration
from dcode.context.tokens.encodings import EncodingUnavailable, encoding, is_loaded
from dcode.context.tokens.family import Family, family_for
from dcode.models.message_memo import MessageMemo

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from langchain_core.tools import BaseTool

    # A message's content: text, or blocks (text, or dicts whose fields vary by kind).
    Content = str | list[str | dict[str, object]]
    # A tool as a request carries it: a schema dict, or langchain's tool object.
    Tool = BaseTool | dict[str, object]

PER_MESSAGE = 3  # <|start|>{role}…<|end|>: the frame of every message
PER_NAME = 1
REPLY_PRIMING = 3  # <|start|>assistant<|message|>: the frame of the answer
CHARS_PER_TOKEN = 4  # before the encoding is loaded (the UI never waits for it)
CACHE_SIZE = 50_000  # messages remembered; an old entry is only recounted if it comes back
TOOL_CACHE_SIZE = 1_000
PENDING_OBSERVATIONS = 64  # the calibration's smoothing forgets older ones anyway
ANCHORS = 256  # answers remembered with their request's bound (any history's, subagents' too)
REPORTED_MARGIN = (
    1.25  # dcode's count of a request may exceed the provider's (tool schemas, calibration)
)


class Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


class _Approximate:
    """About four characters a token: only when the rank files are missing."""

    def encode_ordinary(self, text: str) -> list[int]:
        return [0] * math.ceil(len(text) / CHARS_PER_TOKEN)


def _role(message: BaseMessage) -> str:
    return {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}.get(
        message.type, message.type
    )


def _key(message: BaseMessage) -> tuple[object, ...]:
    content = message.content if isinstance(message.content, str) else repr(message.content)
    # Only an AIMessage has tool calls; langchain's classes are imported here for the checker only.
    calls = getattr(message, "tool_calls", None)
    return (message.id, message.type, message.name, content, repr(calls) if calls else None)


class TokenCounter:
    """Counts for one model (``model``: its name as the provider knows it); ``images``
    prices an image block (tokens, or None when it is not an image dcode knows); ``thread``
    names the session whose calibration applies."""

    def __init__(
        self,
        model: str,
        *,
        images: Callable[[dict[str, object]], int | None] = lambda block: None,
        thread: Callable[[], str] = lambda: "",
        encoder: Encoder | None = None,
    ) -> None:
        self.model = model
        self.family: Family = family_for(model)
        self._images = images
        self._thread = thread
        self._encoder = encoder
        self._messages: OrderedDict[tuple[object, ...], int] = OrderedDict()
        self._objects: MessageMemo[int] = MessageMemo()  # the same objects, call after call
        self._tools: dict[object, int] = {}
        self._calibrations: dict[str, Calibration] = {}
        self._pending: dict[
            str, list[tuple[int, list[BaseMessage], BaseMessage | None, list[Tool]]]
        ] = {}
        self._bounds: MessageMemo[int] = MessageMemo()
        self._anchors: OrderedDict[str, int] = (
            OrderedDict()
        )  # answer id -> fixed_bound of its request
        self.fixed = 0  # the system message, the tool schemas and the priming of the last request
        self.fixed_bound = 0  # the same, bounded from lengths (while the encoding is not loaded)

    # -- the encoder ---------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Whether counting uses the real encoding without loading it first."""
        return self._encoder is not None or is_loaded(self.family.encoding)

    def warm(self) -> None:
        """Load the encoding now (in a worker), so that no later count waits for it."""
        self.encoder()

    async def load(self) -> None:
        """Load the encoding in a worker thread, unless it is loaded: for a caller on the event
        loop about to count (the loop keeps turning while it builds)."""
        if not self.ready:
            await asyncio.to_thread(self.warm)

    def encoder(self) -> Encoder:
        if self._encoder is None:
            try:
                self._encoder = encoding(self.family.encoding)
            except EncodingUnavailable:
                self._encoder = _Approximate()  # counting goes on, by characters
        return self._encoder

    def count_text(self, text: str) -> int:
        return len(self.encoder().encode_ordinary(text)) if text else 0

    def quick_text(self, text: str) -> int:
        """Tokens for ``text`` without waiting: the real count once the encoding is loaded,
        about four characters a token before (for the UI thread)."""
        if self.ready:
            return self.count_text(text)
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    # -- messages ------------------------------------------------------------------------

    def count_message(self, message: BaseMessage) -> int:
        """One message's tokens as the wire frames it (remembered: counted once)."""
        found = self._objects.get(message)
        if found is not None:
            return found
        key = _key(message)
        found = self._messages.get(key)
        if found is None:
            found = self._messages[key] = self._count_message(message)
            if len(self._messages) > CACHE_SIZE:
                self._messages.popitem(last=False)
        return self._objects.put(message, found)

    def _count_message(self, message: BaseMessage) -> int:
        tokens = PER_MESSAGE + self.count_text(_role(message))
        if message.name and message.type != "tool":
            tokens += PER_NAME + self.count_text(message.name)
        tokens += self.count_content(message.content)
        for call in getattr(message, "tool_calls", None) or []:
            tokens += self.count_call(call)
        return tokens

    def count_call(self, call: dict[str, object]) -> int:
        """A tool call: its name and its arguments as the JSON the wire carries."""
        return self.count_text(str(call.get("name") or "")) + self.count_text(
            json.dumps(call.get("args") or {}, ensure_ascii=False)
        )

    def count_content(self, content: Content) -> int:
        if isinstance(content, str):
            return self.count_text(content)
        tokens = 0
        for block in content or []:
            if isinstance(block, str):
                tokens += self.count_text(block)
            elif isinstance(block, dict):
                tokens += self.count_block(block)
        return tokens

    def count_block(self, block: dict[str, object]) -> int:
        kind = block.get("type")
        if kind == "text":
            return self.count_text(str(block.get("text", "")))
        image = self._images(block)
        if image is not None:
            return image
        if kind in {"reasoning", "thinking"}:
            return 0  # not sent back as input on the chat wire
        return self.count_text(_priced_fields(block))

    def count_messages(self, messages: Iterable[BaseMessage]) -> int:
        """The messages' tokens, without the reply's priming."""
        return sum(self.count_message(message) for message in messages)

    # -- tools and requests --------------------------------------------------------------

    def count_tools(self, tools: Sequence[Tool]) -> int:
        """The tool schemas: their function definitions' JSON (each tool converted once)."""
        if not tools:
            return 0
        tokens = 0
        for tool in tools:
            key = _tool_key(tool)
            found = self._tools.get(key)
            if found is None:
                if len(self._tools) > TOOL_CACHE_SIZE:
                    self._tools.clear()
                found = self._tools[key] = self.count_text(
                    json.dumps(_schema(tool), ensure_ascii=False)
                )
            tokens += found
        return tokens

    def count_request(
        self,
        messages: Sequence[BaseMessage],
        *,
        system: BaseMessage | None = None,
        tools: Sequence[Tool] = (),
    ) -> int:
        """A whole request, as the provider reports its input tokens. What is not messages
        (the system message, the tools, the priming) is kept in ``fixed``: the triggers,
        which see only the messages, add it."""
        head = self.count_message(system) if system is not None else 0
        self.fixed = head + self.count_tools(tools) + REPLY_PRIMING
        return self.fixed + self.count_messages(messages)

    # -- bounds, without the encoding ----------------------------------------------------

    def bound_message(self, message: BaseMessage) -> int:
        """At least ``count_message(message)``, from lengths alone (remembered per object)."""
        found = self._bounds.get(message)
        if found is not None:
            return found
        tokens = PER_MESSAGE + _bytes(_role(message)) + self._bound_content(message.content)
        if message.name and message.type != "tool":
            tokens += PER_NAME + _bytes(message.name)
        for call in getattr(message, "tool_calls", None) or []:
            tokens += _bytes(str(call.get("name") or "")) + _bytes(
                json.dumps(call.get("args") or {}, ensure_ascii=False)
            )
        return self._bounds.put(message, tokens)

    def _bound_content(self, content: Content) -> int:
        if isinstance(content, str):
            return _bytes(content)
        tokens = 0
        for block in content or []:
            if isinstance(block, str):
                tokens += _bytes(block)
            elif isinstance(block, dict):
                image = self._images(block) if block.get("type") != "text" else None
                text = (
                    str(block.get("text", ""))
                    if block.get("type") == "text"
                    else _priced_fields(block)
                )
                tokens += image if image is not None else _bytes(text)
        return tokens

    def bound_request(
        self, *, system: BaseMessage | None = None, tools: Sequence[Tool] = ()
    ) -> None:
        """Note the bound of what a request carries besides its messages (``fixed_bound``)."""
        head = self.bound_message(system) if system is not None else 0
        self.fixed_bound = head + sum(self._bound_tool(tool) for tool in tools) + REPLY_PRIMING

    def _bound_tool(self, tool: Tool) -> int:
        key = ("bound", _tool_key(tool))
        found = self._tools.get(key)
        if found is None:
            found = self._tools[key] = _bytes(json.dumps(_schema(tool), ensure_ascii=False))
        return found

    def anchor(self, answer: BaseMessage, fixed_bound: int) -> None:
        """``answer`` came back with the provider's own usage for a request whose system message
        and tools were bounded at ``fixed_bound`` (``bound_request``): later requests of the same
        history may be bounded from its figure."""
        if answer.id is not None:
            self._anchors[answer.id] = fixed_bound
            while len(self._anchors) > ANCHORS:
                self._anchors.popitem(last=False)

    def surely_under(self, limit: int, messages: Sequence[BaseMessage]) -> bool:
        """Whether the request ``messages`` make (with the last request's system message and
        tools), as ``estimate_request`` would count it, is below ``limit``, known without the
        encoding. False once the encoding is loaded: counting is cheap then.

        Two bounds, the lower decides. From lengths alone: certain, but about four times the
        count of English text, so a system prompt and tool schemas alone can reach a small
        window's trigger. From the provider's figure for an earlier request of this history
        (``anchor``) and the lengths of what came after it, with a margin for the difference
        between the provider's count and dcode's."""
        if self.ready:
            return False
        return min(self._length_bound(messages), self._reported_bound(messages)) < limit

    def _scaled(self, bound: int) -> int:
        """A bound in o200k tokens as ``estimate`` may scale it (up to ``HIGH`` when calibrated)."""
        return bound if self.family.exact else math.ceil(bound * HIGH)

    def _length_bound(self, messages: Sequence[BaseMessage]) -> int:
        return self._scaled(
            max(self.fixed, self.fixed_bound)
            + sum(self.bound_message(message) for message in messages)
        )

    def _reported_bound(self, messages: Sequence[BaseMessage]) -> float:
        """From the newest answer in ``messages`` whose usage was the provider's: its request and
        itself as reported, then what came after it and the tools that joined since, by length."""
        from langchain_core.messages import AIMessage  # loaded by now: these are its messages

        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            answer = message.type == "ai" and isinstance(message, AIMessage)
            fixed = self._anchors.get(message.id) if answer and message.id is not None else None
            if fixed is None or not isinstance(message, AIMessage):
                continue
            usage = message.usage_metadata
            total = int((usage.get("total_tokens") if usage else 0) or 0)  # the answer itself too
            later = max(0, self.fixed_bound - fixed) + sum(
                self.bound_message(m) for m in messages[index + 1 :]
            )
            return math.ceil(total * REPORTED_MARGIN) + self._scaled(later)
        return math.inf

    # -- calibration ---------------------------------------------------------------------

    def calibration(self, thread: str | None = None) -> Calibration:
        """The calibration of session ``thread`` (by default, the current one), with the
        observations that waited for the encoding counted now."""
        name = self._thread() if thread is None else thread
        calibration = self._calibrations.setdefault(name, Calibration())
        for reported, messages, system, tools in self._pending.pop(name, ()):
            calibration.observe(reported, self.count_request(messages, system=system, tools=tools))
        return calibration

    def observe(self, reported: int, counted: int) -> None:
        self.calibration().observe(reported, counted)

    def observe_later(
        self,
        reported: int,
        messages: Sequence[BaseMessage],
        *,
        system: BaseMessage | None = None,
        tools: Sequence[Tool] = (),
    ) -> None:
        """The provider reported ``reported`` input tokens for this request: counted when the
        calibration is next asked for (the encoding is not loaded for it now)."""
        pending = self._pending.setdefault(self._thread(), [])
        pending.append((reported, list(messages), system, list(tools)))
        del pending[:-PENDING_OBSERVATIONS]

    def estimate(self, tokens: int, thread: str | None = None) -> int:
        """``tokens`` as the provider will count them: as they are for a model counted with its
        own encoding, scaled by the session's calibration for any other."""
        return tokens if self.family.exact else self.calibration(thread).apply(tokens)

    def describe(self, thread: str | None = None) -> str:
        """How the counts are made, in words a user can check them by (``/context``): which
        encoding counts, whether the figures are scaled to the provider's own and by how much,
        and how far the last count was from the provider's figure."""
        calibration = self.calibration(thread)
        encoding = self.family.encoding
        if self.family.exact:
            how = f"dcode counts with {encoding}, this model's own encoding"
        elif calibration.samples:
            how = (
                f"dcode counts with {encoding} (this model's own tokenizer is not shipped), and the provider has counted"
                f" this session's requests at ×{calibration.factor:.2f} dcode's figures, so the estimates are scaled by that"
            )
        else:
            how = (
                f"dcode counts with {encoding} (this model's own tokenizer is not shipped); once the provider reports"
                " a request's size, the estimates are scaled to match it"
            )
        if calibration.error is not None:
            off = 100 * calibration.error
            said = (
                "matched it"
                if abs(off) < 0.05
                else f"was {abs(off):.1f}% {'above' if off > 0 else 'below'} it"
            )
            counted = "dcode's count" if self.family.exact else "dcode's count before scaling"
            how += f". The provider reported {calibration.last_reported:,} input tokens for the last request; {counted} {said}"
        return how + "."

    def estimate_messages(self, messages: Iterable[BaseMessage]) -> int:
        """The messages' tokens as the provider will count them (calibrated)."""
        return self.estimate(self.count_messages(messages))

    def estimate_request(self, messages: Iterable[BaseMessage]) -> int:
        """A request of ``messages`` with the last request's system message and tools
        (calibrated): what a compaction trigger compares with the window."""
        return self.estimate(self.fixed + self.count_messages(messages))

    def estimate_message(self, message: BaseMessage) -> int:
        return self.estimate(self.count_message(message))


def _priced_fields(block: dict[str, object]) -> str:
    """A block that is neither text nor an image, as counted: its fields but bulk data (which a
    provider prices as media, not text)."""
    fields = {
        k: v
        for k, v in block.items()
        if not (isinstance(v, str) and len(v) > 2_000 and k in {"base64", "data", "url"})
    }
    return json.dumps(fields, ensure_ascii=False, default=str)


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _tool_key(tool: Tool) -> object:
    """A tool's identity for the cache: a dict's JSON, a tool object's class, name and
    description (a tool set is rebuilt for each ``/context``: its objects are new, not its tools)."""
    if isinstance(tool, dict):
        return json.dumps(tool, sort_keys=True, default=str)
    return (
        type(tool).__qualname__,
        tool.name,
        tool.description,
    )


def _schema(tool: Tool) -> dict[str, object]:
    if isinstance(tool, dict):
        return tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(tool)
