"""The environment the backend's processes get: the user's own, less the secrets dcode holds.

The model can run ``env`` (or read ``/proc/self/environ``), and whatever a tool prints is sent to
the provider and saved in the session. So the shell, and every helper the backend starts, runs
without the variables that hold provider keys:

* every name ending in ``_API_KEY`` (each preset's key variable, and most other services' too);
* every ``OPENAI_*`` name (key, organisation, project, base URL);
* every ``DCODE_*`` name but ``DCODE_HOME`` (a directory, which a ``dcode`` run from the shell
  needs to find the same sessions and config);
* the names the caller adds: the presets' and each configured provider's ``api_key_env``.

A name the user lists in ``pass_env`` is passed all the same, but for ``NEVER_PASSED``:
``DCODE_DATABASE_URL`` may hold the password of the server every session is kept in, which
no command the model runs needs (a ``dcode`` run from the shell reads the user's config); and
the credentials a ``dcode --server`` client sends its server (``dcode.server.client``):
``DCODE_SERVER_TOKEN``, ``DCODE_SERVER_API_KEY`` and ``LANGSMITH_API_KEY``. Names are compared in upper case,
so ``openai_api_key`` is hidden too. The same rule decides which variables dcode takes out of
what ``/proc/<pid>/environ`` shows of itself (``dcode.processes.environ_block``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dcode.settings.config import Settings

KEY_SUFFIX = "_API_KEY"
HIDDEN_PREFIXES = ("OPENAI_", "DCODE_")
KEPT = frozenset({"DCODE_HOME"})
NEVER_PASSED = frozenset(
    {"DCODE_DATABASE_URL", "DCODE_SERVER_TOKEN", "DCODE_SERVER_API_KEY", "LANGSMITH_API_KEY"}
)


@dataclass(frozen=True, slots=True)
class ShellEnvironment:
    hidden: frozenset[str] = frozenset()
    passed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, hidden: Iterable[str] = (), passed: Iterable[str] = ()) -> ShellEnvironment:
        return cls(
            frozenset(name.upper() for name in hidden), frozenset(name.upper() for name in passed)
        )

    @classmethod
    def for_settings(cls, settings: Settings) -> ShellEnvironment:
        """The presets' and the configured providers' variables hidden, ``pass_env`` passed."""
        from dcode.settings.presets import provider_variables

        return cls.of(provider_variables(settings.providers), settings.pass_env)

    def hides(self, name: str) -> bool:
        upper = name.upper()
        if upper in NEVER_PASSED:
            return True
        if upper in self.passed or upper in KEPT:
            return False
        return (
            upper in self.hidden or upper.endswith(KEY_SUFFIX) or upper.startswith(HIDDEN_PREFIXES)
        )

    def build(self, source: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a child process, from ``source`` (default: this process's)."""
        source = os.environ if source is None else source
        return {name: value for name, value in source.items() if not self.hides(name)}
