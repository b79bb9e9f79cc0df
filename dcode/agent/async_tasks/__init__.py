"""Async subagents: work handed to Agent Protocol (LangGraph) servers the user configured, which
runs there in the background while the conversation goes on (``[[async_agents]]``)."""
