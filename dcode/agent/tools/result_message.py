"""A ``ToolResult`` as a ``ToolMessage`` holds it, and read back from one.

A checkpoint saves the message, so the result is kept in the message's own fields, in plain
values any checkpoint serializer keeps: the content is what the model got; the artifact (never
sent to the model) holds a write's diff as ``{"diff": ...}``; ``additional_kwargs`` hold the
marks dcode puts on results it writes or rewrites itself (denied, cancelled, saved to a file).
These are the shapes sessions have always been saved in, so ``read_result`` reads a session
saved by any version, and both the live stream and a saved thread's replay read through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Literal, TypedDict

from dcode.agent.markers import CANCELLED_MARKER, DENIED_MARKER, SAVED_TO_MARKER
from dcode.agent.tools.diffs import DiffRecord, diff_record
from dcode.agent.tools.result import Block, ToolResult, ToolStatus
from dcode.agent.tools.spec import spec_for

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage

_STATUS_MARKERS = {ToolStatus.DENIED: DENIED_MARKER, ToolStatus.CANCELLED: CANCELLED_MARKER}


class MessageFields(TypedDict):
    """The fields of the ``ToolMessage`` that holds a result (with its call's id and name)."""

    content: str | list[str | Block]
    artifact: DiffRecord | None
    status: Literal["success", "error"]
    additional_kwargs: dict[str, object]


def message_fields(result: ToolResult) -> MessageFields:
    """Where each part of ``result`` goes in its message."""
    return MessageFields(
        content=result.content,
        artifact=diff_record(result.diff),
        status="success" if result.status is ToolStatus.OK else "error",
        additional_kwargs=result_marks(result),
    )


def result_marks(result: ToolResult) -> dict[str, object]:
    """The marks that say what the content alone does not: denied or cancelled, saved to a file."""
    marks: dict[str, object] = {}
    if marker := _STATUS_MARKERS.get(result.status):
        marks[marker] = True
    if result.saved_to:
        marks[SAVED_TO_MARKER] = result.saved_to
    return marks


def saved_elsewhere(message: ToolMessage, note: str, path: str) -> ToolMessage:
    """``message`` once its full text is saved to ``path``: the model gets ``note`` instead, and
    the result's ``saved_to`` is ``path``."""
    return message.model_copy(
        update={
            "content": note,
            "additional_kwargs": {**message.additional_kwargs, SAVED_TO_MARKER: path},
        }
    )


def read_result(message: ToolMessage) -> ToolResult:
    """The result ``message`` holds, with the preview its tool's spec shows for it."""
    kwargs = message.additional_kwargs
    saved_to = kwargs.get(SAVED_TO_MARKER)
    result = ToolResult.of(message.content, diff=_recorded_diff(message.artifact))
    return replace(
        result,
        saved_to=saved_to if isinstance(saved_to, str) else "",
        status=_status(kwargs, message.status),
        preview=spec_for(message.name or "").show_result(result.text),
    )


def _status(kwargs: Mapping[str, object], status: str) -> ToolStatus:
    if kwargs.get(DENIED_MARKER):
        return ToolStatus.DENIED
    if kwargs.get(CANCELLED_MARKER):
        return ToolStatus.CANCELLED
    return ToolStatus.ERROR if status == "error" else ToolStatus.OK


def _recorded_diff(artifact: object) -> str:
    """The diff a write recorded in its artifact; ``""`` when there is none (another tool, a
    failed call, or a session saved before writes recorded their diff)."""
    if isinstance(artifact, Mapping):
        diff = artifact.get("diff")
        if isinstance(diff, str):
            return diff
    return ""
