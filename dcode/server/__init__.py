"""dcode's graph served by LangGraph's server API (``dcode serve``, ``langgraph.json``).

The same graph, middleware and tools as the embedded engine; what changes is how a run gets
its context. A client sends JSON (``ServedContext``: the approval mode, the model, the
workspace); the server builds the live parts from it (``host.ServedHost``): the approval policy,
an approver that turns each question into a LangGraph ``interrupt()`` (answered with
``Command(resume=...)``), the backend, and an emitter that puts dcode's typed events on the
``custom`` stream as JSON. The server's packages (``langgraph-cli[inmem]``, Elastic License) are
the optional extra ``dcode[server]``; nothing in the core imports this package.
"""
