"""Why no model is usable yet: asked by the launch, before the app starts, and by the
first-run screen each time the user has changed something.

A module of its own, below both: the launch starts the app, and the app's setup component asks
again, so neither need import the other.
"""

from __future__ import annotations

from dcode.settings.config import ConfigError, Settings


def find_setup_problem(settings: Settings) -> str | None:
    """One line saying why no model is usable (no key, bad spec), or None when one is."""
    from dcode.models.spec import resolve_endpoint  # only when asked: --help never loads it

    try:
        resolve_endpoint(settings)
    except ConfigError as exc:
        return str(exc)
    return None
