"""Why no model is usable yet: asked by the launch, before the app starts, and by the
first-run screen each time the user has changed something.

A module of its own, below both: the launch starts the app, and the app's setup component asks
again, so neither need import the other.
"""

from __future__ import annotations

from dcode.settings.config import ConfigError, Settings


def find_setup_problem(settings: Settings, *, attached: bool = False) -> str | None:
    """One line saying why no model is usable (no key, bad spec), or None when one is.
    ``attached``: the sessions run on a dcode server, whose model answers; this machine needs
    no key of its own for the configured one."""
    from dcode.models.spec import resolve_endpoint  # only when asked: --help never loads it

    try:
        resolve_endpoint(settings, key_required=not attached)
    except ConfigError as exc:
        return str(exc)
    return None
