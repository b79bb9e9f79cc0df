#!/usr/bin/env bash
# Smoke test of the real dcode binary in a real terminal (tmux) against the scripted model server.
# It types a prompt, waits for the streamed answer and the file the model wrote, then quits with
# Ctrl+D. Exits 0 with a note when tmux is missing; non-zero with the screen on any failure.
set -euo pipefail

if ! command -v tmux >/dev/null 2>&1; then
  echo "smoke_tui: skipped (tmux is not installed)"
  exit 0
fi

root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
dcode=$(dirname "$py")/dcode
work=$(mktemp -d)
sock="dcode-smoke-$$"
server_pid=""

cleanup() {
  tmux -L "$sock" kill-server >/dev/null 2>&1 || true
  [ -n "$server_pid" ] && kill "$server_pid" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

screen() { tmux -L "$sock" capture-pane -t smoke -p 2>/dev/null || true; }

wait_for() {  # wait_for TEXT SECONDS
  local deadline=$((SECONDS + $2))
  while [ $SECONDS -lt $deadline ]; do
    if screen | grep -qF -- "$1"; then return 0; fi
    sleep 0.2
  done
  echo "smoke_tui: FAILED waiting for: $1" >&2
  echo "----- screen -----" >&2
  screen >&2
  exit 1
}

mkdir -p "$work/ws" "$work/home"
cd "$root"
"$py" - "$work/script.json" <<'PY'
import sys
from tests.support.model_server import reply, tool_call, write_script
write_script(sys.argv[1], [
    reply(tool_calls=[tool_call("write_file", {"file_path": "smoke.txt", "content": "written by the model\n"})]),
    reply("Hello from the **smoke test**: smoke.txt is written.", chunk_size=4, chunk_delay=0.01),
])
PY
"$py" -m tests.support.model_server --script "$work/script.json" --port-file "$work/url" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do [ -s "$work/url" ] && break; sleep 0.1; done
[ -s "$work/url" ] || { echo "smoke_tui: the scripted server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
url=$(cat "$work/url")

tmux -L "$sock" new-session -d -s smoke -x 120 -y 36 \
  "cd '$work/ws' && DCODE_HOME='$work/home' OPENAI_API_KEY=smoke TERM=xterm-256color '$dcode' -m openai:smoke-model --base-url '$url' --approve all; echo DCODE-EXITED \$?; sleep 30"

wait_for "Ask dcode" 20
tmux -L "$sock" send-keys -t smoke -l "write the smoke file"
sleep 0.5   # a separate Enter: keys sent in one burst read as a paste, whose newline never sends
tmux -L "$sock" send-keys -t smoke Enter
wait_for "Hello from the smoke test" 30
wait_for "write_file" 5
[ "$(cat "$work/ws/smoke.txt")" = "written by the model" ] || { echo "smoke_tui: smoke.txt missing or wrong" >&2; exit 1; }

tmux -L "$sock" send-keys -t smoke C-d
wait_for "DCODE-EXITED 0" 10
echo "smoke_tui: ok"
