"""``dcode.mcp`` is core: never textual; and what the CLI and the TUI read before the engine
(config, approvals, plan, ``dcode mcp``) is standard library only."""

from __future__ import annotations

from tests.test_media_imports import loaded_after


def test_mcp_never_imports_the_ui() -> None:
    modules = loaded_after(
        "import dcode.mcp.manager, dcode.mcp.link, dcode.mcp.tools, dcode.mcp.results, dcode.agent.middleware.mcp_status"
    )
    assert not {m for m in modules if m.split(".")[0] == "textual" or m.startswith("dcode.tui")}


def test_the_light_parts_import_neither_the_sdk_nor_langchain() -> None:
    modules = loaded_after(
        "import dcode.mcp.config, dcode.mcp.approvals, dcode.mcp.plan, dcode.mcp.names, dcode.cli.mcp"
    )
    assert not {
        m
        for m in modules
        if m.split(".")[0]
        in {"mcp", "langchain_mcp_adapters", "langchain", "langchain_core", "textual", "pydantic"}
    }


def test_the_engine_loads_the_sdk_only_with_a_server() -> None:
    modules = loaded_after("import dcode.agent.engine, dcode.cli.headless, dcode.tui.app")
    assert not {m for m in modules if m.split(".")[0] in {"mcp", "langchain_mcp_adapters"}}
