#!/bin/sh
# Runs a command line and checks its exit status and that its output (stdout and stderr) matches a regex.
# Usage: cli_expect.sh STATUS REGEX COMMAND [ARGS...]
# Cut off after 30 s: a CLI check must not start the program's real work (a benchmark takes minutes).
want=$1 regex=$2
shift 2
out=$(timeout 30 "$@" 2>&1)
got=$?
printf '%s\n' "$out"
if [ "$got" -ne "$want" ]; then
  echo "cli_expect: exit status $got, expected $want: $*" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
  echo "cli_expect: the output does not match '$regex': $*" >&2
  exit 1
fi
