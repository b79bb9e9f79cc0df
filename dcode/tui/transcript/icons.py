"""The marks a call's line starts with: a spinner while it runs, then its status."""

from __future__ import annotations

from dcode.agent.events import ToolStatus

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

STATUS_ICONS: dict[ToolStatus, tuple[str, str]] = {
    ToolStatus.OK: ("✓", "$text-success"),
    ToolStatus.ERROR: ("✗", "$text-error"),
    ToolStatus.DENIED: ("⊘", "$text-warning"),
    ToolStatus.CANCELLED: ("◌", "$text-muted"),
}
