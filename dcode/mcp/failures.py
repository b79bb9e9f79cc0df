"""One line for what went wrong with a server, from whatever the SDK raised.

The transports raise exception groups (anyio task groups) around the real cause; the leaf that
says most is picked. An HTTP 401 or 403 means the server wants a login (``needs_login``).
"""

from __future__ import annotations

import re

MAX_ERROR = 200
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def describe(exc: BaseException) -> str:
    found = leaves(exc)
    leaf = next((e for e in found if not isinstance(e, (TimeoutError,)) and str(e)), found[0])
    if isinstance(leaf, TimeoutError):
        return "timed out"
    text = str(leaf) or type(leaf).__name__
    return clean(text)


def needs_login(exc: BaseException) -> bool:
    for leaf in leaves(exc):
        response = getattr(leaf, "response", None)
        if getattr(response, "status_code", None) in (401, 403):
            return True
    return False


def clean(text: str, limit: int = MAX_ERROR) -> str:
    """One line, no control characters, at most ``limit`` characters."""
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
