"""The memo of what was computed from a message object: found again for the same object with
the same fields, never for a changed, copied or different one, and gone with its object."""

from __future__ import annotations

import gc

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from dcode.context.tokens.counter import TokenCounter
from dcode.models.message_memo import MessageMemo
from tests.test_tokens import CountingEncoder


def test_the_same_unchanged_object_is_found_and_nothing_else() -> None:
    memo: MessageMemo[str] = MessageMemo()
    message = HumanMessage("hello", id="m1")
    twin = HumanMessage("hello", id="m1")  # equal, but another object
    assert memo.put(message, "counted") == "counted"
    assert memo.get(message) == "counted"
    assert memo.get(twin) is None
    assert memo.get(message.model_copy(update={"content": "bye"})) is None


def test_a_field_given_a_new_value_makes_the_entry_stale() -> None:
    memo: MessageMemo[int] = MessageMemo()
    message = AIMessage("", id=None, tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
    memo.put(message, 1)
    message.id = "given-later"  # as langgraph gives a message its id
    assert memo.get(message) is None
    memo.put(message, 2)
    message.content = "now with text"
    assert memo.get(message) is None
    memo.put(message, 3)
    assert memo.get(message) == 3


def test_an_entry_goes_with_its_message() -> None:
    memo: MessageMemo[int] = MessageMemo()
    kept = HumanMessage("kept", id="k")
    memo.put(kept, 1)
    for n in range(100):
        memo.put(ToolMessage(f"result {n}", tool_call_id=f"c{n}"), n)  # dropped at once
    gc.collect()
    assert len(memo) == 1 and memo.get(kept) == 1


def test_the_counter_counts_a_changed_message_afresh_and_an_unchanged_one_by_its_object() -> None:
    encoder = CountingEncoder()
    counter = TokenCounter("gpt-4o", encoder=encoder)
    history = [HumanMessage(f"message {n}", id=f"h{n}") for n in range(50)]
    total = counter.count_messages(history)
    calls = encoder.calls
    assert counter.count_messages(history) == total and encoder.calls == calls
    history[3].content = "a much longer text than the one this message had when it was counted"
    changed = counter.count_messages(history)
    assert changed > total and encoder.calls > calls
    # A fresh object with the same id and content is still found by its content.
    calls = encoder.calls
    assert (
        counter.count_messages([m.model_copy() for m in history]) == changed
        and encoder.calls == calls
    )
