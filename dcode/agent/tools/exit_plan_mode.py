"""``exit_plan_mode``: in plan mode, the model puts its plan to the user.

The call is an approval of kind ``plan`` (``ApprovalPolicy``): the tool itself runs only once the
user has approved the plan, after the approval has switched the session to the mode chosen, so
all it does is tell the model which mode it now works in. A plan sent back or rejected never
reaches it. Outside plan mode the model is not offered it (``PlanModeMiddleware``).
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import BaseTool
from langgraph.runtime import get_runtime

from dcode.agent.plan_mode import approved_result, plan_path
from dcode.agent.run_context import RunContext, current_thread_id, require_run_context
from dcode.agent.tools.args import ExitPlanModeArgs
from dcode.agent.tools.factory import ToolOutput, make_tool
from dcode.agent.tools.spec import EXIT_PLAN_MODE

DESCRIPTION = """Present your plan to the user for approval, and leave plan mode. Use it only in \
plan mode, once you have investigated enough to know exactly what to change: the plan (Markdown) \
lists the changes file by file, in order, and how you will check them. The user approves it (you \
then carry it out), asks for changes (revise it and call this again), or rejects it (stop)."""


def make_exit_plan_mode_tool(history_dir: Path) -> BaseTool:
    """``history_dir``: where the session's archive is, beside which the plan was saved."""

    async def run(args: ExitPlanModeArgs) -> ToolOutput:
        mode = require_run_context(get_runtime(RunContext).context).policy.mode
        saved = plan_path(history_dir, current_thread_id("session"))
        return approved_result(mode, saved if saved.is_file() else None)

    return make_tool(EXIT_PLAN_MODE, description=DESCRIPTION, run=run, display=str)
