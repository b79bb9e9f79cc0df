"""The full-screen app (Textual). Everything here consumes the core's event stream; nothing in
``dcode.agent``, ``dcode.context``, ``dcode.media`` or ``dcode.models`` imports it."""

from dcode.tui.frame_rate import raise_frame_cap

raise_frame_cap()
