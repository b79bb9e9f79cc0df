"""The conversation goes to the OpenAI client as ``extra_body``, so the SDK does not walk it.

The OpenAI SDK "transforms" every request's parameters before sending them: it walks each
value against the parameters' TypedDict annotations (aliases, base64 and date formats). The
conversation is most of a request and grows with every step, and none of it needs that walk:
langchain-openai has already converted it to plain JSON data. Measured on a 300-message turn,
the walk was a quarter of the process's CPU time, and each call cost about 0.3 ms more per
message in the history.

``extra_body`` is the SDK's public way to send JSON that is merged into the body as it is
(its keys take precedence over the transformed ones). So the messages (Chat Completions) or
the input items (Responses API) move there; Chat Completions' required ``messages`` argument
is given an empty list, which the merge replaces. The bytes on the wire are the same JSON,
with the conversation's key after the other parameters.
"""

from __future__ import annotations

_HISTORY_KEYS = ("messages", "input")


def history_as_extra_body(payload: dict[str, object]) -> dict[str, object]:
    """``payload`` (the keyword arguments for ``create``) with its conversation in ``extra_body``."""
    moved = {key: payload[key] for key in _HISTORY_KEYS if isinstance(payload.get(key), list)}
    if not moved:
        return payload
    out = dict(payload)
    extra = out.get("extra_body")
    out["extra_body"] = {**(extra if isinstance(extra, dict) else {}), **moved}
    for key in moved:
        if key == "messages":
            out[
                key
            ] = []  # required by Chat Completions' create(); the merge puts the real ones back
        else:
            del out[key]
    return out
