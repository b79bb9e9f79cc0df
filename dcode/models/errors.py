"""Turning model and transport failures into one line a user can act on."""

from __future__ import annotations


def describe_model_error(exc: BaseException, base_url: str = "") -> str:
    """One line, no traceback. Unknown exceptions keep their type name so bugs stay visible."""
    import openai

    where = f" at {base_url}" if base_url else ""
    status = getattr(exc, "status_code", None)
    detail = _api_message(exc)
    match exc:
        case openai.AuthenticationError():
            return f"authentication failed (401){where}: check the API key ({detail})"
        case openai.PermissionDeniedError():
            return f"permission denied (403){where}: {detail}"
        case openai.NotFoundError():
            return f"not found (404){where}: {detail} (is the model name right?)"
        case openai.RateLimitError():
            return f"rate limited (429){where} after retries: {detail}"
        case openai.BadRequestError() if "context_length" in detail or "context length" in detail.lower():
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


def is_context_overflow(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.BadRequestError) and "context_length" in _api_message(exc)


def _api_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            message = inner.get("message")
            code = inner.get("code")
            if message:
                return f"{message} [{code}]" if code and str(code) not in str(message) else str(message)
    message = getattr(exc, "message", None) or str(exc)
    return " ".join(str(message).split())[:300]
