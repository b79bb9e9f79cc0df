"""The server's second graph, ``dcode-session``: what a client asks of a served session between
its turns, answered where the session lives.

A served session's spend is in the server's session store (each charge is written there as its
run goes, ``host.StoredUsage``), and its hooks run in the server's workspace. A client reads
neither directly, and dcode adds no HTTP route of its own: it starts a stateless run of this
graph (``runs.wait`` without a thread; the server keeps no thread and no checkpoint of it), whose
input says what is asked, and reads the answer in the run's output:

- ``usage``: the session's usage rows, by model and agent, as the server's store holds them, and
  the limits its runs are held to (the client's ``budget_usd``/``budget_tokens`` where it sends
  them, else the server's settings'): what ``/cost`` and ``/budget`` show in an attached TUI;
- ``end``: the session's ``SessionEnd`` hooks, fired on the server (where its ``SessionStart``
  fired) with the client's ``reason`` when the client's session ends (the attached TUI quits or
  leaves it, ``-p`` has printed its turn); the hooks' events come back as JSON;
- ``model``: the model a run with the client's model keys (``model``, ``base_url``, ``api``,
  ``effort``: those it sends with its runs) answers with on this server, its reasoning effort
  and window: what the attached TUI names in its banner and status bar. It needs no session.

The client asks for ``end`` only for a session whose turns it ran (as the embedded runner fires
``SessionEnd`` only for a session that started).
"""

# Any: the graph's input and output are JSON

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import START, StateGraph

from dcode.server.options import MODEL_KEYS

ASKS = ("usage", "end", "model")
END_REASONS = ("clear", "logout", "prompt_input_exit", "other")
"""``SessionEnd``'s reasons, as Claude Code names them."""


class SessionAsk(TypedDict, total=False):
    ask: str
    """``usage``, ``end`` or ``model``."""
    session_id: str
    """The served session (the thread's id)."""
    reason: str
    """``end``: why the client's session ended (``END_REASONS``)."""
    budget_usd: str
    budget_tokens: str
    """``usage``: the limits the client sends with its runs (``ServedContext``'s)."""
    model: str
    base_url: str
    api: str
    effort: str
    """``model``: the model keys the client sends with its runs (``ServedContext``'s)."""
    answer: dict[str, Any]
    """The output: ``{"rows", "limits"}`` for ``usage``, ``{"events"}`` for ``end``,
    ``{"spec", "effort", "max_input_tokens", "workspace"}`` for ``model``."""


async def _answer(state: SessionAsk) -> dict[str, Any]:
    from dcode.server.host import RunRefused, ServedHost

    host = await ServedHost.open()
    ask, session = state.get("ask", ""), state.get("session_id", "")
    if ask not in ASKS:
        raise RunRefused(f"dcode-session answers {', '.join(ASKS)}, not {ask!r}")
    if ask == "model":
        return {"answer": await host.served_model({k: state.get(k, "") for k in MODEL_KEYS})}
    if not session:
        raise RunRefused("dcode-session needs the session's id (session_id)")
    if ask == "usage":  # a session yet to run has spent nothing
        return {"answer": await host.session_usage(session, dict(state))}
    reason = state.get("reason", "")
    if reason not in END_REASONS:
        raise RunRefused(f"SessionEnd's reason is one of {', '.join(END_REASONS)}, not {reason!r}")
    return {"answer": {"events": await host.end_session(session, reason)}}


def _build() -> Any:
    builder = StateGraph(SessionAsk)
    builder.add_node("answer", _answer)
    builder.add_edge(START, "answer")
    return builder.compile()


graph = _build()
