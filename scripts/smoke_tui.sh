#!/usr/bin/env bash
# Smoke test of the real dcode binary in a real terminal (tmux) against the scripted model server.
# It types a prompt, waits for the streamed answer and the file the model wrote, then drops an
# image (a bracketed paste of its quoted path), waits for the [image 1] token, sends it and checks
# that the request carried the picture; rewinds to before the first prompt (the file goes, the
# prompt comes back), writes the prompt on in $EDITOR (Ctrl+G), then quits with Ctrl+D, which
# prints how to resume the session. Exits 0 with a note when tmux is missing; non-zero with the
# screen on any failure.
set -euo pipefail

smoke_name=smoke_tui
. "$(dirname "$0")/smoke_lib.sh"

"$py" - "$work/script.json" <<'PY'
import sys
from tests.support.model_server import reply, tool_call, write_script
write_script(sys.argv[1], [
    reply(tool_calls=[tool_call("write_file", {"file_path": "smoke.txt", "content": "written by the model\n"})]),
    reply("Hello from the **smoke test**: smoke.txt is written.", chunk_size=4, chunk_delay=0.01),
    reply("I see the picture.", chunk_size=4, chunk_delay=0.01),
])
PY
# The scripted model takes images, so a dropped picture is attached rather than refused.
cat >"$work/home/config.toml" <<'TOML'
[models."openai:smoke-model"]
image_inputs = true
TOML
# The "editor" Ctrl+G opens: it adds a word to the draft it is given.
cat >"$work/editor.sh" <<'SH'
#!/bin/sh
printf '%s, edited' "$(cat "$1")" >"$1.new" && mv "$1.new" "$1"
SH
chmod +x "$work/editor.sh"
export EDITOR="$work/editor.sh" VISUAL=""
start_model_server
start_dcode

wait_for "Ask dcode" 20
# The text and its Enter in one write, as tmux, expect and voice typing send them: it must send.
tmux -L "$sock" send-keys -t smoke "write the smoke file" Enter
wait_for "Hello from the smoke test" 30
wait_for "write_file" 5
[ "$(cat "$work/ws/smoke.txt")" = "written by the model" ] || fail "smoke.txt missing or wrong"

# Drop an image: terminals paste a dropped file's quoted path, bracketed when the app asked for
# it (Textual does; paste-buffer -p brackets it only then). The name has a space on purpose.
# The picture is Pillow's hopper.png from the corpus beside the project (as the media tests use
# it), or one drawn with Pillow when a bare checkout has no corpus.
image="$work/ws/Screen Shot.png"
hopper="$root/../shared/corpus/images/pillow/hopper.png"
if [ -f "$hopper" ]; then
  cp "$hopper" "$image"
else
  "$py" -c 'import sys; from PIL import Image; Image.radial_gradient("L").convert("RGB").save(sys.argv[1])' "$image"
fi
tmux -L "$sock" set-buffer -- "'$image'"
tmux -L "$sock" paste-buffer -p -t smoke
wait_for "[image 1]" 20
tmux -L "$sock" send-keys -t smoke -l "what is in it"
sleep 0.5   # typed, then a separate Enter
tmux -L "$sock" send-keys -t smoke Enter
wait_for "I see the picture." 30
"$py" - "$work/requests.jsonl" >"$work/image-check.log" 2>&1 <<'PY' || { cat "$work/image-check.log" >&2; fail "the last request did not carry the image"; }
import base64, json, sys

lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
assert len(lines) == 3, f"expected 3 completion requests, the server logged {len(lines)}"
body = json.loads(lines[-1])["body"]

def urls(node):  # every image_url in the request, on either wire
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image_url":
                yield value["url"] if isinstance(value, dict) else value
            else:
                yield from urls(value)
    elif isinstance(node, list):
        for value in node:
            yield from urls(value)

found = list(urls(body))
assert found, "no image_url content block in the last request"
head, _, data = found[-1].partition(",")
assert head.startswith("data:image/") and head.endswith(";base64"), f"not a base64 data URL: {head[:60]}"
raw = base64.b64decode(data, validate=True)
magic = {"png": raw[:8] == b"\x89PNG\r\n\x1a\n", "jpeg": raw[:3] == b"\xff\xd8\xff",
         "webp": raw[:4] == b"RIFF" and raw[8:12] == b"WEBP"}
assert any(magic.values()), f"the image bytes are not PNG/JPEG/WebP: {raw[:12]!r}"
PY

# Rewind to before the first prompt: the file the model wrote goes, and the prompt comes back.
tmux -L "$sock" send-keys -t smoke "/rewind" Enter
wait_for "Rewind to before a prompt" 10
tmux -L "$sock" send-keys -t smoke Down
sleep 0.3
tmux -L "$sock" send-keys -t smoke Enter
wait_for "Rewind to before prompt 1" 10
tmux -L "$sock" send-keys -t smoke b
wait_for "the conversation is back to its start" 10
[ ! -e "$work/ws/smoke.txt" ] || fail "the rewind left smoke.txt"
wait_for "write the smoke file" 5

# Ctrl+G hands the terminal to $EDITOR (a script here) and takes back what it saved.
tmux -L "$sock" send-keys -t smoke C-g
wait_for "write the smoke file, edited" 10

tmux -L "$sock" send-keys -t smoke C-d
wait_for "DCODE-EXITED 0" 10
wait_for "saved. Resume with: dcode -r " 1
echo "smoke_tui: ok"
