#!/usr/bin/env python3
"""HM-LSTM peers for dualcast-hmlstm: PyTorch eager + torch.where, torch.compile, JAX jit(grad) + jnp.where.

Reads the benchmark's own inputs (raw float32 files written by dualcast-hmlstm),
runs the full variant (value + gradients of sum(cbar * c) wrt all six inputs)
with every branch computed through `where`, checks the results against a
float64 NumPy reference, and prints CSV rows:
    impl,variant,layout,n,median_ms,min_ms,max_rel_error,status
A framework that cannot be imported is reported as "not installed".
"""
import argparse
import os
import statistics
import time

IMPLS = ["torch-eager-where", "torch-compile", "jax-jit-grad-where"]


def load(path, n, layout):
    import numpy as np
    raw = np.fromfile(path, dtype=np.float32)
    flags = (n, 1) if layout == "rows" else (1, n)
    z, zb = raw[:n].reshape(flags), raw[n:2 * n].reshape(flags)
    rest = raw[2 * n:].reshape(5, n, n)
    return z, zb, rest[0], rest[1], rest[2], rest[3], rest[4]


def reference(z, zb, cp, f, i, g, cbar):
    import numpy as np
    z, zb, cp, f, i, g, cbar = (x.astype(np.float64) for x in (z, zb, cp, f, i, g, cbar))
    sig = lambda x: 1 / (1 + np.exp(-x))
    si, sf, tg = sig(i), sig(f), np.tanh(g)
    flush = (z == 1) & np.ones_like(cp, dtype=bool)
    copy = ~flush & (zb == 0)
    update = ~flush & ~copy
    c = np.where(flush, si * tg, np.where(copy, cp, sf * cp + si * tg))
    dcp = cbar * np.where(copy, 1.0, np.where(update, sf, 0.0))
    df = cbar * np.where(update, sf * (1 - sf) * cp, 0.0)
    di = cbar * np.where(copy, 0.0, si * (1 - si) * tg)
    dg = cbar * np.where(copy, 0.0, si * (1 - tg * tg))
    return [c, dcp, df, di, dg, np.zeros(z.shape), np.zeros(zb.shape)]


def max_error(got, ref):
    import numpy as np
    worst = 0.0
    for a, b in zip(got, ref):
        a = np.asarray(a, dtype=np.float64).reshape(b.shape)
        err = np.max(np.abs(a - b) / np.maximum(np.abs(b), 1.0)) if b.size else 0.0
        worst = max(worst, float(err)) if np.isfinite(err) else float("inf")
    return worst


def timed(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def torch_impls(data):
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
    t = [torch.from_numpy(x.copy()) for x in data]

    def step(cell):
        xs = [x.clone().requires_grad_(True) for x in t[:6]]
        c = cell(*xs)
        (c * t[6]).sum().backward()
        return [c.detach()] + [x.grad for x in (xs[2], xs[3], xs[4], xs[5], xs[0], xs[1])]

    def cell(z, zb, cp, f, i, g):
        si, sf, tg = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g)
        return torch.where(z == 1, si * tg, torch.where(zb == 0, cp, sf * cp + si * tg))

    yield "torch-eager-where", lambda: step(cell)
    compiled = torch.compile(cell)
    yield "torch-compile", lambda: step(compiled)


def jax_impls(data):
    import jax
    import jax.numpy as jnp

    def cell(z, zb, cp, f, i, g):
        si, sf, tg = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g)
        return jnp.where(z == 1, si * tg, jnp.where(zb == 0, cp, sf * cp + si * tg))

    def loss(z, zb, cp, f, i, g, cbar):
        c = cell(z, zb, cp, f, i, g)
        return jnp.sum(c * cbar), c

    grad = jax.jit(jax.grad(loss, argnums=(2, 3, 4, 5, 0, 1), has_aux=True))
    args = [jnp.asarray(x) for x in data]

    def run():
        grads, c = grad(*args)
        jax.block_until_ready(grads)
        return [c] + list(grads)

    yield "jax-jit-grad-where", run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--sizes", default="512")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    print("impl,variant,layout,n,median_ms,min_ms,max_rel_error,status")
    try:
        import numpy  # noqa: F401
    except ImportError:
        for name in IMPLS:
            print(f"{name},full,rows,0,0,0,0,not installed (numpy missing)")
        return
    for framework, make in (("torch", torch_impls), ("jax", jax_impls)):
        try:
            __import__(framework)
        except ImportError:
            for name in IMPLS:
                if name.startswith(framework):
                    print(f"{name},full,rows,0,0,0,0,not installed")
            continue
        for n in (int(s) for s in a.sizes.split(",")):
            for layout in ("rows", "columns"):
                data = load(os.path.join(a.dir, f"n{n}_{layout}.bin"), n, layout)
                ref = reference(*data)
                for name, fn in make(data):
                    try:
                        med, mn = timed(fn, a.reps, a.warmup)
                        err = max_error(fn(), ref)
                        status = "ok" if err <= 1e-5 else "FAILED"
                        print(f"{name},full,{layout},{n},{med:.6g},{mn:.6g},{err:.3g},{status}", flush=True)
                    except Exception as e:  # a peer that breaks is reported, not hidden
                        msg = str(e).splitlines()[0][:60].replace(",", ";") if str(e) else type(e).__name__
                        print(f"{name},full,{layout},{n},0,0,0,error: {msg}", flush=True)


if __name__ == "__main__":
    main()
