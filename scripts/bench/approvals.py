"""Benchmark: how many approvals a person answers in a scripted 30-step session that runs
tests and edits, in ``manual`` mode, before and after accepting the rules the questions offer.

Each step is a tool call as a model makes it (shell lines with arguments that vary, edits
in ``src/`` and ``tests/``), judged by the real approval policy with the real rules. Three runs:
- before: no rules; the person answers ``y`` to every question;
- learning: the person answers ``p`` (always allow, this project) whenever a rule is offered,
  and ``y`` otherwise; the rules are saved under a scratch ``$DCODE_HOME``;
- after: the same session again, with the saved rules.

Target: <= 3 approvals after.

Run: .venv/bin/python scripts/bench/approvals.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dcode.agent.approval import ApprovalPolicy  # noqa: E402
from dcode.agent.backends import LocalBackend  # noqa: E402
from dcode.agent.permissions.load import keep_rule  # noqa: E402
from dcode.agent.permissions.match import PermissionRules  # noqa: E402
from dcode.agent.permissions.suggest import suggest_rule  # noqa: E402
from dcode.agent.tools.spec import EDIT_FILE, EXECUTE, WRITE_FILE  # noqa: E402
from dcode.settings.config import ApprovalMode  # noqa: E402

TARGET = 3


def shell(command: str) -> tuple[str, dict[str, Any]]:
    return EXECUTE.name, {"command": command}


def edit(path: str) -> tuple[str, dict[str, Any]]:
    return EDIT_FILE.name, {"file_path": path, "old_string": "a", "new_string": "b"}


def write(path: str) -> tuple[str, dict[str, Any]]:
    return WRITE_FILE.name, {"file_path": path, "content": "x\n"}


STEPS: list[tuple[str, dict[str, Any]]] = [
    shell("git status"),
    shell("npm test"),
    edit("src/app.ts"),
    shell("npm test -- --watch=false"),
    shell("git diff"),
    edit("src/util.ts"),
    shell("npm test -- -t parse"),
    write("tests/parse.test.ts"),
    shell("npm test -- tests/parse.test.ts"),
    shell("git diff --stat"),
    edit("src/app.ts"),
    shell("npm run lint"),
    shell("npm test"),
    edit("tests/parse.test.ts"),
    shell("FORCE_COLOR=0 npm test"),
    shell("git status --short"),
    edit("src/parse.ts"),
    shell("npm test -- -t 'parses dates'"),
    shell("npm run lint -- --fix"),
    edit("src/parse.ts"),
    shell("npm test 2>&1"),
    shell("git diff src/parse.ts"),
    write("src/dates.ts"),
    shell("npm test && git diff --stat"),
    edit("tests/dates.test.ts"),
    shell("npm test -- tests/dates.test.ts"),
    shell("git status"),
    edit("src/app.ts"),
    shell("npm test > test-output.txt"),
    shell("git diff"),
]


def run(steps: list[tuple[str, dict[str, Any]]], policy: ApprovalPolicy, *, accept: bool) -> int:
    """The questions answered; with ``accept``, each offered rule is kept."""
    asked = 0
    for name, args in steps:
        verdict = policy.check(name, args)
        if verdict is None:
            continue
        asked += 1
        rule = suggest_rule(name, args, policy.backend.is_inside_workspace)
        if accept and rule and policy.rules is not None:
            keep_rule(policy.rules, rule, everywhere=False)
    return asked


def main() -> None:
    assert len(STEPS) == 30
    with tempfile.TemporaryDirectory() as scratch:
        workspace, home = Path(scratch, "project"), Path(scratch, "home")
        workspace.mkdir()
        home.mkdir()
        rules = PermissionRules((), workspace, Path(scratch), home)
        policy = ApprovalPolicy(ApprovalMode.MANUAL, LocalBackend(workspace), rules=rules)
        before = run(STEPS, policy, accept=False)
        learning = run(STEPS, policy, accept=True)
        after = run(STEPS, policy, accept=False)
        kept = [rule.text for rule in rules.rules]
    print(f"steps: {len(STEPS)} (shell lines and edits, manual mode)")
    print(f"approvals before any rule:        {before}")
    print(f"approvals while accepting rules:  {learning}   rules kept: {', '.join(kept)}")
    print(
        f"approvals after:                  {after}   (target <= {TARGET}) {'ok' if after <= TARGET else 'OVER'}"
    )


if __name__ == "__main__":
    main()
