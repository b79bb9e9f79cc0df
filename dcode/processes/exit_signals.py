"""SIGTERM, SIGINT and SIGHUP end dcode the way quitting does, and end what the shell tool started.

The model's commands run in sessions of their own, so a terminal closing, a Ctrl+C in the shell
that ran ``dcode -p``, or a ``kill`` reaches dcode and never them: without this, a ``sleep 60`` or
a dev server started by the model would outlive dcode. On the first of these signals every
tree dcode registered is ended (each session, and what left it: SIGTERM, then SIGKILL after a
short grace; see ``dcode.processes.trees``) and ``on_signal`` is called, so dcode can finish as
it normally would (the TUI restores the terminal, headless closes the session, MCP servers are
closed, and what is left under dcode is ended at exit); the exit code is then 128 + the
signal's number. A second signal while that is under way ends everything and exits at once.

That finishing is bounded: an exit that has not happened ``EXIT_DEADLINE_S`` after the signal
(``HANGUP_DEADLINE_S`` once the terminal is gone) is forced, as a second signal would. A closed
terminal answers every write with an error; the UI's writer thread dies of it, and the UI then
waits for room in its queue forever: the deadline is what ends such a process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable

from dcode.processes.trees import TREES

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# How long finishing as quitting does may take before the exit is forced.
EXIT_DEADLINE_S = 10.0
# The same once the terminal has hung up: there is nothing left to restore on it.
HANGUP_DEADLINE_S = 5.0


def exit_code(signum: int) -> int:
    """The shell's convention for a process ended by a signal."""
    return 128 + signum


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


class ExitSignals:
    """Handlers on the running loop's signals; ``received`` is the first signal that came."""

    def __init__(
        self, on_signal: Callable[[int], object], *, deadline: float = EXIT_DEADLINE_S
    ) -> None:
        self._on_signal = on_signal
        self._deadline = deadline
        self._loop: asyncio.AbstractEventLoop | None = None
        self._had_terminal = False
        self.received: int | None = None

    def install(self) -> None:
        """Handle the signals on the running loop; only the main thread can, elsewhere a no-op."""
        loop = asyncio.get_running_loop()
        self._had_terminal = _on_terminal()
        try:
            for signum in EXIT_SIGNALS:
                loop.add_signal_handler(signum, self._handle, signum)
        except (ValueError, RuntimeError, NotImplementedError):
            self._remove(loop)
            return
        self._loop = loop

    def uninstall(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._remove(self._loop)
        self._loop = None

    def _handle(self, signum: int) -> None:
        if self.received is not None:
            TREES.end_all()
            os._exit(exit_code(self.received))
        TREES.end_sessions()
        self.received = signum
        gone = self._had_terminal and not _on_terminal()
        _force_exit_after(
            min(HANGUP_DEADLINE_S, self._deadline) if gone else self._deadline, exit_code(signum)
        )
        self._on_signal(signum)

    @staticmethod
    def _remove(loop: asyncio.AbstractEventLoop) -> None:
        for signum in EXIT_SIGNALS:
            loop.remove_signal_handler(signum)


def _on_terminal() -> bool:
    """Whether a standard stream is a terminal that answers (a hung-up one no longer does)."""
    return any(os.isatty(fd) for fd in (0, 1, 2))


def _force_exit_after(seconds: float, code: int) -> None:
    """End everything and exit with ``code`` unless the process has exited within ``seconds``."""

    def force() -> None:
        TREES.end_all()
        os._exit(code)

    timer = threading.Timer(seconds, force)
    timer.daemon = True
    timer.name = "dcode-exit-deadline"
    timer.start()
