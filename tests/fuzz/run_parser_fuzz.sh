#!/bin/sh
# Builds the REPL parser fuzz target with clang++-14 + libFuzzer + ASan and runs it for a bounded time.
#
# usage: run_parser_fuzz.sh [seconds=30] [work_dir=${TMPDIR:-/tmp}/dualcast-parser-fuzz]
# Needs Debian clang-14 and libclang-rt-14-dev (libFuzzer), libabsl-dev. The
# corpus in tests/fuzz/corpus seeds the run (and is only read: new inputs go
# to the work dir). A crash exits non-zero and leaves crash-* in the work dir:
# add it to tests/fuzz/corpus as a regression input once fixed. Exit 77 (ctest:
# skipped) when clang++-14 is missing.
set -eu
seconds=${1:-30}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${2:-${TMPDIR:-/tmp}/dualcast-parser-fuzz}
mkdir -p "$work/corpus"
cxx=${CXX_FUZZ:-clang++-14}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "run_parser_fuzz.sh: $cxx not found (apt-get install clang-14 libclang-rt-14-dev); skipping" >&2
  exit 77
fi
absl_libs=$(pkg-config --libs absl_flat_hash_map absl_hash absl_status absl_statusor absl_str_format absl_strings)
srcs="$here/parser_fuzz.cc
  $root/examples/repl/source_error.cc $root/examples/repl/lexer.cc $root/examples/repl/parser.cc
  $root/examples/repl/lower.cc
  $root/jit/ir/ir.cc $root/jit/ir/print.cc $root/jit/ir/verify.cc $root/jit/error.cc $root/jit/ir/hash.cc
  $root/jit/passes/compose.cc $root/jit/passes/rewrite.cc"
bin="$work/parser_fuzz"
# Rebuild only when a source is newer than the binary.
rebuild=1
if [ -x "$bin" ]; then
  rebuild=0
  for s in $srcs "$0"; do
    if [ "$s" -nt "$bin" ]; then rebuild=1; fi
  done
fi
if [ "$rebuild" = 1 ]; then
  # shellcheck disable=SC2086
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root" -I"$root/dual/include" -I"$root/runtime/include" $srcs $absl_libs -o "$bin.tmp"
  mv "$bin.tmp" "$bin"
fi
cd "$work"
# -max_len: statements are short; -timeout: a hang on one input is a finding too.
exec "$bin" -max_total_time="$seconds" -max_len=512 -timeout=10 -print_final_stats=1 \
  "$work/corpus" "$here/corpus"
