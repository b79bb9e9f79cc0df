"""Compaction, tier 2: the older part of a long conversation, summarized and archived.

When the conversation as it would be sent (after tier 1's cuts) reaches tier 2's trigger
(``Triggers.summarize_at``: by default 85 % of the model's input window; or a number of tokens,
or of messages), by estimate or by the provider's last reported usage, the messages older than
the keep window (``Triggers.keep``: by default the newest within 10 % of the window, never
splitting a tool call from its results, and never the user's latest message) are appended to
``$DCODE_HOME/conversation_history/{session}.md`` and summarized by the model. The result is a
``Compaction`` record (``record``): where the cut is, the summary, the archive. The
summarization middleware asks the ``Compactor`` before each model call, ``compact_conversation``
and ``/offload`` ask it on demand. The checkpointed history is never rewritten: the session
keeps every message, and a later compaction cuts further along the same list (its summary
covers the earlier one).

The summarizer's call is tagged ``nostream``: its text never reaches the transcript. If it
fails, or if its summary would not make the request smaller (then the compaction is refused and
nothing is written, the archive included), nothing is compacted and the conversation goes on as
it was, with one notice.

Media in the summarized part become tags that name their files (``media_tags``): the
summarizer is asked to keep them, the archive keeps them, and after the summary the model can
open each with read_file.
"""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.constants import TAG_NOSTREAM

from dcode.agent.budget import COMPACTION, AgentBudget, Tariff
from dcode.agent.compaction.log import log_of, logged
from dcode.agent.compaction.record import (
    SUMMARY_SOURCE,
    Compaction,
    effective_messages,
    reported_tokens,
)
from dcode.agent.compaction.thresholds import keep_from, known_under
from dcode.agent.compaction.truncation import truncated_history
from dcode.agent.events import (
    CompactionFinished,
    CompactionRefused,
    CompactionStarted,
    Event,
    Notice,
)
from dcode.agent.media_tags import is_tag_block, tag_media
from dcode.agent.session_files import archive_path
from dcode.agent.token_count import count_messages, count_request
from dcode.context.tokens.counter import TokenCounter
from dcode.settings.compaction_triggers import Triggers, Unit
from dcode.settings.private_files import open_private

if TYPE_CHECKING:  # the store loads Pillow, which importing this module should not
    from dcode.media.store import AttachmentStore

SUMMARY_PROMPT = """\
You are compacting a coding session so that it can go on in a smaller context. Below is the
older part of the conversation between a user and a coding agent. Write a summary that lets
the agent continue without it, in these sections:

SESSION INTENT: what the user wants overall, and any constraints or preferences they stated.
SUMMARY: what has been done and learned so far, decisions and their reasons, what failed.
ARTIFACTS: the files read, created or changed (with paths) and the commands that matter.
NEXT STEPS: what was in progress, and what remains to do.

Be specific and brief. Keep exact names, paths, numbers and error messages. Do not invent
anything that is not in the conversation.

Images and other media appear in the conversation as tags, such as <image url="..."/>,
<audio url="..."/>, <video url="..."/> or <file url="..." mime="..."/>. You are not shown
their content. Copy each tag that still matters into the summary exactly as written, next to
what it was for: the agent can open its url again with read_file. Do not describe what a tag
does not tell you. A tag with error="failed_to_offload" stands for media that could not be
kept: say that it is lost."""


def summary_prompt(focus: str = "") -> str:
    """The summarizer's instructions, with what the user asked it to keep in particular."""
    focus = " ".join(focus.split())
    if not focus:
        return SUMMARY_PROMPT
    return f"{SUMMARY_PROMPT}\n\nThe user asked for this summary to focus on: {focus}\nKeep what bears on that in full detail, and the rest brief."


def safe_cutoff(messages: Sequence[BaseMessage], cutoff: int) -> int:
    """``cutoff`` moved so that no tool result is kept without the call that asked for it: back
    to the AI message that made the calls, or, when there is none, past the results."""
    if cutoff >= len(messages) or not isinstance(messages[cutoff], ToolMessage):
        return cutoff
    for index in range(cutoff - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and message.tool_calls:
            return index
        if not isinstance(messages[index], ToolMessage):
            break
    while cutoff < len(messages) and isinstance(messages[cutoff], ToolMessage):
        cutoff += 1
    return cutoff


def latest_user_index(messages: Sequence[BaseMessage]) -> int:
    """The index of the last user message (a summary counts), -1 when there is none; found from
    the end, as it is near it (it runs before each model call, on the whole history)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return -1


def pinned_request(
    effective: Sequence[BaseMessage], latest: int, previous: Compaction | None
) -> str | None:
    """The user's latest message as the text a summary can carry, when the cut may pass it:
    its text, when it is all text (a message with media stays where it is); the request an
    earlier summary already carries, when that summary is the latest "user" message."""
    message = effective[latest]
    if message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE:
        return previous.get("request") if previous else None
    content = message.content
    if isinstance(content, str):
        return content
    if all(
        isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
        for block in content
    ):
        return _text(content)
    return None


def next_cutoff(previous: Compaction | None, effective_cutoff: int) -> int:
    """The cut in the whole history, from the cut in the list sent (whose first message is the
    previous summary, when there was one)."""
    return previous["cutoff"] + effective_cutoff - 1 if previous else effective_cutoff


def _same(text: str) -> str:
    return text


def _escaped(text: str) -> str:
    return html.escape(text, quote=False)


def _text(content: str | Sequence[object], escape: Callable[[str], str] = _same) -> str:
    """The text of ``content``, each part through ``escape``; a media tag (``media_tags``) is
    written as it is, on a line of its own."""
    if isinstance(content, str):
        return escape(content)
    parts: list[str] = []
    tag_before = False
    for block in content or []:
        if is_tag_block(block):
            parts.append(("\n" if parts and not parts[-1].endswith("\n") else "") + block["tag"])
            tag_before = True
            continue
        if isinstance(block, str):
            piece = escape(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            piece = escape(str(block.get("text", "")))
        elif isinstance(block, dict):
            piece = f"[{block.get('type', 'block')}]"
        else:
            continue
        parts.append(("\n" if tag_before and piece and not piece.startswith("\n") else "") + piece)
        tag_before = False
    return "".join(parts)


def _kind(message: BaseMessage) -> str:
    return {"human": "human", "ai": "ai", "tool": "tool", "system": "system"}.get(
        message.type, message.type
    )


def archive_section(messages: Sequence[BaseMessage], now: datetime | None = None) -> str:
    """The summarized messages as one Markdown section, each an escaped XML element."""
    stamp = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    lines = [f"## Summarized at {stamp}", ""]
    for message in messages:
        if message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE:
            continue  # an earlier summary: its messages are in an earlier section
        body = _text(message.content, _escaped)
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        if calls:
            inner = [f"<content>{body}</content>"] + [
                f'<tool_call id="{html.escape(str(c.get("id")))}" name="{html.escape(c["name"])}">'
                f"{html.escape(json.dumps(c['args'], ensure_ascii=False), quote=False)}</tool_call>"
                for c in calls
            ]
            body = "\n".join(inner)
        lines.append(f'<message type="{_kind(message)}">{body}</message>')
    return "\n".join(lines) + "\n\n"


def transcript_for_summary(messages: Sequence[BaseMessage]) -> str:
    parts = []
    for message in messages:
        text = _text(message.content)
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = "; ".join(
                f"{c['name']}({json.dumps(c['args'], ensure_ascii=False)[:500]})"
                for c in message.tool_calls
            )
            text = f"{text}\n[tool calls: {calls}]".strip()
        parts.append(f"[{_kind(message)}]\n{text[:20_000]}")
    return "\n\n".join(parts) or "No previous conversation history."


class CompactionFailed(Exception):
    """The summary could not be made; the conversation is unchanged (a notice said why)."""


@dataclass(frozen=True, slots=True)
class Compacted:
    """A compaction made: the event for the thread's state, and what it did (also emitted)."""

    event: Compaction
    finished: CompactionFinished


NOT_SMALLER = "the summary would not make it smaller"
SUMMARY_ALONE = "the summary's own preamble is as large as the messages it would replace"


class Compactor:
    """Summarizes and archives the older part of a thread's messages: for the middleware, when
    the window fills, and for ``/offload``, on demand.

    A compaction must shrink the request: its size before (the messages as sent now) and after
    (the summary and the messages kept) are counted alike, and when after is not below before
    the compaction is refused (``CompactionRefused``), with nothing written: the archive is
    appended only once the summary is known to help. When even an empty summary would not
    help, the summarizer is not asked at all."""

    def __init__(
        self,
        model: BaseChatModel,
        max_input_tokens: int,
        history_dir: Path,
        triggers: Triggers | None = None,
        counter: TokenCounter | None = None,
        store: AttachmentStore | None = None,
        tariff: Tariff | None = None,
    ) -> None:
        self.model = model
        self.tariff = tariff  # the summarizer's model and prices, for the session's budget
        self.window = max_input_tokens
        self.history_dir = history_dir
        self.triggers = triggers or Triggers()
        self.counter = counter
        self.store = store  # where the summarized part's media are (or are put), for their tags

    @property
    def trigger_tokens(self) -> int | None:
        """Tier 2's trigger in tokens; None when it counts messages."""
        at = self.triggers.summarize_at
        return None if at.unit is Unit.MESSAGES else at.limit(self.window)

    def over(self, messages: list[BaseMessage]) -> int | None:
        """The estimated (or last reported) size of the request ``messages`` make (with the
        last request's system message and tools) when it reaches the trigger."""
        if self.known_under(messages):
            return None  # the encoding need not be loaded
        tokens = count_request(messages, self.counter)
        trigger = self.trigger_tokens
        if trigger is None:
            return tokens  # a count of messages, reached
        if (
            tokens >= trigger
            and (cut := truncated_history(messages, self.window, self.triggers, self.counter))
            is not None
        ):
            tokens = count_request(cut, self.counter)  # what tier 1 would send
        size = max(tokens, reported_tokens(messages))
        return size if size >= trigger else None

    def known_under(self, messages: list[BaseMessage]) -> bool:
        """Whether the request ``messages`` make is below the trigger, known without counting
        tokens: by the number of messages, or from their lengths and the provider's last figure."""
        at = self.triggers.summarize_at
        if not known_under(at, messages, self.window, self.counter):
            return False
        return at.unit is Unit.MESSAGES or reported_tokens(messages) < at.limit(self.window)

    def archive_path(self, session_id: str) -> Path:
        """The session's archive file; a subagent's thread (``SESSION/task/N``) has its own (``-task-N``)."""
        return archive_path(self.history_dir, session_id)

    async def compact(
        self,
        messages: Sequence[BaseMessage],
        previous: Compaction | None,
        *,
        session_id: str,
        emit: Callable[[Event], None],
        force: bool = False,
        focus: str = "",
        pre_compact: Callable[[], Awaitable[object]] | None = None,
        budget: AgentBudget | None = None,
    ) -> Compacted | CompactionRefused | None:
        """The compaction of ``messages`` (the whole history); a refusal when it would not
        shrink the request; None when below the trigger (unless ``force``) or with nothing
        older than the keep window. Raises ``CompactionFailed`` when the summary could not be
        made. What happened is also emitted, as events. ``focus``: what the user asked the
        summary to keep in particular (``/offload FOCUS``); ``pre_compact``: run just before the
        summary is asked for (the ``PreCompact`` hooks); ``budget``: the session's, which the
        summary's request is charged to."""
        effective = effective_messages(messages, previous)
        if not force and self.known_under(effective):
            return None
        if self.counter is not None:
            await (
                self.counter.load()
            )  # what follows counts on the loop: the encoding is built off it
        tokens = self.over(effective)
        if tokens is None and not force:
            return None
        # The user's latest message is always sent as written, whatever follows it; asked for,
        # everything before it is compacted. When the window fills after it (one request, a
        # long run of tool calls), the cut may pass it: then the summary carries it verbatim.
        latest = max(latest_user_index(effective), 0)
        keep = safe_cutoff(
            effective, keep_from(self.triggers.keep, effective, self.window, counter=self.counter)
        )
        request = (
            pinned_request(effective, latest, previous) if not force and keep > latest + 1 else None
        )
        cutoff = latest if force else (keep if request is not None else min(latest, keep))
        if cutoff <= (1 if previous else 0):
            return None  # nothing new to summarize
        before = count_messages(effective, self.counter)
        path = self.archive_path(session_id)
        new_cutoff = next_cutoff(previous, cutoff)
        summarized = new_cutoff - (previous["cutoff"] if previous else 0)
        floor = count_messages(
            effective_messages(
                messages, Compaction(cutoff=new_cutoff, summary="", archive=str(path))
            ),
            self.counter,
        )
        if floor >= before:
            return self._refuse(emit, summarized, before, floor, SUMMARY_ALONE)
        started = CompactionStarted(
            reason=f"~{tokens:,} of {self.window:,} tokens"
            if tokens is not None and not force
            else "asked for"
        )
        emit(started)
        if pre_compact is not None:
            await pre_compact()
        tagged = await asyncio.to_thread(tag_media, effective[:cutoff], self.store)
        older = tagged.messages
        try:
            summarizer = self.model.with_config(tags=[TAG_NOSTREAM])
            answer = await summarizer.ainvoke(
                [
                    SystemMessage(content=summary_prompt(focus)),
                    HumanMessage(content=transcript_for_summary(older)),
                ]
            )
        except Exception as exc:
            emit(Notice(f"could not compact the conversation: {type(exc).__name__}: {exc}"[:300]))
            raise CompactionFailed(str(exc)) from exc
        if budget is not None and self.tariff is not None and isinstance(answer, AIMessage):
            await budget.acharge(self.tariff, answer, emit, agent=COMPACTION)
        event = Compaction(
            cutoff=new_cutoff, summary=_text(answer.content).strip(), archive=str(path)
        )
        if request is not None:
            event["request"] = request
        after = count_messages(effective_messages(messages, event), self.counter)
        if after >= before:
            return self._refuse(emit, summarized, before, after, NOT_SMALLER)
        if not self._archive(older, path, emit):
            event = Compaction(**{**event, "archive": None})
            after = count_messages(effective_messages(messages, event), self.counter)
        if tagged.failed:
            emit(
                Notice(
                    f"{tagged.failed} media part(s) of the summarized messages could not be kept: the summary marks them as lost"
                )
            )
        finished = CompactionFinished(
            messages_summarized=summarized,
            tokens_before=before,
            tokens_after=after,
            archive_path=event["archive"],
            messages_kept=len(effective) - cutoff,
        )
        emit(finished)
        event["shown"] = [*log_of(previous), logged(len(messages), started, finished)]
        return Compacted(event, finished)

    @staticmethod
    def _refuse(
        emit: Callable[[Event], None], summarized: int, before: int, after: int, reason: str
    ) -> CompactionRefused:
        refused = CompactionRefused(
            messages_summarized=summarized, tokens_before=before, tokens_after=after, reason=reason
        )
        emit(refused)
        return refused

    def _archive(
        self, messages: Sequence[BaseMessage], path: Path, emit: Callable[[Event], None]
    ) -> bool:
        try:
            with open_private(path, "a") as handle:
                handle.write(archive_section(messages))
        except OSError as exc:
            emit(
                Notice(
                    f"could not archive the older messages ({exc.strerror or exc}): they will only be in the summary"
                )
            )
            return False
        return True
