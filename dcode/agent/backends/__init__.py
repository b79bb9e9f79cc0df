"""Where the model's tools act: the ``Backend`` protocol and its local implementation."""

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
