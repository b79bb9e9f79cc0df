"""dcode: a full-screen terminal coding agent with an embedded LangGraph loop."""

__version__ = "0.1.0"
