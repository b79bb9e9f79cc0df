"""Assembling the agent graph with langchain's ``create_agent``.

The middleware list is outermost first. Each middleware is one file in ``middleware/``; the
run's approver and policy arrive through the LangGraph context (``RunContext``), so the same
compiled graph serves every session of the process. A run without that context is refused
before its first step (``RunContextRequired``). The middleware's before-agent and before-model
work runs in one node each (``middleware.sequence``), and no middleware has an after-model node
(``middleware.todos``): each node is a checkpoint.
"""

# Any: create_agent merges each middleware's own state schema, so LangChain types the middleware list and the compiled graph over Any

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    TodoListMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.types import Checkpointer

from dcode.agent.backends.protocol import Backend
from dcode.agent.budget import Tariff
from dcode.agent.compaction.summary import Compactor
from dcode.agent.history_state import history_state
from dcode.agent.hooks.tool_calls import HooksMiddleware
from dcode.agent.media_policy import MediaPolicy
from dcode.agent.media_route import request_limits, route_for
from dcode.agent.middleware.approval import ApprovalMiddleware
from dcode.agent.middleware.argument_truncation import ArgumentTruncationMiddleware
from dcode.agent.middleware.budget import BudgetMiddleware
from dcode.agent.middleware.file_changes import FileChangesMiddleware
from dcode.agent.middleware.local_context import LocalContextMiddleware
from dcode.agent.middleware.mcp_status import McpStatusMiddleware
from dcode.agent.middleware.media_projection import MediaProjectionMiddleware
from dcode.agent.middleware.memory import MemoryMiddleware
from dcode.agent.middleware.overflow_clip import OverflowClipMiddleware
from dcode.agent.middleware.plan_mode import PlanModeMiddleware
from dcode.agent.middleware.prompt_cache_key import PromptCacheKeyMiddleware
from dcode.agent.middleware.result_eviction import ResultEvictionMiddleware
from dcode.agent.middleware.run_context_required import RunContextRequired
from dcode.agent.middleware.sequence import sequenced
from dcode.agent.middleware.skills import SkillsMiddleware
from dcode.agent.middleware.summarization import SummarizationMiddleware
from dcode.agent.middleware.todos import TodosMiddleware
from dcode.agent.middleware.token_calibration import TokenCalibrationMiddleware
from dcode.agent.middleware.turn_hooks import TurnHooksMiddleware
from dcode.agent.prompt import SYSTEM_PROMPT
from dcode.agent.run_context import RunContext
from dcode.agent.tools import BinaryReader, build_tools, reject_binary
from dcode.agent.tools.compact import make_compact_tool
from dcode.agent.tools.exit_plan_mode import make_exit_plan_mode_tool
from dcode.agent.tools.read_media import MediaReader
from dcode.agent.tools.spec import WRITE_TODOS
from dcode.mcp.manager import McpTurn
from dcode.media.store import AttachmentStore
from dcode.media.variants import VariantService
from dcode.models.profiles import ModelProfile
from dcode.settings.project_files import PromptSource

if TYPE_CHECKING:
    # The async task tools and the Files transport are imported where a graph uses them: a
    # session without [[async_agents]] or uploads does not load them (``dcode -p`` starts lighter).
    from dcode.agent.async_tasks.remote import RemoteAgents
    from dcode.agent.media_files import FileImages
    from dcode.media.uploads.resolver import UploadResolver


def agent_tools(
    backend: Backend,
    compactor: Compactor,
    binary_reader: BinaryReader = reject_binary,
    *,
    task_tool: BaseTool | None = None,
    allowed: Sequence[str] | None = None,
    large_results: Path | None = None,
    presents_plans: bool = False,
) -> list[BaseTool]:
    """The tools the graph offers, besides those its middleware add (``write_todos``);
    ``binary_reader`` is what read_file does with a file that is not text; ``task_tool`` starts
    subagents (None where the agent may not); ``allowed``: the only names kept (None: all);
    ``large_results``: where the web fetch tool saves what is not text (None: under ``$DCODE_HOME``);
    ``presents_plans``: whether it gets ``exit_plan_mode`` (the session's own agent: the user
    answers its plans, not a subagent's)."""
    tools = [
        *build_tools(backend, binary_reader=binary_reader, large_results=large_results),
        make_compact_tool(compactor),
    ]
    if task_tool is not None:
        tools.append(task_tool)
    if presents_plans:
        tools.append(make_exit_plan_mode_tool(compactor.history_dir))
    return [t for t in tools if allowed is None or t.name in allowed]


def static_request(
    backend: Backend,
    compactor: Compactor,
    task_tool: BaseTool | None = None,
    *,
    planning: bool = False,
    system_prompt: str = SYSTEM_PROMPT,
    remote_agents: RemoteAgents | None = None,
) -> tuple[str, list[BaseTool]]:
    """The instructions and the tools every request carries (the base prompt, and the todo
    middleware's prompt and tool), as ``/context`` counts them; ``planning``: in plan mode,
    where the session's agent also has ``exit_plan_mode``; ``system_prompt``: the base prompt
    as the session sends it (with its added directories); ``remote_agents``: where the
    session's agent also has the async task tools."""
    todo = TodoListMiddleware()
    remote = [tool for m in _async_tasks(remote_agents) for tool in m.tools]
    return f"{system_prompt}\n\n{todo.system_prompt}", [
        *agent_tools(backend, compactor, task_tool=task_tool, presents_plans=planning),
        *todo.tools,
        *remote,
    ]


def _async_tasks(remote_agents: RemoteAgents | None) -> list[AgentMiddleware[Any, RunContext]]:
    """The async task tools' middleware, where the agent reaches remote agents (none otherwise)."""
    if remote_agents is None:
        return []
    from dcode.agent.async_tasks.middleware import AsyncTasksMiddleware

    return [AsyncTasksMiddleware(remote_agents)]


def _file_images(uploads: UploadResolver | None, wire: str) -> FileImages | None:
    """Request images as uploaded files, on a route whose transport is ``files`` (None: inline)."""
    if uploads is None:
        return None
    from dcode.agent.media_files import FileImages

    return FileImages(uploads, wire)


def build_graph(
    model: BaseChatModel,
    backend: Backend,
    *,
    checkpointer: Checkpointer,
    profile: ModelProfile,
    store: AttachmentStore,
    variants: VariantService,
    max_turns: int | None = None,
    memory: Sequence[PromptSource] = (),
    skills: Sequence[PromptSource] = (),
    large_results: Path,
    compactor: Compactor,
    prompt_cache_key: bool = False,
    system_prompt: str = SYSTEM_PROMPT,
    task_tool: BaseTool | None = None,
    allowed_tools: Sequence[str] | None = None,
    mcp: McpTurn | None = None,
    uploads: UploadResolver | None = None,
    presents_plans: bool = False,
    remote_agents: RemoteAgents | None = None,
    tariff: Tariff | None = None,
    turn_hooks: bool = False,
) -> Any:
    """``memory``: the AGENTS.md files to read, least specific first (``memory_sources``);
    ``skills``: the directories to look for skills in, lowest priority first (``skill_sources``);
    ``large_results``: where tool results too large for the conversation are written (and what
    the web fetch tool downloads that is not text); ``compactor``:
    what summarizes and archives the older messages (``/offload`` uses it too), whose token
    counter every tier counts with; ``prompt_cache_key``: whether requests carry the session id
    as ``prompt_cache_key`` (only where the endpoint accepts it); ``system_prompt``: the agent's
    instructions (a subagent's own); ``task_tool``: the ``task`` tool, where the agent may start
    subagents; ``allowed_tools``: the only tools the agent gets (None: all); ``mcp``: the MCP
    servers' tools and states for the turns this graph runs (a new set means a new graph);
    ``uploads``: where request images are uploaded, on a route whose transport is ``files``
    (None: they travel inline); ``presents_plans``: whether the agent ends plan mode with a plan
    for the user (``exit_plan_mode``: the session's own agent); ``remote_agents``: the servers
    the async task tools reach (None: the agent has none of those tools); ``tariff``: the
    model's name and prices, which the session's budget is checked and charged with (None: it
    is not); ``turn_hooks``: whether the graph fires the turn's ``UserPromptSubmit`` and
    ``Stop`` hooks itself (a served graph: no runner around its runs does)."""
    counter = compactor.counter
    if counter is None:
        raise ValueError("the compactor has no token counter, and every tier counts with it")
    wire = "responses" if getattr(model, "use_responses_api", False) else "chat"
    projection = MediaProjectionMiddleware(
        store,
        variants,
        route_for(profile),
        policy=MediaPolicy.of(profile, wire=wire),
        limits=request_limits(profile),
        files=_file_images(uploads, wire),
    )
    # Static instructions (the base prompt, the todo tool's) come first in the system message,
    # memory after them: the stable prefix is what provider prompt caches reuse.
    todos = allowed_tools is None or WRITE_TODOS.name in allowed_tools
    middleware: list[AgentMiddleware[Any, RunContext]] = [
        RunContextRequired(),
        *([TurnHooksMiddleware()] if turn_hooks else []),
        # Before the compaction: a session at its cap asks the model for nothing, summaries included.
        *([BudgetMiddleware(tariff)] if tariff is not None else []),
        *([TodosMiddleware()] if todos else []),
        # Before the local context: its before-model hook compacts first, so the local context
        # sees a new cut at the same step and is found again.
        SummarizationMiddleware(compactor),
        LocalContextMiddleware(),
        MemoryMiddleware(memory),
        SkillsMiddleware(skills),
        *([McpStatusMiddleware(mcp.servers)] if mcp and mcp.servers else []),
        *_async_tasks(remote_agents),
        PlanModeMiddleware(compactor.history_dir),
        ArgumentTruncationMiddleware(profile.max_input_tokens, compactor.triggers, counter),
        OverflowClipMiddleware(profile.max_input_tokens, large_results, counter),
        TokenCalibrationMiddleware(counter),
        projection,
        ResultEvictionMiddleware(
            large_results
        ),  # outside the approval: it sees the call's last word
        HooksMiddleware(),  # outside the approval: a rewritten call is the one asked about
        ApprovalMiddleware(),
        FileChangesMiddleware(),  # innermost: only a call about to run is recorded
    ]
    if prompt_cache_key:
        middleware.append(PromptCacheKeyMiddleware())
    if max_turns:
        middleware.append(ModelCallLimitMiddleware(run_limit=max_turns, exit_behavior="error"))
    return create_agent(
        model,
        [
            *agent_tools(
                backend,
                compactor,
                MediaReader(store, profile),
                task_tool=task_tool,
                allowed=allowed_tools,
                large_results=large_results,
                presents_plans=presents_plans,
            ),
            *(
                t
                for t in (mcp.tools if mcp else ())
                if allowed_tools is None or t.name in allowed_tools
            ),
        ],
        system_prompt=system_prompt,
        middleware=sequenced(middleware),  # the before-agent and before-model hooks: a node each
        context_schema=RunContext,
        state_schema=history_state(),  # the messages as a delta: a checkpoint stores what changed
        checkpointer=checkpointer,
        name="dcode",
    )
