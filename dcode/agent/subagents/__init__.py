"""Subagents: the ``task`` tool's jobs, each a full agent loop in a thread of its own."""
