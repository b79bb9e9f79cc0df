"""The User-Agent every request of dcode's to a model provider carries."""

from __future__ import annotations

from dcode import __version__

USER_AGENT = f"dcode/{__version__}"
