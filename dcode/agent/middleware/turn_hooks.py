"""The turn's own hooks, ``SessionStart``, ``UserPromptSubmit`` and ``Stop``, fired by the graph
itself: for a run that no ``SessionRunner`` wraps (a served run, ``dcode.server``), so that they run where the
workspace is, on the server, and never on the client too. An embedded graph has none of this:
its runner fires them around the graph (``runner._prompt_hooks``, ``runner._stop_hooks``).

Hooks: ``start_turn`` (in the turn's shared before-agent node, ``sequence``) fires
``SessionStart`` (source ``startup``) before the thread's first prompt, then
``UserPromptSubmit`` for the run's new prompt (the thread's last message, a user's); a refusal takes the prompt out of the thread and ends the run with the
embedded runner's line (an ``ErrorEvent`` of kind ``hook_blocked``), and the context the hooks
add goes with the prompt. A prompt let through is noted in the session's record
(``RunContext.record``: its title, its size), as the runner notes an embedded one.
``aafter_agent`` fires ``Stop`` as the agent ends its answer: a block
sends its reason back to the model, as a message marked as the hook's.
"""

# Any: LangChain's middleware hooks take and return untyped state updates, and message content

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentState, hook_config
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage
from langgraph.runtime import Runtime

from dcode.agent.events import ErrorEvent, Notice
from dcode.agent.hooks.context_text import with_context
from dcode.agent.hooks.outcome import stopped_line
from dcode.agent.markers import HOOK_MARKER
from dcode.agent.middleware.sequence import InSequence
from dcode.agent.run_context import RunContext, current_thread_id, require_run_context


class TurnHooksState(AgentState[object]):
    prompt_refused: NotRequired[Annotated[bool, PrivateStateAttr]]
    """The run's prompt was refused: no answer, so no ``Stop`` either."""


def _new_prompt(messages: list[AnyMessage]) -> HumanMessage | None:
    """The run's new prompt: the thread's last message, when it is a user's (not a hook's)."""
    last = messages[-1] if messages else None
    if isinstance(last, HumanMessage) and HOOK_MARKER not in last.additional_kwargs:
        return last
    return None


def _stop_active(messages: list[AnyMessage]) -> bool:
    """Whether a ``Stop`` hook already sent the agent back since the user's last prompt."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return bool(message.additional_kwargs.get(HOOK_MARKER) == "Stop")
    return False


class TurnHooksMiddleware(InSequence[TurnHooksState]):
    state_schema = TurnHooksState
    turn_jumps = ("end",)

    async def start_turn(
        self, state: TurnHooksState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        context = require_run_context(runtime.context)
        prompt = _new_prompt(state["messages"])
        if context.hooks is None or prompt is None:
            if prompt is not None and context.record is not None:
                await context.record.prompted(prompt.text, len(state["messages"]))
            return {"prompt_refused": False} if state.get("prompt_refused") else None
        added: list[str] = []
        if len(state["messages"]) == 1:  # the thread's first prompt: the session starts
            started = await context.hooks.fire(
                "SessionStart",
                {"session_id": current_thread_id(), "source": "startup"},
                context.emit,
                target="startup",
            )
            added += started.context
        submitted = await context.hooks.fire(
            "UserPromptSubmit",
            {"session_id": current_thread_id(), "prompt": prompt.text},
            context.emit,
        )
        added += submitted.context
        if submitted.blocked or submitted.stop:
            why = submitted.reason or submitted.stop_reason or "no reason given"
            context.emit(
                ErrorEvent(
                    f"a UserPromptSubmit hook blocked the prompt: {why}", kind="hook_blocked"
                )
            )
            return {
                "messages": [RemoveMessage(id=prompt.id or "")],
                "prompt_refused": True,
                "jump_to": "end",
            }
        if context.record is not None:
            await context.record.prompted(prompt.text, len(state["messages"]))
        update: dict[str, Any] = {"prompt_refused": False}
        if added:
            content: Any = prompt.content
            update["messages"] = [
                prompt.model_copy(update={"content": with_context(content, added)})
            ]
        return update

    @hook_config(can_jump_to=["model"])
    async def aafter_agent(
        self, state: TurnHooksState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        context = require_run_context(runtime.context)
        hooks = context.hooks
        if hooks is None or not hooks.has("Stop") or state.get("prompt_refused"):
            return None
        outcome = await hooks.fire(
            "Stop",
            {
                "session_id": current_thread_id(),
                "stop_hook_active": _stop_active(state["messages"]),
            },
            context.emit,
        )
        if outcome.stop:  # the agent stops as it meant to; the hook's reason is said
            context.emit(Notice(stopped_line(outcome.stop_reason)))
            return None
        if not outcome.blocked:
            return None
        reason = outcome.reason or "a Stop hook asked you to go on"
        context.emit(Notice(f"a Stop hook asked the agent to go on: {reason}"))
        again = HumanMessage(
            content=f"Stop hook: {reason}", additional_kwargs={HOOK_MARKER: "Stop"}
        )
        return {"messages": [again], "jump_to": "model"}
