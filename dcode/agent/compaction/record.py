"""The latest compaction of a thread, as its state keeps it, and the messages it makes the model
see: the summary, then the messages after the cut.

The summarization middleware sends this view, ``compact_conversation`` writes a new record, and
``/context`` counts the same view, so all three read it from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from dcode.agent.compaction.log import log_of
from dcode.agent.fences import Fence, fenced
from dcode.agent.json_types import JsonObject
from dcode.agent.media_tags import mentions_media

SUMMARY_SOURCE = "summarization"


class Compaction(TypedDict):
    """The latest compaction of a thread, kept in its state: a plain dict, so the checkpointer
    stores and restores it as it is, under any serializer settings."""

    cutoff: int  # in the whole history: the first message sent after the summary
    summary: str
    archive: str | None  # the Markdown file the summarized messages were appended to
    request: NotRequired[str]
    """The user's latest message, verbatim, when the cut went past it (a long run of tool
    calls after one request, as a subagent's whole run is): the summary carries it."""
    shown: NotRequired[list[JsonObject]]
    """What every compaction of the thread so far showed, and where (``compaction.log``)."""


def read_compaction(values: Mapping[str, object]) -> Compaction | None:
    """The compaction in a thread's state ``values``; None when there is none, or when what is
    there is not one (then the whole history is sent, as before any compaction)."""
    found = values.get("compaction")
    if not isinstance(found, Mapping):
        return None
    cutoff, summary, archive = found.get("cutoff"), found.get("summary"), found.get("archive")
    if not (
        isinstance(cutoff, int)
        and cutoff >= 0
        and isinstance(summary, str)
        and isinstance(archive, str | None)
    ):
        return None
    event = Compaction(cutoff=cutoff, summary=summary, archive=archive)
    if isinstance(request := found.get("request"), str):
        event["request"] = request
    if shown := log_of(found):
        event["shown"] = shown
    return event


def summary_message(event: Compaction) -> HumanMessage:
    path, summary = event["archive"], event["summary"]
    media = (
        " Open the files its media tags name (<image url=.../> and the like) with read_file."
        if mentions_media(summary)
        else ""
    )
    if path:
        text = (
            "You are in the middle of a conversation that has been summarized. The whole conversation so far "
            f"is saved in {path}: read it with read_file when you need a detail.{media} A condensed summary follows:\n\n"
            f"{fenced(Fence.SUMMARY, summary)}"
        )
    else:
        lead = (
            f"Here is a summary of the conversation so far.{media}"
            if media
            else "Here is a summary of the conversation so far:"
        )
        text = f"{lead}\n\n{fenced(Fence.SUMMARY, summary)}"
    if event.get("request"):
        text += f"\n\nThe request being worked on, as the user wrote it:\n\n{event['request']}"
    return HumanMessage(content=text, additional_kwargs={"lc_source": SUMMARY_SOURCE})


def effective_messages(
    messages: Sequence[BaseMessage], event: Compaction | None
) -> list[BaseMessage]:
    """What the model is sent: the messages, or the summary and those after the cut."""
    if not event:
        return list(messages)
    return [summary_message(event), *messages[event["cutoff"] :]]


def reported_tokens(messages: Sequence[BaseMessage]) -> int:
    """The provider's figure for the last request (its total tokens), 0 when none was reported."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.usage_metadata:
            return int(message.usage_metadata.get("total_tokens", 0))
    return 0
