"""The session's token calibration, from each model call's reported usage.

Hook: ``awrap_model_call``, inside the compaction tiers (it sees the request as it will be
sent) and outside the media projection (it sees dcode's image references, priced by the
route's formula). The request is counted before the call (the system message, the messages,
the tools); when the response reports its input tokens, the counter's calibration for the
session takes the ratio of the two. Before the encoding is loaded, the pair waits in the counter
until the calibration is first asked for (a short session never needs it). The request itself
is never changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from dcode.agent.run_context import RunContext
from dcode.context.tokens.counter import TokenCounter
from dcode.models.usage import usage_is_estimated


def answer_with_usage(response: ModelResponse) -> AIMessage | None:
    for message in reversed(response.result):
        if isinstance(message, AIMessage) and message.usage_metadata:
            return message
    return None


def reported_input(response: ModelResponse) -> int:
    answer = answer_with_usage(response)
    return (
        int(answer.usage_metadata.get("input_tokens", 0))
        if answer is not None and answer.usage_metadata
        else 0
    )


class TokenCalibrationMiddleware(AgentMiddleware[AgentState[object], RunContext]):
    def __init__(self, counter: TokenCounter) -> None:
        super().__init__()
        self.counter = counter

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        counter = self.counter
        if not counter.ready:  # counted when the calibration is first needed, if ever
            counter.bound_request(system=request.system_message, tools=request.tools)
            fixed_bound = counter.fixed_bound  # this request's, whatever runs meanwhile
            response = await handler(request)
            if reported := reported_input(response):
                counter.observe_later(
                    reported, request.messages, system=request.system_message, tools=request.tools
                )
                answer = answer_with_usage(response)
                if answer is not None and not usage_is_estimated(answer.response_metadata):
                    counter.anchor(
                        answer, fixed_bound
                    )  # the provider's figure bounds the next requests
            return response
        counted = counter.count_request(
            request.messages, system=request.system_message, tools=request.tools
        )
        response = await handler(request)
        counter.observe(reported_input(response), counted)
        return response
