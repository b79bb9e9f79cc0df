"""The model's tools: their specs (``spec``), and the tools built from them (``toolset``).

The tools need LangChain; the specs, call summaries and diffs must not (the UI uses them while
the engine is still loading). So this package imports nothing up front, and ``build_tools``
(``from dcode.agent.tools import build_tools``) loads the tool set on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dcode.agent.tools.toolset import BinaryReader, build_tools, reject_binary

__all__ = ["BinaryReader", "build_tools", "reject_binary"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from dcode.agent.tools import toolset

        return getattr(toolset, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
