"""The graph factory ``langgraph.json`` names: dcode's graph for each run's context.

The server calls it for every run with the run's JSON context (``ServedContext``'s keys), and
without one where it only reads a thread; the graph comes from the host's engine for the run's
model, built once per model.
"""

# Any: LangGraph's compiled graphs are untyped generics here
# No `from __future__ import annotations`: the server tells a factory's parameters by their
# annotation, which must be the class itself.

from typing import Any

from langgraph_sdk.runtime import ServerRuntime

from dcode.server.context import ServedContext
from dcode.server.host import ServedHost


async def make_graph(runtime: ServerRuntime) -> Any:
    host = await ServedHost.open()
    execution = runtime.execution_runtime
    context = execution.context if execution is not None else None
    if context is not None and not isinstance(context, dict):
        context = None
    return await host.graph_for(context, ServedContext, getattr(runtime, "store", None))
