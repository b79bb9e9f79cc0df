"""Confining the processes dcode starts for the model and the user: the shell's commands, the
TUI's ``!cmd``, custom commands' shell lines and, when asked, MCP stdio servers.

``modes`` (the settings) is light and imported by the config; ``confine.Sandbox`` wraps a
command line; ``layout`` says what a command sees; ``bwrap`` (Linux) and ``seatbelt`` (macOS)
spell it for each platform; ``probe`` says whether it can start here.
"""
