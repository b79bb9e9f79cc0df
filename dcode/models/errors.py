"""Turning model and transport failures into one line a user can act on.

A timeout names the limit that fired and how to change it; a connection that broke after the
answer started is told apart from a server that cannot be reached; data the server sent that
is not JSON is the server's fault, not a ``JSONDecodeError`` of dcode's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dcode.models.chat_model import EmptyAnswer


def describe_model_error(exc: BaseException, base_url: str = "") -> str:
    """One line, no traceback. Unknown exceptions keep their type name so bugs stay visible."""
    import openai

    where = f" at {base_url}" if base_url else ""
    limit = _limit_line(exc, where)
    if limit:
        return limit
    status = getattr(exc, "status_code", None)
    detail = api_message(exc)
    match exc:
        case openai.AuthenticationError():
            return f"authentication failed (401){where}: check the API key ({detail})"
        case openai.PermissionDeniedError():
            return f"permission denied (403){where}: {detail}"
        case openai.NotFoundError():
            return f"not found (404){where}: {detail} (is the model name right?)"
        case openai.RateLimitError():
            return f"rate limited (429){where}{_asked_wait(exc)}: {detail}"
        case openai.BadRequestError() if (
            "context_length" in detail or "context length" in detail.lower()
        ):
            return f"the conversation no longer fits the model's context window: {detail}"
        case openai.BadRequestError():
            return f"the model rejected the request (400){where}: {detail}"
        case openai.InternalServerError() | openai.APIStatusError():
            return f"model server error ({status}){where}: {detail}"
        case openai.APITimeoutError():
            return f"the model did not answer in time{where}"
        case openai.APIConnectionError():
            cause = exc.__cause__ or exc.__context__
            reason = f": {cause}" if cause else ""
            return f"cannot reach the model server{where}{reason}"
        case openai.APIResponseValidationError() | openai.APIError():
            return f"bad response from the model server{where}: {detail}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else 'no message'}"


def _limit_line(exc: BaseException, where: str) -> str:
    """The line for a failure dcode's own limits and stream checks identify, else ""."""
    from dcode.models.chat_model import EmptyAnswer, InvalidModelData
    from dcode.models.transport import (
        ClosedMidAnswer,
        ConnectTimedOut,
        FirstByteTimeout,
        RetryBudgetExceeded,
        StreamStalled,
    )

    for link in _chain(exc):
        match link:
            case RetryBudgetExceeded(seconds=seconds, tries=tries, last=last):
                tried = "1 try" if tries == 1 else f"{tries} tries"
                return (
                    f"gave up on the model server{where} after {seconds:g} s and {tried} "
                    f"(retry budget; {_knob('retry_budget')}); the last try: {last}"
                )
            case FirstByteTimeout(seconds=seconds):
                return f"the model server{where} sent nothing for {seconds:g} s (first-byte timeout; {_knob('request_timeout')})"
            case ConnectTimedOut(seconds=seconds):
                return f"could not connect to the model server{where} within {seconds:g} s (connect timeout; {_knob('connect_timeout')})"
            case StreamStalled(seconds=seconds):
                return f"the model server{where} stopped sending mid-answer: nothing for {seconds:g} s (stall timeout; {_knob('stall_timeout')})"
            case ClosedMidAnswer():
                return f"the connection to the model server{where} was closed mid-answer"
            case InvalidModelData():
                return f"the model server{where} sent invalid data ({link})"
            case EmptyAnswer():
                return _empty_answer_line(link, where)
    return ""


def _empty_answer_line(empty: EmptyAnswer, where: str) -> str:
    """What an answer with nothing in it most likely means: the request is larger than the
    context the server runs with, which dcode cannot see."""
    if empty.window is None:
        window = "no window is configured"
    else:
        window = f"the configured window is {empty.window:,} ({'a guess' if empty.window_guessed else 'from the profile'})"
    return (
        f"the model server{where} returned an empty answer: the request was ~{empty.request_tokens:,} tokens and {window}; "
        "if the server's context is smaller (llama.cpp's default is 2,048), start it with a larger context "
        f'(e.g. --n_ctx 8192) or set max_input_tokens under [models."{empty.spec}"]'
    )


def _asked_wait(exc: BaseException) -> str:
    """The wait a refusal asked for (``Retry-After``), as words; "" when it asked for none."""
    from dcode.models.transport import retry_after_seconds

    response = getattr(exc, "response", None)
    wait = retry_after_seconds(response.headers) if response is not None else None
    return f" (it asked to wait {wait:g} s)" if wait else ""


def _knob(key: str) -> str:
    from dcode.settings.config import env_var

    return f"set {key} or {env_var(key)}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes, the way Python prints them (each exception once)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)


def is_context_overflow(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.BadRequestError) and "context_length" in api_message(exc)


def api_message(exc: BaseException) -> str:
    """The provider's own message (and code) of an OpenAI client error, on one line."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            code = inner.get("code")
            message = str(inner["message"])
            text = f"{message} [{code}]" if code and str(code) not in message else message
            return " ".join(text.split())[:300]
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(message).split())[:300]
