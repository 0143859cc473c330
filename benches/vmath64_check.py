"""Max error in ulps of src/kernels/vmath64.rs's functions, against mpmath at 160 bits.

Run `cargo test --release --lib dump_for_mpmath -- --ignored` first: it writes (x, f(x))
pairs to /tmp/vm_dump/<name>.bin. Then `python3 benches/vmath64_check.py [names...]`.
"""

import math
import sys

import mpmath as mp
import numpy as np

mp.mp.prec = 160
TINY = 2.2250738585072014e-308


def erfc_ref(x):
    try:
        return mp.erfc(x)
    except OverflowError:  # mpmath's series check overflows for some arguments
        with mp.workprec(400):
            return +(1 - mp.erf(x))


REF = {
    "exp": mp.exp,
    "exp2": lambda x: mp.mpf(2) ** x,
    "expm1": mp.expm1,
    "log": mp.log,
    "log2": lambda x: mp.log(x, 2),
    "log10": mp.log10,
    "log1p": mp.log1p,
    "sin": mp.sin,
    "cos": mp.cos,
    "tan": mp.tan,
    "tanh": mp.tanh,
    "sinh": mp.sinh,
    "cosh": mp.cosh,
    "sigmoid": lambda x: 1 / (1 + mp.exp(-x)),
    "asinh": mp.asinh,
    "acosh": mp.acosh,
    "atanh": mp.atanh,
    "atan": mp.atan,
    "asin": mp.asin,
    "acos": mp.acos,
    "erf": mp.erf,
    "erfc": erfc_ref,
}


def ulp_error(got, exact):
    """|got - exact| in ulps of exact (2^-1074 below the normal range)."""
    if isinstance(exact, mp.mpc):  # outside the real domain: NaN expected
        return 0.0 if math.isnan(got) else math.inf
    if mp.isinf(exact) or abs(exact) > sys.float_info.max:
        return 0.0 if math.isinf(got) else math.inf
    if math.isinf(got) or math.isnan(got):
        return math.inf
    t = float(exact)
    u = 5e-324 if abs(t) < TINY else math.ulp(t)
    return float(abs(mp.mpf(got) - exact) / u)


def main():
    names = sys.argv[1:] or [*REF, "atan2"]
    for name in names:
        path = f"/tmp/vm_dump/{name}.bin"
        if name == "atan2":
            a = np.fromfile(path, dtype="<f8").reshape(-1, 3)
            errs = (
                (ulp_error(g, mp.atan2(mp.mpf(y), mp.mpf(x))), (y, x))
                for y, x, g in a
                if y != 0 and x != 0  # signed zeros: mpmath has none (the unit tests check them)
            )
        else:
            a = np.fromfile(path, dtype="<f8").reshape(-1, 2)
            f = REF[name]
            errs = ((ulp_error(g, f(mp.mpf(x))), (x,)) for x, g in a)
        err, at = max(errs, key=lambda t: t[0])
        print(f"{name}: max {err:.3f} ulp at {at} ({len(a)} points)", flush=True)


if __name__ == "__main__":
    main()
