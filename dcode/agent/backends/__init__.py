"""Where the model's tools act: the ``Backend`` protocol and its local implementation.

The names below load on first use: the command line imports one light module of this package
(``environment``, the rule for secret variables) before the first frame, and must not pay for
the whole backend then.
"""

# Any: a lazy module attribute (PEP 562 __getattr__): its type is the named object's

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dcode.agent.backends.local import LocalBackend
    from dcode.agent.backends.protocol import (
        DEFAULT_TIMEOUT_S,
        MAX_TIMEOUT_S,
        Backend,
        ExecResult,
        FileInfo,
        GrepMatch,
        GrepResult,
        InvalidPattern,
        Listing,
    )

_HOMES = {
    "LocalBackend": "dcode.agent.backends.local",
    **dict.fromkeys(
        (
            "DEFAULT_TIMEOUT_S",
            "MAX_TIMEOUT_S",
            "Backend",
            "ExecResult",
            "FileInfo",
            "GrepMatch",
            "GrepResult",
            "InvalidPattern",
            "Listing",
        ),
        "dcode.agent.backends.protocol",
    ),
}

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_TIMEOUT_S",
    "Backend",
    "ExecResult",
    "FileInfo",
    "GrepMatch",
    "GrepResult",
    "InvalidPattern",
    "Listing",
    "LocalBackend",
]


def __getattr__(name: str) -> Any:  # a module attribute: its type is the named object's
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
