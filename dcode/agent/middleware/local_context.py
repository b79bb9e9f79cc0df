"""Local context: what the model should know about the machine and the project before it starts.

Hooks: ``start_turn`` runs a detection script through the run's backend (so a remote or
sandboxed backend reports its own machine) once per thread, and keeps its Markdown in private
state; ``awrap_model_call`` appends it to the system message. Kept, not re-run, so the prompt
stays byte-stable turn after turn and provider prompt caches keep hitting. The one exception is
a summarization event (tier 2, ``/offload`` or ``compact_conversation``): the prompt's cached
prefix is lost there anyway, so ``start_step`` detects again at the first model call after
the compaction's cut moves, and the branch and changed files are current from then on. (The
summarization middleware comes before this one, so a compaction made at a step is seen at it.)

The script is POSIX sh. Its sections are independent and run in parallel, each into its own
file, and are printed in a fixed order: the directory and git state, the languages and package
managers the project's files point to, the runtimes on PATH, the likely test command, the top
of the listing, a shallow tree and the head of the Makefile. Every section is capped. A script
that fails or times out leaves no local context (and is not retried in that thread).

It runs before any approval, so nothing in the workspace may run through it: git is called
through ``safe_git`` (the repository's fsmonitor, filters, hooks, pager and diff drivers made
inert), and the other sections only list files and read a few. Changes inside a submodule's
work tree are not counted: looking there would run the submodule's own configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, NotRequired

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langgraph.runtime import Runtime

from dcode.agent.backends.safe_git import shell_function
from dcode.agent.compaction.record import read_compaction
from dcode.agent.fences import Fence, fenced
from dcode.agent.middleware.system_sections import PromptSection
from dcode.agent.run_context import RunContext, require_run_context

TIMEOUT_S = 10.0
MAX_CHARS = 6_000

DETECT = (
    shell_function("safe_git")
    + r"""
# Only absolute PATH entries: a relative one (".", "node_modules/.bin") would find the
# workspace's own programs under the names probed below.
_path=; _ifs=$IFS; IFS=:; set -f
for _dir in $PATH; do case $_dir in /*) _path="${_path:+$_path:}$_dir" ;; esac; done
IFS=$_ifs; set +f; PATH=$_path; export PATH
out=$(mktemp -d 2>/dev/null || echo "/tmp/dcode-context-$$") && mkdir -p "$out" || exit 1
trap 'rm -rf "$out"' EXIT
has() { command -v "$1" >/dev/null 2>&1; }
# Names the workspace chooses, one line each, unable to end the code block or span they are
# listed in (as fences.escape_name writes them): control characters as '?', as ls -q shows
# them, and a backslash before each backquote.
unctrl() { tr '\001-\037\177' '[?*]'; }
unticks() { sed 's/`/\\`/g'; }
name() { printf '%s' "$1" | unctrl | unticks; }

{
  printf -- '- Working directory: `%s`\n' "$(name "$(pwd)")"
  if ! has git; then
    echo "- Git: not a repository"
  elif root=$(safe_git rev-parse --show-toplevel 2>/dev/null) \
      && state=$(safe_git status --porcelain=v2 --branch --no-ahead-behind --ignore-submodules=dirty 2>/dev/null); then
    branch=$(printf '%s\n' "$state" | sed -n 's/^# branch\.head //p')
    if [ "$branch" = "(detached)" ]; then
      branch="detached at $(printf '%s\n' "$state" | sed -n 's/^# branch\.oid //p' | cut -c1-7)"
    fi
    dirty=$(printf '%s\n' "$state" | grep -c '^[^#]')
    printf -- '- Git: branch `%s`, %s uncommitted change(s), repository root `%s`\n' "$(name "$branch")" "$dirty" "$(name "$root")"
  elif [ $? -eq 125 ]; then
    echo "- Git: not inspected (the repository's config names a filter or diff driver that cannot be switched off)"
  else
    echo "- Git: not a repository"
  fi
} >"$out/1" &

{
  langs=""; managers=""
  add_lang() { case ", $langs, " in *", $1, "*) ;; *) langs="${langs:+$langs, }$1" ;; esac; }
  add_manager() { managers="${managers:+$managers, }$1"; }
  if [ -f pyproject.toml ] || [ -f setup.py ] || [ -f requirements.txt ]; then add_lang Python; fi
  [ -f uv.lock ] && add_manager uv
  [ -f poetry.lock ] && add_manager poetry
  [ -f Pipfile ] && add_manager pipenv
  [ -f requirements.txt ] && [ ! -f uv.lock ] && [ ! -f poetry.lock ] && add_manager pip
  if [ -f package.json ]; then
    add_lang JavaScript; [ -f tsconfig.json ] && add_lang TypeScript
    if [ -f pnpm-lock.yaml ]; then add_manager pnpm; elif [ -f yarn.lock ]; then add_manager yarn
    elif [ -f bun.lockb ] || [ -f bun.lock ]; then add_manager bun; else add_manager npm; fi
  fi
  [ -f Cargo.toml ] && { add_lang Rust; add_manager cargo; }
  [ -f go.mod ] && { add_lang Go; add_manager "go modules"; }
  [ -f Gemfile ] && { add_lang Ruby; add_manager bundler; }
  [ -f pom.xml ] && { add_lang Java; add_manager maven; }
  if [ -f build.gradle ] || [ -f build.gradle.kts ]; then add_lang "Java/Kotlin"; add_manager gradle; fi
  [ -f CMakeLists.txt ] && { add_lang "C/C++"; add_manager cmake; }
  [ -f composer.json ] && { add_lang PHP; add_manager composer; }
  [ -n "$langs" ] && echo "- Languages: $langs"
  [ -n "$managers" ] && echo "- Package managers: $managers"
} >"$out/2" &

{
  runtimes=""
  probe() {  # probe LABEL COMMAND...: the first line of a runtime's version, when it is on PATH
    label=$1; shift
    has "$1" || return 0
    version=$("$@" 2>&1 | head -n 1 | cut -c1-60)
    runtimes="${runtimes:+$runtimes; }$label$version"
  }
  # Only the runtimes the project's files point to: each probe costs a process.
  if [ -f pyproject.toml ] || [ -f setup.py ] || [ -f requirements.txt ]; then probe "" python3 --version; fi
  [ -f package.json ] && probe "Node " node --version
  [ -f go.mod ] && probe "" go version
  [ -f Cargo.toml ] && probe "" rustc --version
  [ -f Gemfile ] && probe "" ruby --version
  if [ -f pom.xml ] || [ -f build.gradle ] || [ -f build.gradle.kts ]; then probe "" java -version; fi
  [ -n "$runtimes" ] && echo "- Runtimes: $runtimes"
} >"$out/3" &

{
  test_command=""
  if [ -f Makefile ] && grep -qE '^test:' Makefile; then test_command="make test"
  elif [ -f package.json ] && grep -q '"test"[[:space:]]*:' package.json; then
    if [ -f pnpm-lock.yaml ]; then test_command="pnpm test"; elif [ -f yarn.lock ]; then test_command="yarn test"; else test_command="npm test"; fi
  elif [ -f Cargo.toml ]; then test_command="cargo test"
  elif [ -f go.mod ]; then test_command="go test ./..."
  elif [ -f pyproject.toml ] || [ -d tests ] || [ -f pytest.ini ] || [ -f tox.ini ]; then
    if [ -f uv.lock ]; then test_command="uv run pytest"; elif [ -f poetry.lock ]; then test_command="poetry run pytest"; else test_command="python -m pytest"; fi
  fi
  [ -n "$test_command" ] && echo "- Likely test command: \`$test_command\`"
} >"$out/4" &

{
  total=$(ls -Aq | wc -l | tr -d ' ')
  [ "$total" -gt 0 ] || exit 0
  echo
  echo "Top level ($total entries):"
  echo '```'
  ls -Aqp | head -n 40 | unticks
  [ "$total" -gt 40 ] && echo "… $((total - 40)) more"
  echo '```'
} >"$out/5" &

{
  tree=$(find . -mindepth 1 -maxdepth 2 \( -name .git -o -name node_modules -o -name .venv -o -name venv \
    -o -name __pycache__ -o -name target -o -name dist -o -name build -o -name '.*cache' \) -prune \
    -o -exec printf '%s\000' {} + 2>/dev/null | unctrl | tr '\000' '\n' | sed 's|^\./||' | unticks | sort | head -n 60)
  [ -n "$tree" ] || exit 0
  echo
  echo "Tree (two levels, without .git, dependencies and caches):"
  echo '```'
  printf '%s\n' "$tree"
  echo '```'
} >"$out/6" &

{
  if [ -f Makefile ]; then
    echo
    echo "Makefile (first 20 lines):"
    echo '```make'
    head -n 20 Makefile | sed 's/^\( \{0,3\}\)```/\1\\```/'  # a line of its own cannot end the block
    echo '```'
  fi
} >"$out/7" &

wait
cat "$out/1" "$out/2" "$out/3" "$out/4" "$out/5" "$out/6" "$out/7"
"""
)


def local_context_prompt(text: str | None) -> str:
    """The system prompt's local context section; empty without any. Escaped: the workspace's
    file names, branch and Makefile are in it."""
    if not text:
        return ""
    return fenced(
        Fence.LOCAL_CONTEXT,
        f"The machine and project this session runs in, as found when it started or last summarized:\n{text}",
    )


async def detect_local_context(context: RunContext) -> str | None:
    """The detection script's Markdown, capped; None when it fails or times out."""
    try:
        result = await context.backend.execute(DETECT, timeout=TIMEOUT_S)
    except (OSError, RuntimeError):
        return None
    text = result.output.strip()
    if result.exit_code != 0 or result.timed_out or not text:
        return None
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS].rstrip() + "\n[… local context cut]"
    return text


class LocalContextState(AgentState):
    local_context: NotRequired[Annotated[str | None, PrivateStateAttr]]
    local_context_cutoff: NotRequired[Annotated[int, PrivateStateAttr]]
    """The compaction cut the local context was found at (0: before any compaction)."""


def compaction_cutoff(state: Mapping[str, object]) -> int:
    event = read_compaction(state)
    return event["cutoff"] if event else 0


class LocalContextMiddleware(PromptSection[LocalContextState, str | None]):
    state_schema = LocalContextState
    key = "local_context"

    async def find(self, context: RunContext) -> str | None:
        return await detect_local_context(context)  # a failure (None) is kept too: not retried

    def section(self, value: str | None) -> str:
        return local_context_prompt(value)

    async def start_turn(
        self, state: LocalContextState, runtime: Runtime[RunContext]
    ) -> dict[str, object] | None:
        found = await super().start_turn(state, runtime)
        return (
            None if found is None else {**found, "local_context_cutoff": compaction_cutoff(state)}
        )

    async def start_step(
        self, state: LocalContextState, runtime: Runtime[RunContext]
    ) -> dict[str, object] | None:
        cutoff = compaction_cutoff(state)
        if self.key not in state or state.get("local_context_cutoff", 0) == cutoff:
            return None  # no summarization event since it was found: the prompt stays as it was
        return {
            self.key: await self.find(require_run_context(runtime.context)),
            "local_context_cutoff": cutoff,
        }
