#!/bin/sh
# A real terminal session with dualcast-repl inside tmux: type a definition, use the history (up arrow), get results.
#
# usage: tmux_session.sh <dualcast-repl>
# Exits 77 (ctest: skipped) when tmux is not installed (Debian package: tmux).
# The history file goes to a temporary XDG_DATA_HOME, checked at the end.
set -eu
repl=$1
if ! command -v tmux >/dev/null 2>&1; then
  echo "tmux_session.sh: tmux not installed; skipping" >&2
  exit 77
fi
tmp=$(mktemp -d)
sock="$tmp/tmux.sock"
t="tmux -S $sock"
cleanup() { $t kill-server >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT

$t new-session -d -s repl -x 160 -y 50 \
  "env XDG_DATA_HOME=$tmp/data DUALCAST_CACHE_DIR=off TERM=xterm '$repl'; sleep 5"

screen() { $t capture-pane -p -t repl -S -200; }
# retry <what> <test...>: until the test succeeds (10 s); else the screen and a failure.
retry() {
  what=$1
  shift
  i=0
  while ! "$@"; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then
      echo "tmux_session.sh: timed out waiting for $what; the screen was:" >&2
      screen >&2
      exit 1
    fi
    sleep 0.1
  done
}
shows() { [ "$(screen | grep -cF -- "$2" || true)" -ge "$1" ]; }
at_prompt() { [ "$(screen | sed 's/[[:space:]]*$//' | grep -v '^$' | tail -n 1)" = 'dc>' ]; }
# wait_for <count> <fixed string>: until the pane shows the string at least <count> times.
wait_for() { retry "'$2' (x$1)" shows "$1" "$2"; }
# wait_prompt: until the pane's last non-blank line is a bare prompt, i.e. the
# editor is back for the next line. Keys sent before that are echoed by the tty
# in cooked mode (a Tab shows as spaces) and only then read by libedit, so a
# screen check on such a line would race with a slow (CI, sanitized) run.
wait_prompt() { retry "a fresh prompt" at_prompt; }
keys() { $t send-keys -t repl "$@"; }

wait_for 1 'dc>'
keys 'def twice(x) = x * 2' Enter
wait_for 1 'defined twice(x)'
keys 'twice.([1, 2, 3])' Enter
wait_for 1 'array([2, 4, 6], dtype=float64)'

# Up twice recalls the definition: running it again redefines the function.
keys Up Up Enter
wait_for 1 'redefined twice(x)'
# History is now: def, call, def. Up twice recalls the call; edit it before running:
# delete '3])' and type '10])', so the line becomes twice.([1, 2, 10]).
keys Up Up BSpace BSpace BSpace '10])' Enter
wait_for 1 'array([2, 4, 20], dtype=float64)'

# A long definition over several lines: the prompt continues with '..> '.
keys 'def piece(x) =' Enter
wait_for 1 '..>'
keys '  if x > 0 then twice(x)' Enter '  else 0' Enter
wait_for 1 'defined piece(x)'
keys 'piece.([-1, 5])' Enter
wait_for 1 'array([0, 10], dtype=float64)'

# An error points at its column and the session goes on.
keys 'piece.(nosuch)' Enter
wait_for 1 "error: unknown name 'nosuch'"
keys 'twice(21)' Enter
wait_for 1 '42'

# Tab completes commands and names: ':lo' Tab -> ':load ', then a file of definitions.
printf 'def polar(x, y) = (hypot(x, y), atan2(y, x))\n' > "$tmp/defs.dc"
keys ':lo' Tab "$tmp/defs.dc" Enter
wait_for 1 'defined polar(x, y) -> 2 outputs'
wait_prompt
keys 'pola' Tab
wait_for 1 'dc> polar'
keys '.(3, 4)[1] * 1111' Enter
# 5555 (not "unknown name 'pola'") is the proof that Tab completed the name;
# the history check at the end shows the line as it ran.
wait_for 1 '5555'

# Ctrl-C while typing drops the line (nothing runs) and prompts again.
wait_prompt
keys 'cancelled_line = 1 +'
# Wait for the echo first: a Ctrl-C that overtakes the typed keys (a slow,
# sanitized build) would cancel half a line and the check below would race.
wait_for 1 'cancelled_line = 1 +'
keys C-c
wait_for 1 '^C'
keys 'cancelled_line' Enter
wait_for 1 "error: unknown name 'cancelled_line'"

# Ctrl-C during a running statement cancels it; the session goes on.
keys 'big = rand(1500, 1500)' Enter
wait_for 1 'big ='
wait_prompt
keys ':time matmul(big, big)' Enter
wait_for 1 'dc> :time matmul(big, big)'
sleep 0.5
keys C-c
wait_for 1 'interrupted (Ctrl-C): the statement was cancelled'
keys 'twice(21.5) * 1000' Enter
wait_for 1 '43000'

keys ':quit' Enter
i=0
# ':quit' is the last entry written; the REPL replaces the file whole (rename), so
# once it shows, the file read below is the session's final history.
while [ ! -s "$tmp/data/dualcast/repl_history" ] || ! grep -qF ':quit' "$tmp/data/dualcast/repl_history"; do
  i=$((i + 1))
  if [ $i -gt 50 ]; then
    echo "tmux_session.sh: no history file with the session's statements" >&2
    ls -la "$tmp/data/dualcast" >&2 || true
    exit 1
  fi
  sleep 0.1
done
# libedit stores a space as \040.
sed 's/\\040/ /g' "$tmp/data/dualcast/repl_history" |
  grep -qF 'def piece(x) = if x > 0 then twice(x) else 0' || {
  echo "tmux_session.sh: the multi-line definition is not one history entry:" >&2
  cat "$tmp/data/dualcast/repl_history" >&2
  exit 1
}
sed 's/\\040/ /g' "$tmp/data/dualcast/repl_history" | grep -qF 'polar.(3, 4)[1] * 1111' || {
  echo "tmux_session.sh: the tab-completed line is not in the history as typed:" >&2
  cat "$tmp/data/dualcast/repl_history" >&2
  exit 1
}
echo "tmux session ok"
