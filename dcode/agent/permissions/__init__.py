"""Permission rules in Claude Code's format: ``allow``, ``ask`` and ``deny`` lists that refine
every approval mode. Light to import: the shell parser loads only when a shell rule is matched."""
