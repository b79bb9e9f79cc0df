#!/usr/bin/env bash
# The real dcode binary in tmux, stopped while the shell tool runs `sleep 60` beside a
# grandchild that left the command's session (`setsid`) and ignores SIGTERM.
# Usage: smoke_tui_signals.sh TERM|HUP|close|quit
#   TERM, HUP: `kill -SIG` the dcode process; dcode must exit 128+N with the terminal restored
#              (normal screen, canonical mode and echo back on).
#   close:     close the terminal (tmux kills the pane: the kernel hangs up on dcode).
#   quit:      Ctrl+D, the ordinary way out; dcode must exit 0.
# In every case the sleep and the grandchild the model started must be gone. Exits 0 with a
# note when tmux is missing; non-zero with the screen on any failure.
set -euo pipefail

smoke_name=smoke_tui_signals
. "$(dirname "$0")/smoke_lib.sh"

mode=${1:?usage: smoke_tui_signals.sh TERM|HUP|close|quit}
smoke_context=$mode

running() {  # running PID: alive and not a zombie (an orphan may stay one where nothing reaps it)
  [ -r "/proc/$1/stat" ] || return 1
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != "Z" ]
}

wait_gone() {  # wait_gone PID SECONDS WHAT
  local deadline=$((SECONDS + $2))
  while running "$1"; do
    [ $SECONDS -lt $deadline ] || fail "$3 is still running"
    sleep 0.1
  done
}

"$py" - "$work/script.json" <<'PY'
import sys
from tests.support.model_server import reply, tool_call, write_script
write_script(sys.argv[1], [
    reply(tool_calls=[tool_call("execute", {"command": (
        "sleep 60 & echo $! > sleep.pid; "
        "setsid sh -c 'trap \"\" TERM; echo $$ > escapee.pid; exec sleep 300' >/dev/null 2>&1 & wait"
    )})]),
    reply("done"),
])
PY
start_model_server

modes="stty -a | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\n' ' '"
start_dcode "'sleep a while'" "echo TTY-MODES \$($modes); "

for _ in $(seq 1 300); do [ -s "$work/ws/sleep.pid" ] && [ -s "$work/ws/escapee.pid" ] && break; sleep 0.1; done
[ -s "$work/ws/sleep.pid" ] && [ -s "$work/ws/escapee.pid" ] || fail "the model's sleep and grandchild never started"
sleep_pid=$(cat "$work/ws/sleep.pid")
escapee_pid=$(cat "$work/ws/escapee.pid")
kill_at_exit+=("$sleep_pid" "$escapee_pid")
running "$sleep_pid" || fail "the sleep is not running"
running "$escapee_pid" || fail "the grandchild is not running"
pane_pid=$(tmux -L "$sock" display -p -t smoke '#{pane_pid}')
dcode_pid=$(pgrep -P "$pane_pid" | head -n 1)
[ -n "$dcode_pid" ] || fail "no dcode process under the pane"

case "$mode" in
  TERM|HUP)
    code=$((128 + $(kill -l "$mode")))
    kill -s "$mode" "$dcode_pid"
    wait_for "DCODE-EXITED $code" 20
    wait_for "TTY-MODES icanon echo" 5
    [ "$(tmux -L "$sock" display -p -t smoke '#{alternate_on}')" = "0" ] || fail "the alternate screen is still on"
    ;;
  close)
    tmux -L "$sock" kill-pane -t smoke
    wait_gone "$dcode_pid" 20 "dcode"
    ;;
  quit)
    tmux -L "$sock" send-keys -t smoke C-d
    wait_for "DCODE-EXITED 0" 20
    ;;
  *)
    echo "smoke_tui_signals: unknown mode $mode" >&2
    exit 2
    ;;
esac
wait_gone "$sleep_pid" 5 "the model's sleep"
wait_gone "$escapee_pid" 5 "the model's setsid grandchild"
echo "smoke_tui_signals: ok ($mode)"
