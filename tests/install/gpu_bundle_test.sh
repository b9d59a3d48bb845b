#!/bin/sh
# ctest gpu_bundle_without_gpu: scripts/gpu-bundle packs this build and scripts/gpu-check --bundle runs it; without a GPU the suites pass and the benchmark says why it cannot run.
# Usage: gpu_bundle_test.sh <source dir> <build dir>   (exit 77: skipped, a GPU is present)
set -u
src=$1
build=$2
if nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: a GPU is present (scripts/gpu-check --bundle would run on it)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1
DUALCAST_BUILD_DIR=$build DUALCAST_BUNDLE_XZ=-0 scripts/gpu-bundle --no-build "$tmp/bundle.tar.xz" ||
  { echo "FAIL: scripts/gpu-bundle"; exit 1; }
DUALCAST_GPU_LOG_DIR=$tmp/log DUALCAST_GPU_SUITES="cuda bad_inputs" \
  scripts/gpu-check --bundle "$tmp/bundle.tar.xz" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ $rc -ne 0 ] || { echo "FAIL: gpu-check --bundle passed on a machine without a GPU"; exit 1; }
grep -q '^cuda: exit 0' "$tmp/out" && grep -q '^bad_inputs: exit 0' "$tmp/out" ||
  { echo "FAIL: a suite failed when run from the bundle"; exit 1; }
grep -q 'no CUDA device: ' "$tmp/out" || { echo "FAIL: the benchmark did not say why it cannot run"; exit 1; }
echo "PASS: the bundle's suites ran and passed; the benchmark gave its reason"
