"""The front ends but the TUI: the typer app (``dcode.cli.app.app``), headless ``-p`` runs, the
subcommands (sessions, mcp, agents, files, media, trust, rewind) and ``doctor``."""
