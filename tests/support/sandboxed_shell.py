"""Run one command through dcode's sandboxed shell, as dcode would, and print what came back.

Started as its own process by the sandbox tests: it stands for dcode, so a command that could
kill "dcode" kills this process and not the test run, and its environment (set by the test, the
"launcher") can hold a canary key that ``/proc/PID/environ`` would show.

Usage: python sandboxed_shell.py WORKSPACE DCODE_HOME COMMAND  ->  one JSON line
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from dcode.agent.backends import LocalBackend
from dcode.agent.backends.environment import ShellEnvironment
from dcode.sandbox.confine import Sandbox
from dcode.sandbox.modes import SandboxMode, SandboxSettings


async def main(workspace: Path, home: Path, command: str) -> None:
    sandbox = Sandbox(SandboxSettings(SandboxMode.WORKSPACE_WRITE), workspace, home)
    backend = LocalBackend(workspace, environment=ShellEnvironment.of(), sandbox=sandbox)
    result = await backend.execute(command.replace("{PID}", str(os.getpid())), timeout=30)
    print(json.dumps({"output": result.output, "exit_code": result.exit_code, "pid": os.getpid()}))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
