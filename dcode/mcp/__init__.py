"""MCP: tools from Model Context Protocol servers, through ``langchain-mcp-adapters``.

``config`` reads the servers (standard library only: the CLI imports it), ``approvals`` records
which project ``.mcp.json`` files the user approved, ``manager`` connects the servers in the
background and hands each turn the tools that are ready. Nothing here imports textual.
"""
