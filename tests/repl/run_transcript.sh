#!/bin/sh
# Runs a REPL script with --echo and compares the output with its golden transcript, exactly.
#
# usage: run_transcript.sh <dualcast-repl> <script.dc> <expected.out> [--update]
# Volatile text is masked on both sides before comparing: times ("12.3 ms"
# -> "# ms"), run counts, kernel hashes, the reason CUDA is unavailable, and
# the body of :code listings (LLVM IR depends on the host CPU; its header
# comment and the 'define' line's name are kept; its attributes follow
# the pass pipeline). The kernel disk cache is turned off so
# compile counts do not depend on earlier runs. --update rewrites the
# expected file (review the diff by hand before committing it).
set -eu
repl=$1
script=$2
expected=$3
update=${4:-}
dir=$(cd "$(dirname "$script")" && pwd)
name=$(basename "$script")
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT

mask() {
  awk '
    /^> :code/ { print; skip = 1; next }
    /^> / { skip = 0 }
    skip && !/^; .*LLVM IR for/ && !/^define / { next }
    { print }
  ' | sed -E \
    -e 's/[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)? ms/# ms/g' \
    -e 's/over [0-9]+ runs/over # runs/' \
    -e 's/^(define [^@]*@[^(]*)\(.*$/\1(...)/' \
    -e 's/[0-9a-f]{16}/<hash>/g' \
    -e 's/(no CUDA device: ).*(; staying on the cpu)/\1<reason>\2/'
}

status=0
(cd "$dir" && DUALCAST_CACHE_DIR=off "$repl" --echo "$name") 2>&1 | mask > "$actual" || status=$?
if [ "$update" = "--update" ]; then
  cp "$actual" "$expected"
  echo "updated $expected"
  exit 0
fi
if ! diff -u "$expected" "$actual"; then
  echo "transcript differs: $script (expected $expected; rerun with --update after checking)" >&2
  exit 1
fi
exit $status
