#!/usr/bin/env python3
"""Runs an MPI example under mpiexec with 1, 2 and 4 ranks and checks it against the one-rank run.

Modes:
  compare (default)  every output line not starting with '#' must match the
                     one-rank run: words equal, integers equal, other numbers
                     within --rtol relative (the examples say why theirs is
                     not bitwise); a NaN fails, even where both print it.
  --expect-error RE  the command must fail cleanly on every rank count: exit
                     status 1..127 (not 0, not a signal), output matching
                     the regular expression RE, and done within
                     --error-timeout seconds (a rank left waiting for one
                     that failed would hang the job).
  --shared-cache     each rank count starts from an empty kernel cache
                     directory shared by its ranks (DUALCAST_LOG=1 makes every
                     rank print its compile/disk-hit counts at exit): the ranks
                     together compile exactly the kernels one rank compiles,
                     and every other rank loads them from disk.
Exit 77 (ctest: skipped) when mpiexec is missing.

The environment makes OpenMPI work in CI containers: root allowed, more
ranks than cores, shared memory only (no network), no single-copy (CMA needs
ptrace rights a container may not have), one dualcast thread per rank.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_btl": "self,vader",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_hwloc_base_binding_policy": "none",
    "DUALCAST_NUM_THREADS": "1",
}


def run(mpiexec, np, command, cache_dir, log):
    env = dict(os.environ, **MPI_ENV, DUALCAST_CACHE_DIR=cache_dir)
    if log:
        env["DUALCAST_LOG"] = "1"
    argv = [mpiexec, "-np", str(np)] + command
    print("$", " ".join(argv), flush=True)
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.stdout.write(p.stdout)
        sys.stdout.write(p.stderr)
        sys.exit(f"FAIL: {np} ranks exited with {p.returncode}")
    return p.stdout, p.stderr


def run_expecting_error(mpiexec, np, command, cache_dir, pattern, timeout):
    env = dict(os.environ, **MPI_ENV, DUALCAST_CACHE_DIR=cache_dir)
    argv = [mpiexec, "-np", str(np)] + command
    print("$", " ".join(argv), flush=True)
    # Own process group: on a timeout the ranks go with mpiexec.
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        sys.stdout.write(out)
        sys.exit(f"FAIL: {np} ranks still running after {timeout} s (a rank waiting for one that failed?)")
    sys.stdout.write(out)
    if p.returncode == 0:
        sys.exit(f"FAIL: {np} ranks exited 0; expected an error matching {pattern!r}")
    if p.returncode < 0 or p.returncode >= 128:
        sys.exit(f"FAIL: {np} ranks crashed (exit status {p.returncode}); expected a clean error")
    if re.search(pattern, out) is None:
        sys.exit(f"FAIL: {np} ranks exited {p.returncode} without a message matching {pattern!r}")
    print(f"OK: {np} ranks exited {p.returncode} with the expected message")


def is_int(word):
    return re.fullmatch(r"[-+]?\d+", word) is not None


def is_nan(word):
    return re.fullmatch(r"[-+]?nan(\(.*\))?", word, re.IGNORECASE) is not None


def check_no_nan(output, np):
    """A NaN in a result line is a failure, even where every rank count prints it."""
    for line in output.splitlines():
        if not line.startswith("#") and any(is_nan(w) for w in line.split()):
            sys.exit(f"FAIL: {np} ranks printed NaN: {line}")


def compare(reference, other, np, rtol):
    """Largest relative difference; exits on any mismatch beyond rtol."""
    ref = [l for l in reference.splitlines() if not l.startswith("#")]
    got = [l for l in other.splitlines() if not l.startswith("#")]
    if len(ref) != len(got):
        sys.exit(f"FAIL: {np} ranks printed {len(got)} result lines, one rank {len(ref)}")
    worst = 0.0
    for a_line, b_line in zip(ref, got):
        a_words, b_words = a_line.split(), b_line.split()
        ok = len(a_words) == len(b_words)
        for a, b in zip(a_words, b_words):
            if a == b:
                continue
            if is_int(a) or is_int(b):
                ok = False
                break
            try:
                x, y = float(a), float(b)
            except ValueError:
                ok = False
                break
            diff = abs(x - y) / max(abs(x), abs(y))
            worst = max(worst, diff)
            ok = ok and diff <= rtol
        if not ok:
            sys.exit(f"FAIL: {np} ranks differ beyond rtol {rtol}:\n  1 rank:  {a_line}\n  {np} ranks: {b_line}")
    return worst


SUMMARY = re.compile(r"^dualcast: (\d+) compiles .*?(\d+) disk hits", re.M)


def counts(stderr, np):
    found = [(int(c), int(d)) for c, d in SUMMARY.findall(stderr)]
    if len(found) != np:
        sys.stdout.write(stderr)
        sys.exit(f"FAIL: expected {np} DUALCAST_LOG summaries, found {len(found)}")
    return sum(c for c, _ in found), sum(d for _, d in found)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpiexec", default="mpiexec")
    parser.add_argument("--rtol", type=float, default=0.0)
    parser.add_argument("--np", default="1,2,4")
    parser.add_argument("--shared-cache", action="store_true")
    parser.add_argument("--expect-error", metavar="RE")
    parser.add_argument("--error-timeout", type=float, default=120)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"]
    mpiexec = shutil.which(args.mpiexec)
    if mpiexec is None:
        print(f"SKIP: {args.mpiexec} not found (install openmpi-bin libopenmpi-dev)")
        return 77
    ranks = [int(n) for n in args.np.split(",")]
    with tempfile.TemporaryDirectory(prefix="dualcast_mpi_") as tmp:
        if args.expect_error is not None:
            for np in ranks:
                run_expecting_error(mpiexec, np, command, os.path.join(tmp, "cache"), args.expect_error,
                                    args.error_timeout)
            return 0
        if args.shared_cache:
            baseline = None
            for np in ranks:
                cache = os.path.join(tmp, f"cache{np}")  # empty for each rank count
                _, err = run(mpiexec, np, command, cache, log=True)
                compiles, disk_hits = counts(err, np)
                print(f"{np} ranks: {compiles} compiles, {disk_hits} disk hits")
                if baseline is None:
                    baseline = compiles
                    if compiles == 0 or disk_hits != 0:
                        sys.exit("FAIL: one rank on an empty cache must compile and find nothing")
                elif compiles != baseline or disk_hits != (np - 1) * baseline:
                    sys.exit(f"FAIL: {np} ranks should compile {baseline} kernels once and load "
                             f"{(np - 1) * baseline} from disk")
            print("OK: each kernel compiled by one rank, loaded by the others")
            return 0
        cache = os.path.join(tmp, "cache")
        reference, _ = run(mpiexec, ranks[0], command, cache, log=False)
        sys.stdout.write(reference)
        check_no_nan(reference, ranks[0])
        for np in ranks[1:]:
            out, _ = run(mpiexec, np, command, cache, log=False)
            check_no_nan(out, np)
            worst = compare(reference, out, np, args.rtol)
            print(f"OK: {np} ranks match {ranks[0]} (largest relative difference {worst:.3g}, rtol {args.rtol})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
