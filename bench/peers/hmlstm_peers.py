#!/usr/bin/env python3
"""HM-LSTM framework peers, driven by dualcast-hmlstm over a line protocol on stdin/stdout.

The benchmark (bench/hmlstm/peers.cc) starts this script once and keeps it
running, so the peers' timing rounds interleave with dualcast's own rows and
machine noise hits all alike. The C++ side owns the inputs, the float64
reference, the error check and the statistics; this side only computes.

Protocol (one line each way; fields separated by single spaces):
  <- "versions python=3.11.7 numpy=2.4.6 torch=... jax=... drjit=..."  (on start)
  -> "case VARIANT LAYOUT N INPUT_FILE OUT_DIR"
  <- "peer IMPL ok FIRST_MS OUT_FILE" | "peer IMPL unavailable WHY..." | "peer IMPL error WHY..."
     (one per peer, then) "end"
     FIRST_MS is the first (cold: trace + compile + run) call; OUT_FILE holds its
     results as raw float32: full = c, dcp, df, di, dg, dz, dzb; paper = dcp, df, di, dg.
  -> "warmup IMPL K"   <- "ok"
  -> "time IMPL K"     <- "times MS MS ..."   (K timed calls, each synchronised)
  -> "quit"

Peers (every branch computed everywhere and chosen by a select, the way these
frameworks express a data-dependent branch on arrays):
  torch-eager-where   PyTorch eager, torch.where, autograd.grad
  torch-compile       torch.compile of the loss and value, autograd.grad
  jax-jit-where       jax.jit(jax.value_and_grad(loss, has_aux=True)) with jnp.where
  jax-vmap-cond       the scalar cell with lax.cond, vmapped over both axes (becomes a select), jit(value_and_grad)
  drjit-llvm-select   Dr.Jit LLVM backend, dr.select, dr.backward_from
The loss is sum(cbar * c) (full) or sum(c) (paper); z and zb only steer the
branch, so their gradients are zero (a framework that returns None gets zeros).
DUALCAST_PEER_DEVICE=cuda (set by `dualcast-hmlstm --device cuda --peers`)
puts the torch and JAX arrays on the GPU and times each peer as dualcast's
GPU rows are timed: the calls queued back to back, one wait at the end, the
mean per call; Dr.Jit's peer is the LLVM (CPU) backend and is then not run.
"""
import os
import sys
import time
import traceback

DEVICE = os.environ.get("DUALCAST_PEER_DEVICE", "cpu")
PEERS = ["torch-eager-where", "torch-compile", "jax-jit-where", "jax-vmap-cond", "drjit-llvm-select"]


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def one_line(e):
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:160]


class Case:
    """The benchmark's inputs for one (variant, layout, n), as float32 NumPy arrays."""

    def __init__(self, variant, layout, n, path):
        import numpy as np
        raw = np.fromfile(path, dtype=np.float32)
        if raw.size != 2 * n + 5 * n * n:
            raise ValueError(f"{path}: {raw.size} floats, expected {2 * n + 5 * n * n}")
        self.variant, self.layout, self.n = variant, layout, n
        self.flag_shape = (n, 1) if layout == "rows" else (1, n)
        self.z = raw[:n].reshape(self.flag_shape)
        self.zb = raw[n:2 * n].reshape(self.flag_shape)
        rest = raw[2 * n:].reshape(5, n, n)
        self.cp, self.f, self.i, self.g, self.cbar = (rest[k] for k in range(5))

    @property
    def full(self):
        return self.variant == "full"


# Each maker returns run() -> list of array-likes in the OUT_FILE order, after
# moving the inputs into the framework (untimed). run() returns only when the
# framework has finished computing.

def torch_cell(z, zb, cp, f, i, g):
    import torch
    si, sf, tg = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g)
    return torch.where(z == 1, si * tg, torch.where(zb == 0, cp, sf * cp + si * tg))


# Module-level functions (not closures over the case), so torch.compile keys its
# cache on shapes only; one code object per variant.
def torch_full(z, zb, cp, f, i, g, cbar):
    c = torch_cell(z, zb, cp, f, i, g)
    return (c * cbar).sum(), c


def torch_paper(z, zb, cp, f, i, g, cbar):
    c = torch_cell(z, zb, cp, f, i, g)
    return c.sum(), c


def make_torch(case, compiled):
    import torch
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device (a CPU-only torch build?)")
    xs = [torch.from_numpy(a.copy()).to(DEVICE) for a in (case.z, case.zb, case.cp, case.f, case.i, case.g)]
    cbar = torch.from_numpy(case.cbar.copy()).to(DEVICE)
    for x in xs:
        x.requires_grad_(True)
    wrt = xs[2:] + xs[:2] if case.full else xs[2:]

    forward = torch_full if case.full else torch_paper
    if compiled:
        # One compiled entry per (size, layout): never the silent fall-back to
        # eager that the default limit of 8 recompiles would give.
        torch._dynamo.config.cache_size_limit = 256
    fn = torch.compile(forward) if compiled else forward

    def run(sync=True):
        loss, c = fn(*xs, cbar)
        grads = torch.autograd.grad(loss, wrt, allow_unused=True)
        grads = [torch.zeros_like(x) if gr is None else gr for gr, x in zip(grads, wrt)]
        if DEVICE == "cuda" and sync:
            torch.cuda.synchronize()
        return ([c.detach()] if case.full else []) + list(grads)

    return run


def make_jax(case, vmap_cond):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def where_cell(z, zb, cp, f, i, g):
        si, sf, tg = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g)
        return jnp.where(z == 1, si * tg, jnp.where(zb == 0, cp, sf * cp + si * tg))

    def scalar_cell(z, zb, cp, f, i, g):
        update = lambda: jax.nn.sigmoid(f) * cp + jax.nn.sigmoid(i) * jnp.tanh(g)
        not_flush = lambda: lax.cond(zb == 0, lambda: cp, update)
        return lax.cond(z == 1, lambda: jax.nn.sigmoid(i) * jnp.tanh(g), not_flush)

    if vmap_cond:
        # z, zb are vectors of n; rows: one flag per row (outer axis), columns: per column.
        outer_flag, inner_flag = (0, None) if case.layout == "rows" else (None, 0)
        inner = jax.vmap(scalar_cell, in_axes=(inner_flag, inner_flag, 0, 0, 0, 0))
        cell = jax.vmap(inner, in_axes=(outer_flag, outer_flag, 0, 0, 0, 0))
        z, zb = case.z.reshape(-1), case.zb.reshape(-1)
    else:
        cell, z, zb = where_cell, case.z, case.zb

    def loss(z, zb, cp, f, i, g, cbar):
        c = cell(z, zb, cp, f, i, g)
        return (jnp.sum(c * cbar) if case.full else jnp.sum(c)), c

    argnums = (2, 3, 4, 5, 0, 1) if case.full else (2, 3, 4, 5)
    step = jax.jit(jax.value_and_grad(loss, argnums=argnums, has_aux=True))
    where = jax.devices("gpu")[0] if DEVICE == "cuda" else jax.devices("cpu")[0]
    args = [jax.device_put(jnp.asarray(a), where) for a in (z, zb, case.cp, case.f, case.i, case.g, case.cbar)]

    def run(sync=True):
        (_, c), grads = step(*args)
        out = ([c] if case.full else []) + list(grads)
        if sync:
            jax.block_until_ready(out)
        return out

    return run


def make_drjit(case):
    import drjit as dr
    from drjit.llvm.ad import Float, UInt32
    n = case.n
    cp, f, i, g, cbar = (Float(a.reshape(-1)) for a in (case.cp, case.f, case.i, case.g, case.cbar))
    z, zb = Float(case.z.reshape(-1)), Float(case.zb.reshape(-1))
    idx = dr.arange(UInt32, n * n)
    flag_idx = idx // n if case.layout == "rows" else idx % n
    dr.eval(cp, f, i, g, cbar, z, zb, flag_idx)
    wrt = [cp, f, i, g]

    def run():
        for x in wrt:
            dr.enable_grad(x)
            dr.clear_grad(x)
        zz, zzb = dr.gather(Float, z, flag_idx), dr.gather(Float, zb, flag_idx)
        si, sf, tg = dr.rcp(1 + dr.exp(-i)), dr.rcp(1 + dr.exp(-f)), dr.tanh(g)
        c = dr.select(zz == 1, si * tg, dr.select(zzb == 0, cp, sf * cp + si * tg))
        dr.backward_from(c * cbar if case.full else c)
        grads = [dr.grad(x) for x in wrt]
        value = dr.detach(c)
        dr.eval(value, grads)
        dr.sync_thread()
        for x in wrt:
            dr.disable_grad(x)
        out = ([value] if case.full else []) + grads
        if case.full:
            out += [dr.zeros(Float, n), dr.zeros(Float, n)]
        return out

    return run


MAKERS = {
    "torch-eager-where": ("torch", lambda c: make_torch(c, False)),
    "torch-compile": ("torch", lambda c: make_torch(c, True)),
    "jax-jit-where": ("jax", lambda c: make_jax(c, False)),
    "jax-vmap-cond": ("jax", lambda c: make_jax(c, True)),
    "drjit-llvm-select": ("drjit", make_drjit),
}


def to_numpy(x):
    import numpy as np
    if hasattr(x, "detach"):  # torch
        return x.detach().cpu().numpy().astype(np.float32).reshape(-1)
    return np.asarray(x, dtype=np.float32).reshape(-1)


def versions():
    import platform
    found = {"python": platform.python_version()}
    for name in ("numpy", "torch", "jax", "jaxlib", "drjit"):
        try:
            found[name] = __import__(name).__version__
        except Exception as e:  # reported as the reason the peer cannot run
            found[name] = "missing:" + one_line(e).replace(" ", "_")
    return found


def main():
    # OpenMP's default active wait (spinning threads between parallel regions)
    # costs PyTorch 100x on a loaded 2-core machine (measured: 0.14 ms -> 12 ms
    # per call at n = 64); dualcast's pool sleeps when idle, so the peers do too.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    threads = int(os.environ.get("DUALCAST_PEER_THREADS", "0") or 0)
    if threads > 0:  # the same thread count as dualcast's pool
        os.environ.setdefault("XLA_FLAGS", f"--xla_cpu_multi_thread_eigen=true "
                                           f"intra_op_parallelism_threads={threads}")
    found = versions()
    say("versions " + " ".join(f"{k}={v}" for k, v in found.items()))
    if threads > 0:
        try:
            import torch
            torch.set_num_threads(threads)
        except Exception:
            pass
        try:
            import drjit as dr
            dr.set_thread_count(threads)
        except Exception:
            pass
    runs = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        if words[0] == "case":
            variant, layout, n, path, out_dir = words[1], words[2], int(words[3]), words[4], words[5]
            runs = {}
            case = Case(variant, layout, n, path)
            for name in PEERS:
                framework, make = MAKERS[name]
                if framework == "drjit" and DEVICE != "cpu":
                    say(f"peer {name} unavailable the Dr.Jit peer is its LLVM (CPU) backend; not run on {DEVICE}")
                    continue
                if found[framework].startswith("missing:"):
                    say(f"peer {name} unavailable {framework} not importable ({found[framework][8:]})")
                    continue
                try:
                    run = make(case)
                    t0 = time.perf_counter()
                    out = run()
                    first_ms = (time.perf_counter() - t0) * 1e3
                    import numpy as np
                    out_file = os.path.join(out_dir, f"{name}.out")
                    np.concatenate([to_numpy(x) for x in out]).tofile(out_file)
                    runs[name] = run
                    say(f"peer {name} ok {first_ms:.6g} {out_file}")
                except Exception as e:  # a peer that breaks is reported, never hidden
                    traceback.print_exc(file=sys.stderr)
                    say(f"peer {name} error {one_line(e)}")
            say("end")
        elif words[0] == "warmup":
            for _ in range(int(words[2])):
                runs[words[1]]()
            say("ok")
        elif words[0] == "time":
            run, count, times = runs[words[1]], int(words[2]), []
            if DEVICE == "cuda":
                # As dualcast's GPU rows are timed: the calls queued back to back and
                # one wait at the end (a wait per call would time the launch gaps).
                t0 = time.perf_counter()
                for _ in range(count - 1):
                    run(sync=False)
                run()
                times = [(time.perf_counter() - t0) * 1e3 / count] * count
            else:
                for _ in range(count):
                    t0 = time.perf_counter()
                    run()
                    times.append((time.perf_counter() - t0) * 1e3)
            say("times " + " ".join(f"{t:.6g}" for t in times))
        else:
            say(f"error unknown command {words[0]}")


if __name__ == "__main__":
    main()
