"""dcode's events as JSON: what a served run puts in an interrupt's value, which a checkpoint
keeps and the store's serializer must read back as it was written."""

from __future__ import annotations

import json
import logging

import pytest

from dcode.agent.events import ApprovalKind, ApprovalRequested
from dcode.agent.store.serde import safe_serde


def _question() -> ApprovalRequested:
    return ApprovalRequested(
        call_id="c1",
        tool="execute",
        kind=ApprovalKind.SHELL,
        args={"command": "ls"},
        summary="ls",
        reason="asks",
        agent=("task:1",),
    )


def test_an_events_json_holds_plain_values() -> None:
    data = _question().to_json()
    assert type(data["kind"]) is str and data["kind"] == "shell"
    assert json.loads(json.dumps(data)) == data


def test_an_approval_question_reads_back_from_a_checkpoint_as_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    serde = safe_serde()
    data = _question().to_json()
    with caplog.at_level(logging.WARNING):
        back = serde.loads_typed(serde.dumps_typed(data))
    assert back == data
    assert not [r for r in caplog.records if "Blocked deserialization" in r.getMessage()]
