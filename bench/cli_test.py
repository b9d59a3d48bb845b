#!/usr/bin/env python3
"""CLI tests of dualcast-hmlstm (registered in bench/CMakeLists.txt as bench_<case>).

Usage: cli_test.py PATH/TO/dualcast-hmlstm CASE
Each case runs the binary with stderr and stdout as pipes (not a terminal) and
checks exit status, messages and output files; it prints what failed and exits 1.
"""
import json
import re
import os
import subprocess
import sys
import tempfile

VALID_IMPLS = ["handwritten", "handwritten-dcmath", "dualcast", "dualcast-fastmath", "dualcast-fused", "dualcast-recompute", "reverse-where",
               "torch-eager-where", "torch-compile", "jax-jit-where", "jax-vmap-cond", "drjit-llvm-select"]


def run(binary, *args, env=None):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=110,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def check(cond, what, out="", err=""):
    if not cond:
        print(f"FAIL: {what}\n--- stdout ---\n{out[-3000:]}\n--- stderr ---\n{err[-3000:]}")
        sys.exit(1)


def help_case(b):
    rc, out, err = run(b, "--help")
    check(rc == 0, f"--help exits 0 (got {rc})", out, err)
    check("usage:" in out and "--peers" in out and "drjit-llvm-select" in out, "usage on stdout", out, err)
    check("each 3..32768" in out, "--sizes' help states both limits the parser enforces", out, err)


def bad_option(b):
    rc, out, err = run(b, "--frobnicate")
    check(rc == 2, f"unknown option exits 2 (got {rc})", out, err)
    check("--frobnicate" in err and "--sizes" in err, "message names the option and the valid ones", out, err)
    rc, out, err = run(b, "--layouts", "diagonal")
    check(rc == 2 and "rows, columns" in err, "bad layout names the valid ones", out, err)
    rc, out, err = run(b, "--device", "tpu")
    check(rc == 2 and "cpu, cuda" in err, "bad device names the valid ones", out, err)
    rc, out, err = run(b, "--reps")
    check(rc == 2 and "needs a value" in err, "missing value", out, err)


def bad_size(b):
    for bad in ("abc", "2", "512,x"):
        rc, out, err = run(b, "--sizes", bad)
        check(rc == 2, f"--sizes {bad} exits 2 (got {rc})", out, err)
        check("bad size" in err and "3..32768" in err, f"--sizes {bad}: message names the valid range", out, err)


def bad_impl(b):
    rc, out, err = run(b, "--impls", "handwritten,pytorch")
    check(rc == 2, f"unknown impl exits 2 (got {rc})", out, err)
    check("'pytorch'" in err and all(name in err for name in VALID_IMPLS), "message lists every valid impl", out, err)


def tiny_run(b):
    with tempfile.TemporaryDirectory() as d:
        js, csv, svg = (os.path.join(d, f) for f in ("r.json", "r.csv", "r.svg"))
        rc, out, err = run(b, "--sizes", "9", "--reps", "3", "--warmup", "1", "--json", js, "--csv", csv,
                           "--plot", svg, "--peers", "--python", os.path.join(d, "no-such-python"))
        check(rc == 0, f"tiny run exits 0 (got {rc})", out, err)
        check("\r" not in err and "\r" not in out, "no carriage returns when stderr is not a terminal", out, err)
        check("install with: scripts/peers" in out, "missing peers say how to install them", out, err)
        with open(js) as f:
            doc = json.load(f)
        meta = doc["metadata"]
        for key in ("git_revision", "dualcast_version", "compiler", "llvm_version", "threads", "cpu_model",
                    "stream_gbps", "reps", "warmup", "dtype", "peer_versions", "handwritten_isa"):
            check(key in meta, f"metadata has {key}", json.dumps(meta, indent=1))
        check(meta["reps"] == 3 and meta["warmup"] == 1 and meta["dtype"] == "float32", "metadata values", str(meta))
        check(meta["stream_gbps"]["copy"] > 0, "STREAM copy measured", str(meta))
        # Whether the run compiled its kernels or loaded them (an A/B needs to know).
        check(re.fullmatch(r"\d+ compiled, \d+ loaded from the disk cache", meta.get("dualcast_kernels", "")) is not None,
              "metadata says how the dualcast kernels were obtained", str(meta))
        check("dualcast kernels: " in out, "the text report says it too", out)
        rows = doc["rows"]
        timed = [r for r in rows if r["status"] == "ok"]
        names = {r["impl"] for r in timed}
        for name in ("handwritten", "handwritten-dcmath", "dualcast", "dualcast-fastmath", "dualcast-fused",
                     "dualcast-recompute", "reverse-where"):
            check(name in names, f"row {name} timed", json.dumps(rows, indent=1))
        for r in timed:
            check(r["reps"] == 3 and r["min_ms"] <= r["median_ms"] <= r["max_ms"], "min <= median <= max", str(r))
            check(r["max_rel_error"] <= 1e-5, "verified against the reference", str(r))
            check("compile_ms" in r and "times_slower_than_handwritten" in r, "row keys", str(r))
        hand = [r for r in timed if r["impl"] == "handwritten"]
        check(all(abs(r["times_slower_than_handwritten"] - 1) < 1e-9 for r in hand), "hand vs itself is 1", str(hand))
        peers = [r for r in rows if r["impl"] == "torch-compile"]
        check(peers and peers[0]["status"].startswith("not installed"), "absent peer reported", str(peers))
        with open(csv) as f:
            lines = f.read().splitlines()
        check(lines[0].startswith("# benchmark:"), "CSV metadata lines", "\n".join(lines[:5]))
        header = [l for l in lines if not l.startswith("#")][0]
        check(header.startswith("impl,variant,layout,n,") and "compile_ms" in header, "CSV header", header)
        check(len([l for l in lines if not l.startswith("#")]) == len(rows) + 1, "CSV mirrors the JSON rows", "")
        with open(svg) as f:
            text = f.read()
        check(text.startswith("<svg") and "reverse-where" in text and "STREAM" in text, "SVG with caption", text[:500])


def no_cuda(b):
    rc, out, err = run(b, "--device", "cuda", "--sizes", "16", "--reps", "1")
    check(0 <= rc < 128, f"no crash (got {rc})", out, err)
    if rc != 0:  # the machine has no usable GPU: the reason, exit 1
        check(rc == 1, f"no device exits 1 (got {rc})", out, err)
        check(err.startswith("no CUDA device: "), "says why on stderr", out, err)
    else:
        check("dualcast-fused" in out, "a GPU table", out, err)


def bad_llvm_args(b):
    # LLVM refuses the option at the JIT's first compile: a clear error and exit 1, no abort.
    env = {"DUALCAST_LLVM_ARGS": "-no-such-llvm-option", "DUALCAST_CACHE_DIR": "off"}
    rc, out, err = run(b, "--sizes", "16", "--reps", "1", "--impls", "dualcast", env=env)
    check(rc == 1, f"exits 1 (got {rc})", out, err)
    check(err.startswith("dualcast-hmlstm: ") and "DUALCAST_LLVM_ARGS" in err, "says why on stderr", out, err)
    check("terminate called" not in err, "no uncaught exception", out, err)


def handwritten_isas(b):
    # n = 37: vector bodies plus tails; every branch in both layouts. Each ISA
    # the CPU has must agree with the float64 reference (exit 0 only then).
    for isa in ("generic", "avx2", "avx512"):
        rc, out, err = run(b, "--sizes", "37,64", "--reps", "1", "--warmup", "0", "--impls",
                           "handwritten,handwritten-dcmath", env={"DUALCAST_HANDWRITTEN_ISA": isa})
        check(rc == 0, f"handwritten {isa} agrees with the reference (exit {rc})", out, err)
        check("handwritten " in out and "handwritten-dcmath " in out and "FAILED" not in out,
              f"handwritten {isa} rows, both sets of math", out, err)


CASES = {"help": help_case, "bad_option": bad_option, "bad_size": bad_size, "bad_impl": bad_impl,
         "tiny_run": tiny_run, "no_cuda": no_cuda, "bad_llvm_args": bad_llvm_args,
         "handwritten_isas": handwritten_isas}

if __name__ == "__main__":
    CASES[sys.argv[2]](sys.argv[1])
    print(f"bench_{sys.argv[2]}: ok")
