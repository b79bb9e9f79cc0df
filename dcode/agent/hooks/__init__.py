"""Hooks in Claude Code's format: commands the user sets to run around tool calls, prompts and
turns (``dcode.settings.hook_sources`` reads them; ``runner`` runs them; ``outcome`` says
what their answers mean)."""
