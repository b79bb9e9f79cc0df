"""One-line descriptions of tool calls, for the UI.

A call's line comes from its tool's spec (``ToolSpec.summary``), so a tool describes its own
calls; tools no spec knows get their arguments as ``key=value`` pairs. How a finished call
shows its result is the spec's too (``ToolSpec.show_result``).
"""

from __future__ import annotations

from dcode.agent.tools.spec import MAX_SUMMARY_CHARS, Args, spec_for

__all__ = ["MAX_SUMMARY_CHARS", "summarize_call"]


def summarize_call(name: str, args: Args) -> str:
    return spec_for(name).summary(args)
