"""Benchmark: what a long session with screenshots sends, inline against the Files transport.

One session of 50 turns in the engine (this process) against the scripted model server (on
loopback, with its Files API): turns 1, 3, 5 … 39 each paste a new screenshot (20 in all), the
others are text. The route is the seed's DeepSeek vision route (640,000 pixels and 1 MiB per
request image, a 48 MiB inline budget); the session runs once with ``image_transport =
"inline"`` and once with ``"files"``. The screenshots are synthetic 1280x800 editor windows over a noisy background, which
compresses badly: each request variant is about 400 KB.

Printed per turn: the request bytes that turn sent (every model call's body as it reached the
server) for each transport, then the totals, the uploads, and the images each left out of a
request for size ("omitted from this request" placeholders in the last request).
Targets: >= 20x fewer bytes in total on files, its uploads counted, and no image offloaded on
files.

Run: .venv/bin/python scripts/bench/files.py [--turns 50] [--shots 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from PIL import Image, ImageDraw  # noqa: E402

from dcode.agent.approval import HeadlessApprover  # noqa: E402
from dcode.agent.engine import Engine  # noqa: E402
from dcode.media.attachment import to_reference_block  # noqa: E402
from dcode.media.store import AttachmentStore, Source  # noqa: E402
from dcode.settings.config import ApprovalMode, Settings, WireApi  # noqa: E402
from tests.support.model_server import ScriptedModelServer, reply  # noqa: E402

TARGET_RATIO = 20.0
ROUTE = {
    "image_inputs": True,
    "image_max_pixels": 640_000,
    "image_max_bytes": 1024 * 1024,
    "request_image_bytes": 48 * 1024 * 1024,
    "max_input_tokens": 1_000_000,  # the bench measures bytes, not compaction
}


def screenshot(path: Path, seed: int) -> Path:
    """An editor-like window: a noisy background (photos, gradients) and lines of 'code'."""
    rng = random.Random(seed)
    width, height = 1280, 800
    image = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width, 28), fill=(40, 40, 48))
    for row in range(40, height - 20, 18):
        draw.text(
            (20 + rng.randrange(0, 200), row),
            f"def step_{seed}_{row}(value): return value * {rng.randrange(99)}",
            fill=(230, 230, 230),
        )
    image.save(path, "PNG")
    return path


async def session(
    server: ScriptedModelServer, work: Path, transport: str, turns: int, shots: int
) -> tuple[list[int], int]:
    settings = Settings(
        home=work / f"home-{transport}",
        workspace=work,
        model="openai:bench-model",
        base_url=server.base_url,
        api=WireApi.CHAT,
        approve=ApprovalMode.EDITS,
        model_overrides={"openai:bench-model": {**ROUTE, "image_transport": transport}},
    )
    store = AttachmentStore(settings.attachments_dir)
    pasted = {2 * n: screenshot(work / f"shot-{n}.png", n) for n in range(shots)}
    per_turn: list[int] = []
    server.script(*(reply(f"answer {n}", usage=(1000, 10)) for n in range(turns)))
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        for turn in range(turns):
            content: list[dict] = [{"type": "text", "text": f"turn {turn}: what do you see?"}]
            if turn in pasted:
                attachment = store.admit([Source.from_path(pasted[turn], pasted[turn].name)])[0]
                content.append(to_reference_block(attachment))
            before = len(server.requests)
            events = [e async for e in runner.run_turn(content, prompt_text=content[0]["text"])]
            if events[-1].is_error:
                raise SystemExit(f"{transport}: turn {turn} failed: {events[-1].result}")
            per_turn.append(sum(len(r.raw_body) for r in server.requests[before:]))
    offloaded = json.dumps(server.requests[-1].body).count("omitted from this request")
    return per_turn, offloaded


async def run(turns: int, shots: int) -> int:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:
        work = Path(tmp)
        (work / ".git").mkdir()
        inline, inline_dropped = await session(server, work, "inline", turns, shots)
        before = len(server.files.uploads)
        files, files_dropped = await session(server, work, "files", turns, shots)
        uploads = len(server.files.uploads) - before
        uploaded = sum(u.bytes for u in server.files.uploads[before:])
    print(f"{'turn':>4}  {'inline bytes':>14}  {'files bytes':>12}")
    for n, (a, b) in enumerate(zip(inline, files, strict=True), 1):
        print(f"{n:>4}  {a:>14,}  {b:>12,}")
    total_inline, total_files = sum(inline), sum(files)
    ratio = total_inline / max(total_files + uploaded, 1)
    print(
        f"total {total_inline:>14,}  {total_files:>12,}   (files also uploaded {uploads} images once: {uploaded:,} bytes)"
    )
    ratio_ok, dropped_ok = ratio >= TARGET_RATIO, files_dropped == 0
    print(
        f"request bytes   {total_inline / max(total_files, 1):.1f}x fewer on files; {ratio:.1f}x with its uploads (target >= {TARGET_RATIO:.0f}x) {'PASS' if ratio_ok else 'MISS'}"
    )
    print(
        f"offloaded       inline {inline_dropped}, files {files_dropped} images (target: none on files) {'PASS' if dropped_ok else 'MISS'}"
    )
    return 0 if ratio_ok and dropped_ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--shots", type=int, default=20)
    args = parser.parse_args()
    return asyncio.run(run(args.turns, args.shots))


if __name__ == "__main__":
    sys.exit(main())
