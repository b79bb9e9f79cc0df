"""Keeping native libraries' stderr off the screen while the app runs.

Textual draws on file descriptor 2, and C libraries (libtiff decoding a damaged TIFF, for one)
write warnings straight to the same descriptor, which would tear the screen. While the app
runs, descriptor 2 points at a log file and Textual draws through a duplicate of the terminal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dcode.settings.private_files import open_private_fd


@contextmanager
def native_stderr_to(log_path: Path) -> Iterator[None]:
    stream = sys.__stderr__
    if stream is None or not stream.isatty():
        yield
        return
    saved = os.dup(2)
    terminal = os.fdopen(os.dup(saved), "w", encoding=stream.encoding or "utf-8", errors="replace")
    log = open_private_fd(log_path, os.O_WRONLY | os.O_APPEND)
    stream.flush()
    os.dup2(log, 2)
    os.close(log)
    sys.__stderr__ = terminal  # type: ignore[misc]  # Final in the stubs; replaced on purpose
    try:
        yield
    finally:
        terminal.flush()
        os.dup2(saved, 2)
        os.close(saved)
        sys.__stderr__ = stream  # type: ignore[misc]  # Final in the stubs; put back
        terminal.close()
