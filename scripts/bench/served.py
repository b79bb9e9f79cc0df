"""Benchmark: a turn on a dcode server (``dcode serve``, ``langgraph dev``) against the same turn
run in this process, and the time to attach to a long thread.

- First token and whole turn, served and embedded, for a one-line answer and a 4-step tool
  loop (write_file, read_file, edit_file, the answer), each the median of several turns on
  one warm engine and one warm server; the overhead is served minus embedded (targets per
  turn: ``langgraph dev`` <= +700 ms, Aegra <= +100 ms).
- On Aegra too, with PostgreSQL and Redis, when its ``aegra`` command is given (``--aegra PATH``
  or ``DCODE_TEST_AEGRA``, as the tests take it; ``.ci/run`` makes one): a PostgreSQL server
  of its own is started (or ``DCODE_TEST_POSTGRES_URL``'s is used), and a Redis.
- With ``--baseline`` (on Aegra): the same turns on a graph of dcode's shape with none of dcode
  in it (``baseline_graph.py``: the same nodes a step, the same model client), served by the
  same Aegra and run in this process with a SQLite checkpointer: what the server costs any
  graph of that shape, beside what it costs dcode's. Each overhead's growth per step (the tool
  loop's minus the one-line answer's, over its three more steps) is printed too.
- Attach: from nothing to the whole transcript of a 200-message thread (its history read from
  the server and replayed as events, then printed as ``dcode attach`` prints it), in this
  process and as the ``dcode attach`` command (target: <= 1 s).

Everything runs on loopback against the scripted model (``tests.support.model_server``).
Needs the extra ``dcode[server]``.

Run: .venv/bin/python scripts/bench/served.py [--runs N] [--aegra PATH] [--only turns|attach]
     [--baseline]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.langgraph_server import ServedDcode, serve_dcode  # noqa: E402
from tests.support.model_server import ScriptedModelServer, Step, reply, tool_call  # noqa: E402

TURN_TARGET_MS = {"langgraph-dev": 700.0, "aegra": 100.0}
ATTACH_TARGET_S = 1.0
THREAD_MESSAGES = 200


def one_liner() -> list[Step]:
    return [reply("Hello from the scripted model.")]


def tool_loop() -> list[Step]:
    name = f"notes-{uuid.uuid4().hex[:6]}.txt"
    return [
        reply(
            tool_calls=[tool_call("write_file", {"file_path": name, "content": "alpha\nbeta\n"})]
        ),
        reply(tool_calls=[tool_call("read_file", {"file_path": name})]),
        reply(
            tool_calls=[
                tool_call(
                    "edit_file", {"file_path": name, "old_string": "beta", "new_string": "gamma"}
                )
            ]
        ),
        reply("Done: the notes now say alpha, gamma."),
    ]


async def timed_turn(runner: Any, prompt: str) -> tuple[float, float]:
    """Seconds to the first piece of the answer, and to the turn's end."""
    from dcode.agent.events import TextDelta, TurnFinished

    started = time.perf_counter()
    first = 0.0
    async for event in runner.run_turn(prompt):
        if isinstance(event, TextDelta) and not first:
            first = time.perf_counter() - started
        if isinstance(event, TurnFinished) and event.is_error:
            raise RuntimeError(f"the turn failed: {event.error}")
    return first, time.perf_counter() - started


async def embedded_runner(model: ScriptedModelServer, root: Path) -> tuple[Any, Any]:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.models.factory import resolve_model
    from dcode.settings.config import ApprovalMode, load_settings

    workspace = root / "embedded"
    workspace.mkdir(parents=True)
    cli = {"model": "openai:test-model", "base_url": model.base_url, "api": "chat"}
    env = {**os.environ, "DCODE_HOME": str(root / "embedded-home"), "OPENAI_API_KEY": "k"}
    settings = load_settings(workspace=workspace, cli=cli, env=env)
    engine = await Engine.open(settings, resolve_model(settings))
    return engine, engine.runner(HeadlessApprover(), mode=ApprovalMode.ALL)


def served_runner(served: ServedDcode) -> Any:
    from dcode.agent.approval import HeadlessApprover
    from dcode.server.client import RemoteServer
    from dcode.server.remote import RemoteRunner
    from dcode.settings.config import ApprovalMode

    server = RemoteServer(served.url, served.token)
    return RemoteRunner(server, str(uuid.uuid4()), HeadlessApprover(), ApprovalMode.ALL)


async def measure(
    model: ScriptedModelServer, runner: Any, steps: Callable[[], list[Step]], runs: int
) -> tuple[float, float]:
    """Median first token and whole turn, in ms, after one warm-up turn."""
    firsts, wholes = [], []
    for index in range(runs + 1):
        model.script(*steps())
        first, whole = await timed_turn(runner, f"turn {index}")
        if index:
            firsts.append(first * 1000)
            wholes.append(whole * 1000)
    return statistics.median(firsts), statistics.median(wholes)


async def baseline_turn(run: Callable[[str], Any], prompt: str) -> float:
    """Seconds to the end of one turn of the baseline graph, ``run`` streaming it."""
    started = time.perf_counter()
    async for _ in run(prompt):
        pass
    return time.perf_counter() - started


async def measure_baseline(
    model: ScriptedModelServer,
    run: Callable[[str], Any],
    steps: Callable[[], list[Step]],
    runs: int,
) -> float:
    """Median whole turn of the baseline graph in ms, after one warm-up turn (one thread, as
    ``measure``'s runner keeps one session)."""
    wholes = []
    for index in range(runs + 1):
        model.script(*steps())
        whole = await baseline_turn(run, f"turn {index}")
        if index:
            wholes.append(whole * 1000)
    return statistics.median(wholes)


async def baseline_overheads(
    served: ServedDcode, model: ScriptedModelServer, root: Path, runs: int
) -> list[float]:
    """Print the baseline graph's overhead, served minus embedded, for each turn; returns them."""
    from baseline_graph import build  # beside this script
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from dcode.server.remote import STREAM_MODES

    client = served.client()
    extra = []
    async with AsyncSqliteSaver.from_conn_string(str(root / "baseline.db")) as saver:
        graph = build(model.base_url, saver)
        for name, steps in (("one-line answer", one_liner), ("4-step tool loop", tool_loop)):
            local_thread = {"configurable": {"thread_id": str(uuid.uuid4())}}
            thread = str(
                (await client.threads.create(metadata={"graph_id": "baseline"}))["thread_id"]
            )

            def embedded(prompt: str, config: dict[str, Any] = local_thread) -> Any:
                return graph.astream(
                    {"messages": [{"role": "user", "content": prompt}]},
                    config,
                    stream_mode=["messages", "updates", "custom"],
                    durability="sync",
                )

            def remote(prompt: str, thread: str = thread) -> Any:
                return client.runs.stream(
                    thread,
                    "baseline",
                    input={"messages": [{"role": "user", "content": prompt}]},
                    stream_mode=STREAM_MODES,
                    stream_resumable=True,
                )

            local = await measure_baseline(model, embedded, steps, runs)
            far = await measure_baseline(model, remote, steps, runs)
            extra.append(far - local)
            print(
                f"{served.kind:13} {name:17} baseline   : embedded {local:7.0f} ms, "
                f"served {far:7.0f} ms, overhead {far - local:+6.0f} ms "
                "(a graph of the same nodes, no dcode)"
            )
    return extra


def per_step(extra: Sequence[float], what: str, kind: str) -> None:
    """The overhead's growth a step: the tool loop's minus the one-line answer's, over the
    loop's three more steps."""
    print(f"{kind:13} {what:29}: {(extra[1] - extra[0]) / 3:+6.0f} ms a step")


async def long_thread(served: ServedDcode) -> str:
    """A thread of ``THREAD_MESSAGES`` messages (prompts and answers), written as state."""
    client = served.client()
    thread = str((await client.threads.create(metadata={"graph_id": "dcode"}))["thread_id"])
    messages: list[dict[str, Any]] = []
    for index in range(THREAD_MESSAGES // 2):
        messages.append({"type": "human", "content": f"question {index}: " + "words " * 20})
        messages.append(
            {"type": "ai", "content": f"answer {index}: " + "more words " * 40, "id": f"a{index}"}
        )
    await client.threads.update_state(thread, {"messages": messages}, as_node="model")
    return thread


async def attach_in_process(served: ServedDcode, thread: str) -> float:
    from dcode.cli.remote import attach
    from dcode.server.client import RemoteServer

    out = io.StringIO()
    started = time.perf_counter()
    await attach(RemoteServer(served.url, served.token), thread, out=out)
    elapsed = time.perf_counter() - started
    if out.getvalue().count("[dcode] answer ") != THREAD_MESSAGES // 2:
        raise RuntimeError("the attached transcript is not whole")
    return elapsed


def attach_command(served: ServedDcode, thread: str, home: Path) -> float:
    dcode = str(Path(sys.executable).with_name("dcode"))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "DCODE_SERVER_TOKEN": served.token,
        "OPENAI_API_KEY": "k",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [dcode, "attach", thread, "--server", served.url],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = time.perf_counter() - started
    if done.stdout.count("[dcode] answer ") != THREAD_MESSAGES // 2:
        raise RuntimeError("the attached transcript is not whole")
    return elapsed


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER"


async def overheads(
    served: ServedDcode, model: ScriptedModelServer, root: Path, runs: int, baseline: bool = False
) -> None:
    """Print the served turns' overhead over the same turns embedded, on ``served``; with
    ``baseline``, the baseline graph's beside them."""
    target = TURN_TARGET_MS[served.kind]
    print(f"{served.kind} ready in {served.started_in:.1f} s, load {os.getloadavg()[0]:.1f}")
    engine, embedded = await embedded_runner(model, root / f"embedded-{served.kind}")
    whole_extra = []
    try:
        for name, steps in (("one-line answer", one_liner), ("4-step tool loop", tool_loop)):
            local = await measure(model, embedded, steps, runs)
            remote = await measure(model, served_runner(served), steps, runs)
            for what, i in (("first token", 0), ("whole turn", 1)):
                extra = remote[i] - local[i]
                print(
                    f"{served.kind:13} {name:17} {what:11}: embedded {local[i]:7.0f} ms, "
                    f"served {remote[i]:7.0f} ms, overhead {extra:+6.0f} ms "
                    f"(target <= +{target:.0f} ms) {verdict(extra, target)}"
                )
            whole_extra.append(remote[1] - local[1])
    finally:
        await engine.close()
    per_step(whole_extra, "dcode's overhead, whole turn", served.kind)
    if baseline:
        per_step(
            await baseline_overheads(served, model, root, runs), "baseline's overhead", served.kind
        )
    print(
        f"{served.kind:13} load at the end: {os.getloadavg()[0]:.1f} (1 min, {os.cpu_count()} cores)"
    )


async def attach_figures(served: ServedDcode, root: Path, runs: int) -> None:
    """The time to a whole transcript of a long thread, in this process and as the command."""
    thread = await long_thread(served)
    tries = max(3, runs)
    inside = statistics.median([await attach_in_process(served, thread) for _ in range(tries)])
    home = root / "client-home"
    command = statistics.median([attach_command(served, thread, home) for _ in range(tries)])
    for what, value in (("in process", inside), ("dcode attach", command)):
        print(
            f"attach, {THREAD_MESSAGES} messages, {what:12}: {value * 1000:6.0f} ms "
            f"(target <= {ATTACH_TARGET_S * 1000:.0f} ms) {verdict(value, ATTACH_TARGET_S)}"
        )


@contextmanager
def postgres() -> Iterator[str]:
    """The URL of a PostgreSQL server for Aegra: the tests' own, or one started here."""
    from tests.support.postgres import URL_VARIABLE, start_cluster

    if os.environ.get(URL_VARIABLE):
        yield os.environ[URL_VARIABLE]
        return
    directory = Path(tempfile.mkdtemp(prefix="dcode-bench-pg-"))  # the server's user reaches it
    try:
        cluster, stop = start_cluster(directory)
        try:
            yield cluster.url
        finally:
            subprocess.run(stop, capture_output=True, timeout=60, check=False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def baseline_config(root: Path) -> Path:
    """Aegra's config for dcode's graphs and the baseline graph (``baseline_graph.py``)."""
    import json

    from dcode.server.options import AEGRA_CONFIG_FILE

    config = json.loads(AEGRA_CONFIG_FILE.read_text())
    server = AEGRA_CONFIG_FILE.parent
    graphs = {name: str(server / path) for name, path in config["graphs"].items()}
    graphs["baseline"] = f"{Path(__file__).with_name('baseline_graph.py')}:graph"
    path = root / "aegra-baseline.json"
    path.write_text(json.dumps({**config, "graphs": graphs}))
    return path


async def on_aegra(
    aegra: Path, model: ScriptedModelServer, root: Path, runs: int, baseline: bool
) -> None:
    from tests.support.aegra_server import serve_on_aegra

    (root / "aegra").mkdir()
    config = {"config": baseline_config(root)} if baseline else {}
    with postgres() as url, serve_on_aegra(root / "aegra", aegra, url, model, **config) as served:
        await overheads(served, model, root, runs, baseline)


async def main_async(runs: int, aegra: Path | None, only: str, baseline: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as model:
        root = Path(tmp)
        (root / "served").mkdir()
        with serve_dcode(root / "served", model) as served:
            if only in ("", "turns"):
                await overheads(served, model, root, runs)
            if only in ("", "attach"):
                await attach_figures(served, root, runs)
        if only == "attach":
            return
        if aegra is None:
            print("aegra: not measured (give --aegra PATH or DCODE_TEST_AEGRA)")
        else:
            await on_aegra(aegra, model, root, runs, baseline)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--aegra",
        type=Path,
        default=os.environ.get("DCODE_TEST_AEGRA") or None,
        help="Aegra's aegra command, to measure the turns on Aegra too",
    )
    parser.add_argument("--only", choices=["turns", "attach"], default="", help="one figure")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="on Aegra, the same turns on a graph of dcode's shape with none of dcode in it",
    )
    args = parser.parse_args()
    asyncio.run(main_async(args.runs, args.aegra, args.only, args.baseline))


if __name__ == "__main__":
    main()
