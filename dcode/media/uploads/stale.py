"""Which file ids a chat error says the provider no longer has (pure).

A provider forgets a file before its expiry when it is deleted elsewhere, when an organisation
is cleaned up, or when its clocks disagree with ours. The chat request then fails with a 4xx
whose message talks of a file that is expired, deleted, missing or invalid. When the message
names ids this request used, exactly those are stale; when it names none (a bare "file
invalid"), every id the request used is suspect. An error that is not about files is not
this module's business (``None``), and neither is an id the request did not use.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_ABOUT_FILES = re.compile(r"\bfiles?\b|file[_ -]?ids?\b", re.IGNORECASE)
_GONE = re.compile(
    r"expired|deleted|not\s+found|no\s+such|missing|invalid|does\s+not\s+exist|unavailable|unknown|not\s+accessible",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class StaleFiles:
    ids: frozenset[str]
    named: bool
    """True when the error named these ids; False when it named none and all are suspect."""


def stale_files(message: str, used: Collection[str]) -> StaleFiles | None:
    """The ids of ``used`` that ``message`` (a chat error's text) says are gone, or None when
    the error is not about files."""
    if not used or not _ABOUT_FILES.search(message) or not _GONE.search(message):
        return None
    named = frozenset(
        file_id
        for file_id in used
        if re.search(rf"(?<![\w-]){re.escape(file_id)}(?![\w-])", message)
    )
    if named:
        return StaleFiles(named, named=True)
    return StaleFiles(frozenset(used), named=False)
