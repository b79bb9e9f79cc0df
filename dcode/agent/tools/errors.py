"""How a tool failure reaches the model: one line naming the tool, the path and what to do.

Tools raise ``ToolException``; built with ``handle_tool_error=True`` they turn it into a
``ToolMessage`` with ``status="error"`` themselves, so the model sees the failure as a result it
can react to, whether or not the surrounding ``ToolNode`` handles errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from langchain_core.tools import ToolException

from dcode.agent.backends.protocol import InvalidPattern
from dcode.regular_files import NotRegularFile


def fail(message: str) -> NoReturn:
    raise ToolException(message)


def explain(tool: str, exc: Exception, display: Callable[[str], str]) -> str:
    """The model-facing message for an exception a tool did not handle itself."""
    match exc:
        case OSError():
            return f"{tool}: {_os_error(exc, display)}"
        case UnicodeDecodeError():
            return f"{tool}: the file is not UTF-8 text"
        case InvalidPattern():
            return f"{tool}: {exc}"
        case _:
            return f"{tool}: unexpected {type(exc).__name__}: {exc}"


def _os_error(exc: OSError, display: Callable[[str], str]) -> str:
    where = display(str(exc.filename)) if exc.filename else "the path"
    match exc:
        case FileNotFoundError():
            return f"{where} does not exist"
        case IsADirectoryError():
            return f"{where} is a directory"
        case NotRegularFile(what=what):
            return f"{where} is {what}, not a regular file; only regular files are read or written"
        case NotADirectoryError():
            return f"{where} is not a directory"
        case PermissionError():
            return f"permission denied: {where}"
        case _:
            return f"{where}: {exc.strerror or exc}"
