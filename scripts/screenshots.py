"""Regenerate the SVG screenshots in ``assets/screenshots/`` from the real TUI.

Each screenshot drives the real ``DcodeApp`` (engine, SQLite sessions, tools) through Textual's
pilot against the scripted OpenAI-compatible server in ``tests/support/model_server.py``, so it
needs no network and no API key, and shows what dcode draws for that session::

    python scripts/screenshots.py                   # every screenshot, into assets/screenshots/
    python scripts/screenshots.py --only context    # one of them
    python scripts/screenshots.py --out /tmp/shots

The screenshots:

- ``transcript``: a prompt, a streamed Markdown answer with a code block, an ``edit_file`` call
  approved with ``y`` and its diff, the closing answer and the status bar.
- ``image-prompt``: the prompt holding an ``[image 1]`` placeholder (a picture dropped as a
  pasted path) and the question, before it is sent.
- ``context``: the ``/context`` screen after that question was answered.

What keeps two runs byte-identical:

- The session runs in a fixed directory, ``$TMPDIR/dcode-screenshots`` (wiped at each run, and
  held under a lock so that two runs take turns): ``$HOME`` points there, the workspace is
  ``~/demo`` in it and ``$DCODE_HOME`` is ``~/dcode-home``. The workspace path is part of the
  prompt the model is sent, so a random temporary directory would change the token estimates
  on the ``/context`` screen; and no skill, subagent or ``AGENTS.md`` of the real user is read.
  The workspace is no git repository; the status bar's branch is given as ``main``.
- The model is ``openai:demo-model`` with a profile set here (window, image input, example
  prices). The scripted server reports the input tokens of each request as OpenAI's rule
  counts them (``input_scale = 1.0``) and the output as its length over four: the requests
  are the same every run, so the status bar's context figure and cost are too.
- The app runs with its animations off, and the prompt's cursor does not blink.
- Textual's SVG export names its CSS classes ``terminal-<checksum of the content>``: the same
  screen gives the same names, so nothing is rewritten after the export.

On another machine the ``/context`` estimates may still differ slightly where ``$TMPDIR`` is
not ``/tmp`` (the workspace path is longer or shorter).
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from textual import events  # noqa: E402

from dcode.settings.config import ApprovalMode, Settings, WireApi  # noqa: E402
from dcode.tui.app import DcodeApp  # noqa: E402
from tests.support.model_server import ScriptedModelServer, Step, reply, tool_call  # noqa: E402

DEFAULT_OUT = ROOT / "assets" / "screenshots"
SANDBOX = Path(tempfile.gettempdir()) / "dcode-screenshots"
IMAGE = ROOT.parent / "shared" / "corpus" / "images" / "pillow" / "hopper.png"
MODEL = "openai:demo-model"
PROFILE = {
    "max_input_tokens": 128_000,
    "image_inputs": True,
    "image_token_formula": "openai-tile",
    "input_price": 1.25,
    "output_price": 10.0,
}
KEY_CHARACTERS = {"enter": "\r", "escape": "\x1b"}
ENVIRONMENT = (
    "HOME",
    "DCODE_HOME",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "DCODE_MODEL",
    "DCODE_BASE_URL",
    "DCODE_API",
)


@dataclass
class Demo:
    """One running app and what it runs against."""

    app: DcodeApp
    pilot: Any
    workspace: Path
    out: Path

    async def until(self, condition: Callable[[], Any], what: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                shown = self.app.save_screenshot(filename="timed-out.svg", path=str(self.out))
                raise RuntimeError(
                    f"timed out waiting for {what}; the screen at that moment: {shown}"
                )
            await self.pilot.pause(0.02)

    async def type(self, text: str) -> None:
        self.app.prompt_input.insert_text(text)
        await self.pilot.pause()

    async def press(self, *keys: str) -> None:
        """Keys posted straight to the app: the pilot's own ``press`` waits for an idle
        screen, which a streaming answer can hold off for seconds."""
        for key in keys:
            self.app.post_message(
                events.Key(key, KEY_CHARACTERS.get(key, key if len(key) == 1 else None))
            )
            await self.pilot.pause(0.01)
        await self.pilot.pause(0.02)

    async def send(self, text: str) -> None:
        await self.type(text)
        await self.press("enter")

    async def idle(self) -> None:
        app = self.app
        await self.until(
            lambda: not app.busy and not app.session.queue and not app.workers_in("turn"),
            "the turn to end",
        )
        await self.pilot.pause()

    async def approval(self) -> None:
        from dcode.tui.approval_widget import ApprovalWidget

        await self.until(
            lambda: self.app.transcript.pending_approvals and self.app.query(ApprovalWidget),
            "an approval",
        )
        await self.pilot.pause()

    async def save(self, name: str) -> Path:
        """The screen as ``NAME.svg``, once the screen has settled."""
        self.app.prompt_input.area.cursor_blink = (
            False  # a blinking cursor is on or off by the clock
        )
        await self.pilot.pause(0.1)
        await self.pilot.wait_for_scheduled_animations()
        await self.pilot.pause()
        return Path(self.app.save_screenshot(filename=f"{name}.svg", path=str(self.out)))


# -- the sessions -------------------------------------------------------------------------------


async def transcript(demo: Demo) -> list[Path]:
    await demo.send("make greet.py use an f-string")
    await demo.approval()
    await demo.press("y")
    await demo.idle()
    return [await demo.save("transcript")]


TRANSCRIPT_ANSWER = """\
`greet` joins its string with `+`. An f-string reads better, and a type hint says what it takes:

```python
def greet(name: str) -> None:
    print(f"Hello, {name}!")
```

I'll make that change."""

TRANSCRIPT_FILES = {"greet.py": 'def greet(name):\n    print("Hello " + name)\n'}

TRANSCRIPT_STEPS = (
    reply(
        TRANSCRIPT_ANSWER,
        tool_calls=[
            tool_call(
                "edit_file",
                {
                    "file_path": "greet.py",
                    "old_string": 'def greet(name):\n    print("Hello " + name)',
                    "new_string": 'def greet(name: str) -> None:\n    print(f"Hello, {name}!")',
                },
            )
        ],
        chunk_size=6,
    ),
    reply(
        "Done. `greet.py` now:\n\n- builds the greeting with an f-string\n- says with a type hint that `name` is a `str`",
        chunk_size=6,
    ),
)

IMAGE_QUESTION = "who is in this photo, and roughly when was it taken?"
IMAGE_ANSWER = (
    "A formal portrait of **Grace Hopper** in a dark naval uniform; the style suggests the 1980s."
)


async def image_session(demo: Demo, wanted: set[str]) -> list[Path]:
    """``image-prompt`` before the question is sent, ``context`` after it is answered."""
    written = []
    picture = demo.workspace / IMAGE.name
    demo.app.prompt_input.area.post_message(events.Paste(f"'{picture}'"))
    await demo.until(lambda: "[image 1]" in demo.app.prompt_input.text, "the [image 1] placeholder")
    await demo.type(IMAGE_QUESTION)
    if "image-prompt" in wanted:
        written.append(await demo.save("image-prompt"))
    if "context" not in wanted:
        return written
    await demo.press("enter")
    await demo.idle()
    await demo.pilot.resize_terminal(*CONTEXT_SIZE)
    await demo.send("/context")
    from dcode.tui.screens.context import ContextScreen

    await demo.until(lambda: isinstance(demo.app.screen, ContextScreen), "the /context screen")
    written.append(await demo.save("context"))
    return written


IMAGE_STEPS = (reply(IMAGE_ANSWER, chunk_size=6),)

SIZE = (110, 32)
PROMPT_SIZE = (110, 9)
CONTEXT_SIZE = (110, 30)


@dataclass(frozen=True)
class Session:
    shots: tuple[str, ...]
    size: tuple[int, int]
    steps: tuple[Step, ...]
    files: dict[str, str]
    image: bool
    run: Callable[[Demo, set[str]], Awaitable[list[Path]]]


SESSIONS = (
    Session(
        ("transcript",),
        SIZE,
        TRANSCRIPT_STEPS,
        TRANSCRIPT_FILES,
        False,
        lambda demo, _wanted: transcript(demo),
    ),
    Session(("image-prompt", "context"), PROMPT_SIZE, IMAGE_STEPS, {}, True, image_session),
)
NAMES = tuple(name for session in SESSIONS for name in session.shots)


# -- running them -------------------------------------------------------------------------------


@contextmanager
def sandbox() -> Iterator[Path]:
    """The fixed directory the sessions run in, emptied, with ``$HOME`` and ``$DCODE_HOME`` in
    it and no provider settings from the environment; everything restored afterwards."""
    lock_path = SANDBOX.with_name(SANDBOX.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        saved = {name: os.environ.get(name) for name in ENVIRONMENT}
        try:
            shutil.rmtree(SANDBOX, ignore_errors=True)
            SANDBOX.mkdir(parents=True)
            os.environ["HOME"] = str(SANDBOX)
            os.environ["DCODE_HOME"] = str(SANDBOX / "dcode-home")
            os.environ["OPENAI_API_KEY"] = "not-used"  # the scripted server takes any key
            for name in ("OPENAI_BASE_URL", "DCODE_MODEL", "DCODE_BASE_URL", "DCODE_API"):
                os.environ.pop(name, None)
            yield SANDBOX
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            shutil.rmtree(SANDBOX, ignore_errors=True)


async def run_session(session: Session, wanted: set[str], out: Path) -> list[Path]:
    with sandbox() as root:
        home, workspace = root / "dcode-home", root / "demo"
        workspace.mkdir()
        for name, text in session.files.items():
            (workspace / name).write_text(text)
        if session.image:
            if not IMAGE.is_file():
                raise FileNotFoundError(
                    f"the image {IMAGE} is missing (the shared corpus beside the project)"
                )
            shutil.copyfile(IMAGE, workspace / IMAGE.name)
        with ScriptedModelServer(*session.steps) as server:
            server.input_scale = (
                1.0  # usage as OpenAI counts the request: the same request, the same figure
            )
            settings = Settings(
                home=home,
                workspace=workspace,
                model=MODEL,
                base_url=server.base_url,
                api=WireApi.CHAT,
                approve=ApprovalMode.MANUAL,
                max_retries=0,
                model_overrides={MODEL: dict(PROFILE)},
            )
            app = DcodeApp(settings, animate=False, cwd_label="~/demo", branch="main")
            async with app.run_test(size=session.size) as pilot:
                demo = Demo(app, pilot, workspace, out)
                await demo.until(lambda: app.ready, "the engine", timeout=60)
                written = await session.run(demo, wanted)
                if app.runner is not None and app.runner.busy:
                    app.runner.cancel()
                    await asyncio.sleep(0.05)
            return written


def generate(names: list[str] | None = None, out: Path = DEFAULT_OUT) -> list[Path]:
    """Write the named screenshots (all by default) into ``out``; returns their paths."""
    wanted = set(names or NAMES)
    unknown = wanted - set(NAMES)
    if unknown:
        raise ValueError(
            f"no screenshot named {', '.join(sorted(unknown))}; there are {', '.join(NAMES)}"
        )
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for session in SESSIONS:
        if wanted & set(session.shots):
            written += asyncio.run(run_session(session, wanted, out))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the SVG screenshots of the dcode TUI.")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="directory for the SVG files (default: assets/screenshots)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=NAMES,
        metavar="NAME",
        help=f"only this screenshot (one of: {', '.join(NAMES)}); may be repeated",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    for path in generate(args.only, args.out):
        print(path)
    print(f"{time.monotonic() - started:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
