#!/usr/bin/env python3
"""Generates the high-precision reference table for tests/dual/accuracy_test.cc (run once).

Usage: python3 -m venv /tmp/v && /tmp/v/bin/pip install mpmath
       /tmp/v/bin/python tests/data/accuracy/generate.py > tests/data/accuracy/reference.txt

Each line: `op type x [y] value d/dx [d/dy]`. Inputs are exactly representable in the type
(float32 or float64) and written as hex floats; references are the exact function and
derivative at that input, from mpmath at 60 digits, written with 25 significant digits (or
nan / inf / -inf). The points are drawn with a fixed seed from per-op domains that include the
tails (where derivatives get tiny or values overflow) and a few edge points.
"""
import math
import random
import struct

import mpmath as mp

mp.mp.dps = 60
POINTS = 120  # random points per op and type, plus the edge points

F32_MAX, F64_MAX = 3.4028234663852886e38, 1.7976931348623157e308


def round_to(t, x):
    if t == "f32":
        try:
            return struct.unpack("f", struct.pack("f", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    return float(x)


def fmt(v):
    if isinstance(v, mp.mpf) or isinstance(v, mp.mpc):
        if isinstance(v, mp.mpc):
            if abs(v.imag) > 0:
                return "nan"
            v = v.real
        if mp.isnan(v):
            return "nan"
        if mp.isinf(v):
            return "inf" if v > 0 else "-inf"
        return mp.nstr(v, 25, min_fixed=1, max_fixed=0, strip_zeros=False)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return mp.nstr(mp.mpf(v), 25, min_fixed=1, max_fixed=0, strip_zeros=False)


NAN = mp.mpf("nan")


def safe(f):
    def g(*a):
        try:
            r = f(*a)
        except (ValueError, ZeroDivisionError, OverflowError):
            return NAN
        if isinstance(r, mp.mpc):
            return NAN if r.imag != 0 else r.real
        return r
    return g


# Samplers: each returns a float (later rounded to the type).
def uni(lo, hi):
    return lambda r: r.uniform(lo, hi)


def logu(lo, hi):
    return lambda r: math.exp(r.uniform(math.log(lo), math.log(hi)))


def slog(lo, hi):
    return lambda r: math.copysign(math.exp(r.uniform(math.log(lo), math.log(hi))), r.random() - 0.5)


def near_one(kmax):  # 1 - 10^-k, both signs
    return lambda r: math.copysign(1 - 10 ** (-r.uniform(0.3, kmax)), r.random() - 0.5)


def by_type(f32, f64):
    return {"f32": f32, "f64": f64}


mpf = mp.mpf
LN2 = mp.log(2)

# name: (arity, value, [derivatives], {type: [samplers]}, {type: [edge points]})
UNARY = {
    "exp": (lambda x: mp.exp(x), lambda x: mp.exp(x), by_type([uni(-10, 10), uni(-104, 89)], [uni(-10, 10), uni(-745, 710)])),
    "exp2": (lambda x: mp.power(2, x), lambda x: mp.power(2, x) * LN2, by_type([uni(-10, 10), uni(-150, 128)], [uni(-10, 10), uni(-1075, 1024)])),
    "expm1": (lambda x: mp.expm1(x), lambda x: mp.exp(x), by_type([slog(1e-8, 1), uni(-100, 89)], [slog(1e-16, 1), uni(-745, 710)])),
    "log": (safe(mp.log), lambda x: 1 / x if x != 0 else NAN, by_type([logu(1e-45, 3e38), uni(0.5, 2), uni(-2, -0.1)], [logu(1e-320, 1e308), uni(0.5, 2), uni(-2, -0.1)])),
    "log1p": (safe(lambda x: mp.log1p(x)), lambda x: 1 / (1 + x) if x > -1 else NAN, by_type([slog(1e-10, 0.99), logu(1, 1e38), uni(-3, -1.01)], [slog(1e-20, 0.99), logu(1, 1e300), uni(-3, -1.01)])),
    "log2": (safe(lambda x: mp.log(x, 2)), lambda x: 1 / (x * LN2) if x > 0 else NAN, by_type([logu(1e-45, 3e38), uni(0.5, 2)], [logu(1e-320, 1e308), uni(0.5, 2)])),
    "log10": (safe(lambda x: mp.log10(x)), lambda x: 1 / (x * mp.log(10)) if x > 0 else NAN, by_type([logu(1e-45, 3e38), uni(0.5, 2)], [logu(1e-320, 1e308), uni(0.5, 2)])),
    "sqrt": (safe(mp.sqrt), lambda x: 1 / (2 * mp.sqrt(x)) if x > 0 else NAN, by_type([logu(1e-45, 3e38), uni(-2, -0.1)], [logu(1e-320, 1e308), uni(-2, -0.1)])),
    "cbrt": (lambda x: mp.cbrt(x) if x >= 0 else -mp.cbrt(-x), lambda x: 1 / (3 * mp.cbrt(x * x)), by_type([slog(1e-38, 3e38)], [slog(1e-300, 1e308)])),
    "rsqrt": (safe(lambda x: 1 / mp.sqrt(x)), lambda x: -mp.power(x, mpf(-1.5)) / 2 if x > 0 else NAN, by_type([logu(1e-38, 3e38)], [logu(1e-300, 1e308)])),
    "square": (lambda x: x * x, lambda x: 2 * x, by_type([slog(1e-15, 1e19)], [slog(1e-150, 1e154)])),
    "sin": (mp.sin, mp.cos, by_type([uni(-10, 10), slog(1e-6, 1e5)], [uni(-10, 10), slog(1e-6, 1e8)])),
    "cos": (mp.cos, lambda x: -mp.sin(x), by_type([uni(-10, 10), slog(1e-6, 1e5)], [uni(-10, 10), slog(1e-6, 1e8)])),
    "tan": (mp.tan, lambda x: 1 / mp.cos(x) ** 2, by_type([uni(-1.5, 1.5), slog(1e-6, 1e4)], [uni(-1.5, 1.5), slog(1e-6, 1e6)])),
    "asin": (safe(mp.asin), lambda x: 1 / mp.sqrt(1 - x * x) if abs(x) < 1 else NAN, by_type([uni(-1, 1), near_one(7), uni(1.01, 2)], [uni(-1, 1), near_one(15), uni(1.01, 2)])),
    "acos": (safe(mp.acos), lambda x: -1 / mp.sqrt(1 - x * x) if abs(x) < 1 else NAN, by_type([uni(-1, 1), near_one(7)], [uni(-1, 1), near_one(15)])),
    "atan": (mp.atan, lambda x: 1 / (1 + x * x), by_type([uni(-10, 10), slog(1e-30, 3e38)], [uni(-10, 10), slog(1e-300, 1e308)])),
    "sinh": (mp.sinh, mp.cosh, by_type([uni(-5, 5), slog(1e-8, 89)], [uni(-5, 5), slog(1e-16, 710)])),
    "cosh": (mp.cosh, mp.sinh, by_type([uni(-5, 5), slog(1e-8, 89)], [uni(-5, 5), slog(1e-16, 710)])),
    "tanh": (mp.tanh, lambda x: 1 / mp.cosh(x) ** 2, by_type([uni(-5, 5), slog(1e-8, 50)], [uni(-5, 5), slog(1e-16, 380)])),
    "asinh": (mp.asinh, lambda x: 1 / mp.sqrt(1 + x * x), by_type([uni(-10, 10), slog(1e-30, 3e38)], [uni(-10, 10), slog(1e-300, 1e308)])),
    "acosh": (safe(mp.acosh), lambda x: 1 / mp.sqrt(x * x - 1) if x > 1 else NAN, by_type([lambda r: 1 + 10 ** r.uniform(-7, 1), logu(1.5, 3e38)], [lambda r: 1 + 10 ** r.uniform(-15, 1), logu(1.5, 1e308)])),
    "atanh": (safe(mp.atanh), lambda x: 1 / (1 - x * x) if abs(x) < 1 else NAN, by_type([uni(-1, 1), near_one(7), uni(1.01, 3)], [uni(-1, 1), near_one(15), uni(1.01, 3)])),
    "erf": (mp.erf, lambda x: 2 / mp.sqrt(mp.pi) * mp.exp(-x * x), by_type([uni(-3, 3), slog(1e-10, 10)], [uni(-3, 3), slog(1e-20, 27)])),
    "erfc": (mp.erfc, lambda x: -2 / mp.sqrt(mp.pi) * mp.exp(-x * x), by_type([uni(-3, 3), uni(-4, 10)], [uni(-3, 3), uni(-6, 27)])),
    "erfinv": (safe(mp.erfinv), lambda x: mp.sqrt(mp.pi) / 2 * mp.exp(mp.erfinv(x) ** 2) if abs(x) < 1 else NAN, by_type([uni(-1, 1), near_one(7), slog(1e-30, 1e-3)], [uni(-1, 1), near_one(16), slog(1e-300, 1e-3)])),
    "lgamma": (lambda x: mp.log(abs(mp.gamma(x))), lambda x: mp.digamma(x), by_type([logu(1e-6, 1e6), uni(0.5, 3), uni(-10, 0)], [logu(1e-12, 1e12), uni(0.5, 3), uni(-10, 0)])),
    "tgamma": (mp.gamma, lambda x: mp.gamma(x) * mp.digamma(x), by_type([uni(0.01, 35), uni(-10, 0)], [uni(0.01, 171), uni(-10, 0)])),
    "digamma": (mp.digamma, lambda x: mp.psi(1, x), by_type([logu(1e-6, 1e6), uni(0.5, 3), uni(-10, 0)], [logu(1e-12, 1e12), uni(0.5, 3), uni(-10, 0)])),
    "sigmoid": (lambda x: 1 / (1 + mp.exp(-x)), lambda x: mp.exp(-x) / (1 + mp.exp(-x)) ** 2, by_type([uni(-10, 10), uni(-110, 90)], [uni(-10, 10), uni(-760, 710)])),
    "softplus": (lambda x: mp.log1p(mp.exp(x)), lambda x: 1 / (1 + mp.exp(-x)), by_type([uni(-10, 10), uni(-110, 90)], [uni(-10, 10), uni(-760, 710)])),
}

BINARY = {
    "pow": (safe(lambda a, b: mp.power(a, b)), safe(lambda a, b: b * mp.power(a, b - 1) if b != 0 else mpf(0)),
            safe(lambda a, b: mp.log(a) * mp.power(a, b) if a > 0 else NAN),
            by_type([(logu(1e-3, 1e3), uni(-10, 10)), (logu(1e-38, 1), uni(0.01, 1.5)), (uni(-4, -0.1), lambda r: float(r.randint(-6, 6)))],
                    [(logu(1e-3, 1e3), uni(-10, 10)), (logu(1e-300, 1), uni(0.01, 1.5)), (uni(-4, -0.1), lambda r: float(r.randint(-6, 6)))])),
    "atan2": (mp.atan2, lambda a, b: b / (a * a + b * b), lambda a, b: -a / (a * a + b * b),
              by_type([(slog(1e-3, 1e3), slog(1e-3, 1e3)), (slog(1e-30, 1e30), slog(1e-30, 1e30))],
                      [(slog(1e-3, 1e3), slog(1e-3, 1e3)), (slog(1e-300, 1e300), slog(1e-300, 1e300))])),
    "hypot": (lambda a, b: mp.sqrt(a * a + b * b), lambda a, b: a / mp.sqrt(a * a + b * b), lambda a, b: b / mp.sqrt(a * a + b * b),
              by_type([(slog(1e-3, 1e3), slog(1e-3, 1e3)), (slog(1e-30, 1e30), slog(1e-30, 1e30))],
                      [(slog(1e-3, 1e3), slog(1e-3, 1e3)), (slog(1e-300, 1e300), slog(1e-300, 1e300))])),
    "logaddexp": (lambda a, b: mp.log(mp.exp(a) + mp.exp(b)), lambda a, b: 1 / (1 + mp.exp(b - a)), lambda a, b: 1 / (1 + mp.exp(a - b)),
                  by_type([(uni(-20, 20), uni(-20, 20)), (uni(-100, 100), uni(-100, 100))],
                          [(uni(-20, 20), uni(-20, 20)), (uni(-800, 800), uni(-800, 800))])),
    "fmod": (lambda a, b: a - mp.floor(abs(a / b)) * mp.sign(a / b) * b, lambda a, b: mpf(1), lambda a, b: -mp.floor(abs(a / b)) * mp.sign(a / b),
             by_type([(uni(-100, 100), slog(0.1, 10))], [(uni(-100, 100), slog(0.1, 10))])),
    "div": (lambda a, b: a / b, lambda a, b: 1 / b, lambda a, b: -a / (b * b),
            by_type([(slog(1e-10, 1e10), slog(1e-10, 1e10))], [(slog(1e-100, 1e100), slog(1e-100, 1e100))])),
}

def digamma_roots(ks):
    """Doubles at digamma's negative roots (one in each (-k-1, -k)), where its reflection cancels:
    the double nearest each root, its two neighbours, and points 1e-9 and 1e-5 (relative) away."""
    pts = []
    for k in ks:
        lo, hi = mp.mpf(-k - 1), mp.mpf(-k)  # psi rises from -inf to +inf in between
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if mp.digamma(mid) > 0 else (mid, hi)
        d = float((lo + hi) / 2)
        pts += [(d,), (math.nextafter(d, -math.inf),), (math.nextafter(d, math.inf),)]
        pts += [(d * (1 + r),) for r in (-1e-5, -1e-9, 1e-9, 1e-5)]
    return pts


ROOTS = digamma_roots(list(range(12)) + [99, 10**6])

# Edge points with exact expectations (limits at infinity, NaN propagation).
EDGES = {
    "digamma": ROOTS, "lgamma": ROOTS, "tgamma": digamma_roots(range(12)),
    "atan2": [(math.inf, 1.0), (1.0, math.inf), (math.inf, math.inf), (-2.0, -math.inf)],
    "hypot": [(math.inf, 1.0), (-3.0, math.inf)],
    # Results near 0 (e^a + e^b ~ 1): d/da log(e^a + e^b) times a over the result is ~45, so the
    # rounding of the inputs' sum costs ~45 ulp there (the function's conditioning).
    "logaddexp": [(-0.5316926618806905, -0.9037429149859204), (-0.0184306, -3.9592023)],
    "log": [(-1.0,)], "log1p": [(-2.0,)], "atanh": [(2.0,)],
    "sigmoid": [(-200.0,), (-1000.0,)], "tanh": [(30.0,), (-300.0,)],
}


def edge_refs(op, pt):
    if op == "atan2":
        a, b = pt
        return mp.atan2(a, b), mpf(0), mpf(0)
    if op == "hypot":
        a, b = pt
        return mpf("inf"), (mp.sign(a) if math.isinf(a) else mpf(0)), (mp.sign(b) if math.isinf(b) else mpf(0))
    f, da, db, _ = BINARY[op]
    A, B = mpf(pt[0]), mpf(pt[1])
    return f(A, B), da(A, B), db(A, B)


def main():
    rng = random.Random(20261123)
    print("# generated by tests/data/accuracy/generate.py (mpmath %s, %d digits); do not edit" % (mp.__version__, mp.mp.dps))
    for op, (f, df, doms) in UNARY.items():
        for t in ("f32", "f64"):
            pts = [round_to(t, rng.choice(doms[t])(rng)) for _ in range(POINTS)]
            pts += [round_to(t, p[0]) for p in EDGES.get(op, [])]
            for x in pts:
                if math.isinf(x) or math.isnan(x):
                    continue
                X = mpf(x)
                y = safe(f)(X)
                d = safe(df)(X) if not mp.isnan(y) else NAN
                print(op, t, x.hex(), fmt(y), fmt(d))
    for op, (f, da, db, doms) in BINARY.items():
        for t in ("f32", "f64"):
            for _ in range(POINTS):
                sa, sb = rng.choice(doms[t])
                a, b = round_to(t, sa(rng)), round_to(t, sb(rng))
                if any(math.isinf(v) or math.isnan(v) for v in (a, b)):
                    continue
                A, B = mpf(a), mpf(b)
                y = safe(f)(A, B)
                ra = safe(da)(A, B) if not mp.isnan(y) else NAN
                rb = safe(db)(A, B) if not mp.isnan(y) else NAN
                print(op, t, a.hex(), b.hex(), fmt(y), fmt(ra), fmt(rb))
            for pt in EDGES.get(op, []):
                a, b = (round_to(t, v) for v in pt)
                y, ra, rb = edge_refs(op, (a, b))
                print(op, t, a.hex(), b.hex(), fmt(y), fmt(ra), fmt(rb))


if __name__ == "__main__":
    main()
