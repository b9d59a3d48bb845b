#!/bin/sh
# DUALCAST_LLVM_ARGS words that make LLVM print and exit(0) used to end the
# host process, with status 0, at its first kernel compile. Each must now be a
# compile error naming the word (the REPL in --strict mode exits 1 on it).
# Usage: llvm_args_that_exit.sh <dualcast-repl>
repl=$1
for a in --version -version -help --help-hidden -print-all-options; do
  out=$(printf 'def f(x) = x + 1\nf.([1, 2])\n' |
        DUALCAST_CACHE_DIR=off DUALCAST_LLVM_ARGS="-time-passes $a" "$repl" --strict 2>&1)
  rc=$?
  if [ "$rc" -ne 1 ] || ! printf '%s\n' "$out" | grep -q "holds '$a', which makes LLVM print and end the process"; then
    echo "DUALCAST_LLVM_ARGS='-time-passes $a': exit status $rc, output:"
    printf '%s\n' "$out"
    exit 1
  fi
done
echo "ok"
