"""Benchmark: peak memory of read_file on a PDF whose one page inflates to 4 GiB (4 MB on disk),
for a model that takes images but not PDFs (so the page is drawn).

Each case runs in a fresh process that loads the tool set, calls read_file once through the real
tool and reports its own ``ru_maxrss`` and its children's (the renderer process):
- small page: an ordinary one-page PDF (the baseline: what the process costs anyway);
- 4 GiB stream: dcode's peak (target: <= 1.2x the small page) and the renderer's (target:
  within its 1 GiB limit), and how long until the clear error;
- with ``--contrast``, the page drawn by PDFium inside the process, as read_file did before
  (about 5 GiB and half a minute: only with the flag).

Run: .venv/bin/python scripts/bench/pdf_render.py [--contrast]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.hostile_files import GiB, inflating_pdf, one_page_pdf  # noqa: E402

TARGET_RATIO = 1.2
RENDERER_TARGET_MB = 1024

CHILD = """
import asyncio, json, resource, sys, time
from pathlib import Path
from dcode.agent.backends import LocalBackend
from dcode.agent.tools import build_tools
from dcode.agent.tools.read_media import MediaReader
from dcode.agent.tools.spec import READ_FILE
from dcode.media.store import AttachmentStore
from dcode.models.profiles import ModelProfile

path, mode = Path(sys.argv[1]), sys.argv[2]
store = AttachmentStore(Path(sys.argv[3]))
reader = MediaReader(store, ModelProfile(image_inputs=True))
tool = next(t for t in build_tools(LocalBackend(path.parent), binary_reader=reader) if t.name == READ_FILE.name)

async def main():
    if mode == "in-process":
        import pypdfium2 as pdfium
        page = pdfium.PdfDocument(path.read_bytes())[0]
        page.render(scale=1).to_pil()
        return "drawn"
    message = await tool.ainvoke({"type": "tool_call", "id": "b", "name": READ_FILE.name,
                                  "args": {"file_path": path.name}})
    return message.status if message.status == "success" else str(message.content)

start = time.perf_counter()
outcome = asyncio.run(main())
seconds = time.perf_counter() - start
from dcode.agent.tools import pdf_render
pdf_render.POOL.close()  # an idle renderer counts among the children once it has exited
print(json.dumps({
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "child_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    "s": seconds, "outcome": outcome,
}))
"""


def run(path: Path, store: Path, mode: str = "tool") -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), mode, str(store)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dcode-bench-pdf-") as scratch:
        return measure(Path(scratch))


def measure(work: Path) -> int:
    small = one_page_pdf(work / "small.pdf", b"0 0 1 rg 0 0 100 100 re f")
    bomb = inflating_pdf(work / "bomb.pdf", 4 * GiB)
    base = run(small, work / "store")
    hostile = run(bomb, work / "store")
    print(
        f"file: {bomb.name} ({bomb.stat().st_size / 1e6:.1f} MB on disk, one page inflating to 4 GiB)"
    )
    print(
        f"{'small page':26} dcode {base['rss_mb']:7.1f} MB  renderer {base['child_mb']:7.1f} MB  ({base['s']:.2f} s)"
    )
    ratio = float(hostile["rss_mb"]) / float(base["rss_mb"])
    ok = ratio <= TARGET_RATIO and float(hostile["child_mb"]) <= RENDERER_TARGET_MB
    print(
        f"{'4 GiB stream':26} dcode {hostile['rss_mb']:7.1f} MB  {ratio:.2f}x the small page "
        f"(target <= {TARGET_RATIO}x)  renderer {hostile['child_mb']:7.1f} MB "
        f"(target <= {RENDERER_TARGET_MB})  {'ok' if ok else 'OVER'}  ({hostile['s']:.2f} s)"
    )
    print(f"{'':26} result: {hostile['outcome']}")
    if "--contrast" in sys.argv:
        drawn = run(bomb, work / "store", "in-process")
        print(f"{'in-process (contrast)':26} dcode {drawn['rss_mb']:7.1f} MB  ({drawn['s']:.2f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
