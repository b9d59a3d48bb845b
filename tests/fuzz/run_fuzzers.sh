#!/bin/sh
# Builds the IR round-trip and disk-cache libFuzzer targets with clang++-14 (ASan+UBSan) and runs each for a bounded time.
#
# usage: run_fuzzers.sh [seconds_per_target=20] [work_dir=${TMPDIR:-/tmp}/dualcast-fuzz]
# Needs Debian clang-14 and libclang-rt-14-dev (libFuzzer), libabsl-dev and the
# dual headers; the sources are compiled directly (no CMake), so the targets
# build even where the LLVM 19 JIT does not. tests/fuzz/corpus/<target>/ seeds
# each run and is only read (new inputs go to the work dir). A crash exits
# non-zero and leaves crash-* in <work_dir>/<target>/: once fixed, copy it into
# the target's corpus dir as a regression input. The REPL parser target has
# its own script (run_parser_fuzz.sh).
set -eu
seconds=${1:-20}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${2:-${TMPDIR:-/tmp}/dualcast-fuzz}
cxx=${CXX_FUZZ:-clang++-14}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "run_fuzzers.sh: $cxx not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 1
fi
absl_libs=$(pkg-config --libs absl_flat_hash_map absl_hash absl_status absl_statusor absl_str_format absl_strings)
flags="-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I$root -I$root/dual/include -I$root/runtime/include"
jit="$root/jit"
ir_srcs="$jit/ir/ir.cc $jit/ir/print.cc $jit/ir/verify.cc $jit/ir/hash.cc $jit/error.cc $jit/passes/rewrite.cc
  $jit/passes/simplify.cc $jit/passes/dce.cc $jit/passes/optimize.cc $jit/ir/scalar_ops.cc $jit/ir/interpret.cc $jit/passes/jvp.cc"
cache_srcs="$jit/codegen/disk_cache.cc $jit/env.cc $jit/error.cc $jit/stats.cc"

# build <target> <sources...>: rebuilds only when a source (or this script) is newer.
build() {
  target=$1
  shift
  bin="$work/$target/$target"
  mkdir -p "$work/$target/corpus"
  for s in "$@" "$0"; do
    if [ ! -x "$bin" ] || [ "$s" -nt "$bin" ]; then
      echo "run_fuzzers.sh: building $target"
      # shellcheck disable=SC2086
      "$cxx" $flags "$@" $absl_libs -lpthread -o "$bin.tmp"
      mv "$bin.tmp" "$bin"
      return
    fi
  done
}

build fuzz_ir_roundtrip "$here/fuzz_ir_roundtrip.cc" $ir_srcs
build fuzz_disk_cache "$here/fuzz_disk_cache.cc" $cache_srcs

status=0
for target in fuzz_ir_roundtrip fuzz_disk_cache; do
  dir="$work/$target"
  echo "run_fuzzers.sh: running $target for ${seconds}s"
  # -timeout: a hang on one input is a finding too. -rss_limit_mb: leaks/blowups.
  if ! (cd "$dir" && ./"$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 "$dir/corpus" "$here/corpus/${target#fuzz_}" \
        >"$dir/log.txt" 2>&1); then
    echo "run_fuzzers.sh: $target FAILED; see $dir/log.txt and $dir/crash-*" >&2
    tail -40 "$dir/log.txt" >&2
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log.txt" | grep -o '[0-9]*$' || echo "?")
  echo "run_fuzzers.sh: $target: $execs execs in ${seconds}s"
done
exit $status
