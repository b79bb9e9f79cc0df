# What the tmux smoke scripts share (source it after setting smoke_name): the real dcode binary
# in a tmux session named "smoke", talking to the scripted model server, in a scratch directory
# ($work/ws, with DCODE_HOME at $work/home) that goes at exit with the server and tmux.
# Exits 0 with a note when tmux is missing.

if ! command -v tmux >/dev/null 2>&1; then
  echo "$smoke_name: skipped (tmux is not installed)"
  exit 0
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
dcode=$(dirname "$py")/dcode
work=$(mktemp -d)
sock="dcode-smoke-$$"
server_pid=""
kill_at_exit=()  # more processes to end at exit (SIGKILL), such as ones the model started
smoke_context=""  # said in brackets after the name when something fails

cleanup() {
  tmux -L "$sock" kill-server >/dev/null 2>&1 || true
  [ -n "$server_pid" ] && kill "$server_pid" >/dev/null 2>&1 || true
  for pid in ${kill_at_exit[@]+"${kill_at_exit[@]}"}; do
    kill -KILL "$pid" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

screen() { tmux -L "$sock" capture-pane -t smoke -p 2>/dev/null || true; }

fail() {  # fail MESSAGE: say what went wrong, show the screen, stop
  echo "$smoke_name: FAILED ${smoke_context:+($smoke_context) }$1" >&2
  echo "----- screen -----" >&2
  screen >&2
  exit 1
}

wait_for() {  # wait_for TEXT SECONDS
  local deadline=$((SECONDS + $2))
  while [ $SECONDS -lt $deadline ]; do
    if screen | grep -qF -- "$1"; then return 0; fi
    sleep 0.2
  done
  fail "waiting for: $1"
}

start_model_server() {  # start_model_server: serve $work/script.json, log to $work/requests.jsonl; sets url
  "$py" -m tests.support.model_server --script "$work/script.json" --port-file "$work/url" \
    --log "$work/requests.jsonl" </dev/null >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do [ -s "$work/url" ] && break; sleep 0.1; done
  [ -s "$work/url" ] || { echo "$smoke_name: the scripted server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
  url=$(cat "$work/url")
}

start_dcode() {  # start_dcode [ARGS [AFTER]]: dcode --approve all on the scripted model, in tmux;
  # ARGS are more words for its command line, AFTER runs in the pane once it exits (a command and ;)
  tmux -L "$sock" new-session -d -s smoke -x 120 -y 36 \
    "cd '$work/ws' && DCODE_HOME='$work/home' OPENAI_API_KEY=smoke TERM=xterm-256color '$dcode' -m openai:smoke-model --base-url '$url' --approve all ${1:-}; echo DCODE-EXITED \$?; ${2:-}sleep 30"
}

mkdir -p "$work/ws" "$work/home"
cd "$root"
