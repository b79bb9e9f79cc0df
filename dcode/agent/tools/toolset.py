"""The file, web and shell tools the agent offers; the file and shell tools act through one
``Backend``."""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import BaseTool

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.edit_file import make_edit_file_tool
from dcode.agent.tools.execute import make_execute_tool
from dcode.agent.tools.glob import make_glob_tool
from dcode.agent.tools.grep import make_grep_tool
from dcode.agent.tools.ls import make_ls_tool
from dcode.agent.tools.read_file import BinaryReader, make_read_file_tool, reject_binary
from dcode.agent.tools.web_fetch import make_web_fetch_tool
from dcode.agent.tools.write_file import make_write_file_tool


def build_tools(
    backend: Backend,
    *,
    binary_reader: BinaryReader = reject_binary,
    large_results: Path | None = None,
) -> list[BaseTool]:
    """The tool set in a stable order (the order the model sees them in). ``large_results``:
    where web_fetch saves what is not text, a folder per session (None:
    ``$DCODE_HOME/large_tool_results``)."""
    return [
        make_ls_tool(backend),
        make_read_file_tool(backend, binary_reader=binary_reader),
        make_write_file_tool(backend),
        make_edit_file_tool(backend),
        make_glob_tool(backend),
        make_grep_tool(backend),
        make_web_fetch_tool(large_results),
        make_execute_tool(backend),
    ]


__all__ = ["BinaryReader", "build_tools", "reject_binary"]
