"""The ``kernels`` family of the differential fuzzer (tests/frontend/fuzz_programs.py): random ``@kernel``s,
CPython as the oracle.

Each program is one kernel over float arrays (float32/float64, contiguous, strided or reversed), an
integer array (int8 to uint32, int64), a float and an int scalar: per-thread statements (branches,
loops with constant and data-dependent trip counts, ``break``/``continue``, early returns, neighbour
reads, a device helper, ``math`` functions, floor division and modulo of negative numbers, shifts and
bit operations, conversions between ints and floats), stores of every kind of result, atomic updates
(a float sum, an integer histogram, an integer maximum and minimum) and, in some programs, a block
reduction in shared memory with ``syncthreads`` or a warp shuffle (``shfl_down``). The values stay
finite and the integers far from overflow, so every result is defined.

The oracle runs the kernel's own Python code under CPython, thread by thread on NumPy scalars (a
``device`` stand-in gives each thread its indices; ``syncthreads`` becomes ``yield``, so the threads of
a block run in lock step between barriers, a shuffle publishes each lane's value between two steps, and
shared arrays are one NumPy array per block). The kernel then runs on the CPU grid emulation, on the
GPU when ``GPUC_FUZZ_GPU=1`` and one is visible, and its PTX goes through ptxas when
``GPUC_FUZZ_PTXAS=1`` and ptxas is found. A program is ``right`` when every array has the oracle's
values (integers exactly; floats within rounding: float32 arithmetic may be done in float64 by one
side, atomic sums add in another order, libdevice is not libm) and it raises the oracle's exception
class where the oracle raises, a typed compile error is ``typed``, anything else ``wrong`` (or
``untyped``/``crash``/``hang``).

    python -m tests.frontend.fuzz_programs --family kernels --programs 500
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import tempfile

BLOCK = 64
NBINS = 7
FLOAT_TYPES = ("float32", "float64")
INT_TYPES = ("int32", "int64")
#: the integer input array also takes NumPy's small and unsigned types (wrap-around, NEP 50's OverflowError)
INPUT_INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64")
#: how an array argument is laid out: contiguous, every other element of a larger array, reversed
LAYOUTS = ("C", "C", "strided", "reversed")
UNARY = ("math.sin({})", "math.cos({})", "math.tanh({})", "math.sqrt(abs({}))", "math.log(abs({}) + 1.0)",
         "math.exp(min({}, 8.0))", "math.floor({})", "abs({})", "-({})", "math.atan({})")


class _Gen:
    """One kernel's source: expressions over the thread's variables, kept finite and small."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.fvars = ["x[i]", "y[i]", "s"]
        # an element of the integer array is taken as an int64, or in its own type only with another element
        # (wrap-around, no Python int next to it): a static type either way, as compiled code has
        self.ivars = ["np.int64(ia[i])", "i", "m"]
        self.fresh = 0

    def fexpr(self, d: int = 2) -> str:
        rng = self.rng
        if d <= 0 or rng.random() < 0.25:
            return rng.choice([*self.fvars, "x[(i + 1) % n]", "0.5", "1.25", "-2.0", f"float({self.iexpr(0)})"])
        k = rng.random()
        a, b = self.fexpr(d - 1), self.fexpr(d - 1)
        if k < 0.45:
            return f"({a} {rng.choice('+-*')} {b})"
        if k < 0.55:
            return f"({a} / (abs({b}) + 1.0))"
        if k < 0.75:
            return rng.choice(UNARY).format(a)
        if k < 0.82:
            return f"{rng.choice(['min', 'max'])}({a}, {b})"
        if k < 0.87:
            return f"helper({a}, {b})"
        if k < 0.93:
            return f"({a} if {self.cond(d - 1)} else {b})"
        return f"({self.iexpr(d - 1)} * {a})"

    def iexpr(self, d: int = 2) -> str:
        rng = self.rng
        if d <= 0 or rng.random() < 0.25:
            if rng.random() < 0.15:
                return f"np.int64(ia[i] {rng.choice(['+', '-', '*', '&', '|', '^'])} ia[(i + 3) % n])"
            return rng.choice([*self.ivars, str(rng.randint(-9, 9)), "np.int64(ia[(i + 3) % n])"])
        k = rng.random()
        a, b = self.iexpr(d - 1), self.iexpr(d - 1)
        if k < 0.25:
            return f"({a} {rng.choice('+-')} {b})"
        if k < 0.35:  # a small factor: products stay far from int32's range
            return f"({a} * {rng.choice([str(rng.randint(-9, 9)), 'np.int64(ia[i])', 'm'])})"
        if k < 0.5:
            return f"({a} {rng.choice(['//', '%'])} {rng.choice([str(rng.randint(1, 7)), f'(abs({b}) % 5 + 1)', '-3'])})"
        if k < 0.6:
            return f"({a} {rng.choice('&|^')} {rng.randint(0, 63)})"
        if k < 0.68:
            return f"(({a}) {rng.choice(['>>', '<<'])} {rng.randint(0, 3)})"
        if k < 0.78:
            return f"{rng.choice(['min', 'max'])}({a}, {b})"
        if k < 0.84:
            return f"abs({a})"
        if k < 0.92:  # the values stay within +-1e6 (int of a bounded float)
            return f"int(min(max({self.fexpr(d - 1)}, -1000.0), 1000.0))"
        return f"({a} if {self.cond(d - 1)} else {b})"

    def cond(self, d: int) -> str:
        rng = self.rng
        k = rng.random()
        if k < 0.4:
            return f"{self.fexpr(d)} {rng.choice(['<', '>', '<=', '>='])} {self.fexpr(d)}"
        if k < 0.8:
            return f"{self.iexpr(d)} {rng.choice(['<', '==', '!=', '>='])} {self.iexpr(d)}"
        return f"({self.iexpr(d)} % 2 == 0 {rng.choice(['and', 'or'])} {self.fexpr(d)} > 0.0)"

    def bound(self, e: str, kind: str) -> str:
        """``e`` kept small so that values never overflow (an int in [-10^4, 10^4], a float in [-10^4, 10^4])."""
        return f"(np.int64({e}) % 20011 - 10005)" if kind == "int" else f"min(max({e}, -1e4), 1e4)"

    def statements(self, ind: str, n: int, depth: int) -> list[str]:
        rng, out = self.rng, []
        for _ in range(n):
            k = rng.random()
            self.fresh += 1
            if k < 0.35:
                v = f"f{self.fresh}"
                out.append(f"{ind}{v} = {self.bound(self.fexpr(), 'float')}")
                self.fvars.append(v)
            elif k < 0.6:
                v = f"k{self.fresh}"
                out.append(f"{ind}{v} = {self.bound(self.iexpr(), 'int')}")
                self.ivars.append(v)
            elif k < 0.75 and depth > 0:
                v, w = f"f{self.fresh}", f"k{self.fresh}"
                out += [f"{ind}{v} = {self.fexpr(1)}", f"{ind}{w} = {self.iexpr(1)}",
                        f"{ind}if {self.cond(1)}:",
                        f"{ind}    {v} = {self.bound(self.fexpr(), 'float')}",
                        f"{ind}    {w} = {self.bound(self.iexpr(), 'int')}",
                        f"{ind}else:",
                        f"{ind}    {w} = {self.bound(self.iexpr(), 'int')}"]
                self.fvars.append(v)
                self.ivars.append(w)
            elif k < 0.9 and depth > 0:
                v, w, j = f"f{self.fresh}", f"k{self.fresh}", f"j{self.fresh}"
                trips = rng.choice([str(rng.randint(0, 4)), "abs(ia[i]) % 4", "m % 3 + 1"])
                self.ivars.append(j)
                body_f = self.bound(f"{v} * 0.5 + {self.fexpr(1)}", "float")
                body_i = self.bound(f"{w} + {self.iexpr(1)}", "int")
                self.ivars.remove(j)
                if rng.random() < 0.5:
                    loop = [f"{ind}for {j} in range({trips}):"]
                    step = []
                else:
                    loop = [f"{ind}{j} = 0", f"{ind}while {j} < {trips}:"]
                    step = [f"{ind}    {j} += 1"]
                jump = []
                if rng.random() < 0.3:  # leave or skip on data (a while loop's step comes first)
                    word = rng.choice(["break", "continue"] if not step else ["break"])
                    jump = [f"{ind}    if {self.cond(0)}:", f"{ind}        {word}"]
                out += [f"{ind}{v} = 0.0", f"{ind}{w} = 0", *loop, *step,
                        f"{ind}    {v} = {body_f}", *jump, f"{ind}    {w} = {body_i}"]
                self.fvars.append(v)
                self.ivars.append(w)
            else:
                out.append(f"{ind}out[i] = out[i] + {self.bound(self.fexpr(1), 'float')}")
        return out

    def program(self) -> tuple[str, bool]:
        """The module's source; whether its threads run in lock step (a reduction in shared memory or a warp
        shuffle: the oracle runs them as generators)."""
        rng = self.rng
        early = f"        if {self.cond(0)}:\n            return"  # of the arguments only
        body = self.statements("        ", rng.randint(1, 5), 1)
        stores = [f"        out[i] = out[i] + {self.fexpr(3)}", f"        iout[i] = {self.bound(self.iexpr(3), 'int')}"]
        atomics = []
        if rng.random() < 0.5:
            atomics.append(f"        gd.atomic_add(acc, 0, {self.bound(self.fexpr(1), 'float')})")
        if rng.random() < 0.5:
            atomics.append(f"        gd.atomic_add(hist, abs({self.iexpr(1)}) % {NBINS}, 1)")
        if rng.random() < 0.3:  # indexed by the array's own (maybe unsigned, maybe 8-bit) type
            atomics.append(f"        gd.atomic_add(hist, ia[i] % {NBINS}, 2)")
        if rng.random() < 0.3:
            atomics.append(f"        gd.atomic_max(hist, {NBINS}, {self.bound(self.iexpr(1), 'int')})")
        if rng.random() < 0.3:
            atomics.append(f"        gd.atomic_min(hist, {NBINS + 1}, {self.bound(self.iexpr(1), 'int')})")
        shared = rng.random() < 0.3
        shuffle = rng.random() < 0.25  # every thread of the block calls shfl_down (none may return early)
        if not shared and not shuffle and rng.random() < 0.2:  # a thread that returns early (no barrier follows)
            body.insert(0, early)
        src = ["import math", "", "import numpy as np", "", "from gpucompiler import device as gd", "", "",
               "def helper(a, b):", f"    return {rng.choice(['a * 0.5 + b', 'max(a, b) - 0.25 * a', 'a if a > b else b * 0.5'])}",
               "", "",
               "def k(x, y, ia, out, iout, acc, hist, part, s, m):", "    n = out.shape[0]",
               "    i = gd.grid(1)"]
        if shared:
            src += [f"    sm = gd.shared_array({BLOCK}, np.float64)", "    t = gd.threadIdx.x", "    sm[t] = 0.0"]
        src += ["    if i < n:", *body, *stores, *atomics]
        if shuffle:  # each lane reads lane + d of its warp (its own value past the warp's end)
            src += [f"    sv = x[i % n] * {rng.choice(['0.5', '2.0', 's'])} + {rng.choice(['1.0', 'y[i % n]', 'float(i)'])}",
                    f"    w = gd.shfl_down(sv, {rng.choice([1, 2, 5, 16, 31])})",
                    "    if i < n:", "        out[i] = out[i] + w"]
        if shared:
            src += [f"        sm[t] = {self.bound(self.fexpr(1), 'float')}",
                    "    gd.syncthreads()", f"    h = {BLOCK // 2}", "    while h > 0:", "        if t < h:",
                    "            sm[t] += sm[t + h]", "        gd.syncthreads()", "        h //= 2",
                    "    if t == 0:", "        part[gd.blockIdx.x] = sm[0]"]
        return "\n".join(src) + "\n", shared or shuffle


def generate(seed: int) -> tuple[str, bool, dict]:
    """``(source, shared, setting)``: the setting names the dtypes, the size and the scalars."""
    rng = random.Random(seed)
    src, shared = _Gen(rng).program()
    setting = {"fx": rng.choice(FLOAT_TYPES), "fy": rng.choice(FLOAT_TYPES), "fo": rng.choice(FLOAT_TYPES),
               "ia": rng.choice(INPUT_INT_TYPES), "io": rng.choice(INT_TYPES), "hist": rng.choice(INT_TYPES),
               "lx": rng.choice(LAYOUTS), "lo": rng.choice(LAYOUTS),
               "n": rng.choice([1, 5, BLOCK, 100, 3 * BLOCK - 7]), "s": rng.choice([0.5, -1.5, 2.0]),
               "m": rng.choice([0, 3, -4, 11]), "seed": seed}
    return src, shared, setting


def _laid_out(values, layout: str):
    """``values`` as an array of ``layout`` (a view of a larger array for ``strided`` and ``reversed``)."""
    import numpy as np

    if layout == "strided":
        base = np.zeros(2 * values.size, values.dtype)
        base[::2] = values
        return base[::2]
    if layout == "reversed":
        return np.ascontiguousarray(values[::-1])[::-1]
    return values


def arguments(setting: dict) -> list:
    """Fresh NumPy arguments of a setting (the same values every time)."""
    import numpy as np

    r = np.random.default_rng(setting["seed"])
    n = setting["n"]
    blocks = (n + BLOCK - 1) // BLOCK
    return [_laid_out((r.random(n) * 4 - 2).astype(setting["fx"]), setting["lx"]),
            (r.random(n) * 4 - 2).astype(setting["fy"]), r.integers(-50, 51, n).astype(setting["ia"]),
            _laid_out(np.zeros(n, setting["fo"]), setting["lo"]), np.zeros(n, setting["io"]),
            np.zeros(1, np.float64), np.zeros(NBINS + 2, setting["hist"]), np.zeros(blocks, np.float64),
            setting["s"], setting["m"]]


# -- the oracle: the kernel's Python code, thread by thread ------------------------------------------

class _Dim:
    """An index triple; int64 as in compiled kernels (a Python int would be a weak type to NumPy)."""

    def __init__(self, x: int):
        import numpy as np

        self.x, self.y, self.z = np.int64(x), np.int64(0), np.int64(0)


class _Device:
    """What the kernel reads of ``gpucompiler.device``, for one thread at a time."""

    def __init__(self, blocks: int):
        self.blockDim, self.gridDim = _Dim(BLOCK), _Dim(blocks)
        self.threadIdx = self.blockIdx = _Dim(0)
        self.shared: list = []
        self.lanes: dict = {}

    def grid(self, ndim: int):
        return self.blockIdx.x * self.blockDim.x + self.threadIdx.x

    def shared_array(self, shape, dtype):
        return self.shared[0]

    def put(self, value) -> None:
        """A lane's value for the shuffle every lane of the block is at."""
        self.lanes[int(self.threadIdx.x)] = value

    def take(self, delta: int):
        """``shfl_down``: the value of lane + ``delta`` of this thread's warp of 32, its own past the end."""
        t = int(self.threadIdx.x)
        source = t + delta if t % 32 + delta < 32 and t + delta < BLOCK else t
        return self.lanes[source]

    @staticmethod
    def atomic_add(a, i, v):
        old = a[i]
        a[i] = old + v
        return old

    @staticmethod
    def atomic_max(a, i, v):
        old = a[i]
        a[i] = max(old, v)
        return old

    @staticmethod
    def atomic_min(a, i, v):
        old = a[i]
        a[i] = min(old, v)
        return old


#: the oracle's ``float``, ``int`` and ``math``, as compiled code types them (docs/user_guide.md): a
#: Python number that is not a literal is float64/int64 (NumPy 2 would let a float32 operand demote it),
#: and ``math`` of float32 numbers (with literals) computes in float32 (CPython: in float64)
_STRONG = """
import math as _math

import numpy as _np

float, int = _np.float64, _np.int64
_min, _max = min, max


def min(*a):  # one static type: the arguments' promoted one (Python returns one of the objects)
    return _np.result_type(*a).type(_min(*a))


def max(*a):
    return _np.result_type(*a).type(_max(*a))


def _result(args, r):
    if isinstance(r, type(0)):
        return _np.int64(r)
    f32 = any(type(a) is _np.float32 for a in args) and all(type(a) in (_np.float32, type(0), type(0.0)) for a in args)
    return _np.float32(r) if f32 else _np.float64(r)


class _CompiledMath:
    def __getattr__(self, name):
        fn = getattr(_math, name)
        return lambda *a: _result(a, fn(*a))


math = _CompiledMath()
"""


def _oracle_source(src: str) -> str:
    """The kernel as a generator: ``syncthreads()`` yields (threads of a block then run in lock step), a
    shuffle publishes each lane's value, yields, reads its neighbour's and yields again; Python numbers that
    are not literals are NumPy's float64 and int64 (:data:`_STRONG`)."""
    src = src.replace("import math\n", _STRONG, 1)
    src = re.sub(r"^(\s*)(\w+) = gd\.shfl_down\((.*), (\d+)\)$",
                 r"\1gd.put(\3)\n\1yield\n\1\2 = gd.take(\4)\n\1yield", src, flags=re.M)
    return re.sub(r"gd\.syncthreads\(\)", "yield", src)


def run_oracle(fn, args, shared: bool) -> None:
    """Every thread of the launch, block by block (in lock step between barriers when ``shared``)."""
    import numpy as np

    # scalars as compiled code types them: float64 and int64
    args = [*args[:-2], np.float64(args[-2]), np.int64(args[-1])]
    n = args[3].shape[0]
    blocks = (n + BLOCK - 1) // BLOCK
    dev = _Device(blocks)
    fn.__globals__["gd"] = dev
    for b in range(blocks):
        dev.shared, dev.lanes = [np.zeros(BLOCK, np.float64)], {}
        if not shared:
            for t in range(BLOCK):
                dev.blockIdx, dev.threadIdx = _Dim(b), _Dim(t)
                fn(*args)
            continue
        threads = []
        for t in range(BLOCK):
            dev.blockIdx, dev.threadIdx = _Dim(b), _Dim(t)
            g = fn(*args)
            threads.append((t, g))
        live = threads
        while live:
            nxt = []
            for t, g in live:
                dev.blockIdx, dev.threadIdx = _Dim(b), _Dim(t)
                try:
                    next(g)
                    nxt.append((t, g))
                except StopIteration:
                    pass
            live = nxt


def _differs(name: str, want, got, single: bool) -> str:
    """Where ``got`` is not ``want``: integers exactly, floats within float32's rounding when ``single``
    (a float32 input: which intermediate values are float32 is a static type in compiled code and the
    chosen object's type under CPython, as in ``1.25 if c else x[i]``), else float64's."""
    import numpy as np

    if want.dtype != got.dtype or want.shape != got.shape:
        return f"{name}: {want.dtype}{want.shape} != {got.dtype}{got.shape}"
    if want.dtype.kind in "iub":
        bad = np.flatnonzero(want != got)
    else:
        tol = 2e-3 if single else 1e-6
        bad = np.flatnonzero(~np.isclose(got, want, rtol=tol, atol=tol, equal_nan=True))
    if bad.size:
        k = int(bad[0])
        return f"{name}[{k}]: oracle {want[k]!r}, kernel {got[k]!r} ({bad.size} differ)"
    return ""


def _compare(args_want, args_got, where: str) -> str:
    import numpy as np

    single = any(a.dtype == np.float32 for a in args_want[:5])
    for name, w, g in zip(("x", "y", "ia", "out", "iout", "acc", "hist", "part"), args_want, args_got):
        diff = _differs(name, w, g, single)
        if diff:
            return f"{where}: {diff}"
    return ""


def _ptxas_check(k, args) -> str:
    from gpucompiler.toolchain import find_ptxas

    ptx = k.inspect_asm(*args)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as fh:
            fh.write(ptx)
        proc = subprocess.run([find_ptxas(), "-arch=sm_90", src, "-o", os.path.join(tmp, "k.cubin")],
                              capture_output=True, text=True)
    return "" if proc.returncode == 0 else f"ptxas: {proc.stderr.strip()[:200]}"


def run_kernel_program(seed: int, workdir: str) -> tuple[str, str]:
    """A kernel under the oracle, the CPU grid emulation (and the GPU, ptxas when asked), classified."""
    import warnings

    import numpy as np

    from gpucompiler import kernel
    from tests.frontend.fuzz_programs import _is_compile_error, _load, _outcome

    src, shared, setting = generate(seed)
    mod = _load(src, os.path.join(workdir, f"fuzz_kernel_{seed}.py"))
    oracle = _load(_oracle_source(src), os.path.join(workdir, f"fuzz_kernel_oracle_{seed}.py"))
    want = arguments(setting)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = _outcome(lambda: run_oracle(oracle.k, want, shared), ())
    k = kernel(mod.k)
    blocks = (setting["n"] + BLOCK - 1) // BLOCK
    targets = ["cpu"]
    if os.environ.get("GPUC_FUZZ_GPU") == "1" and expected[0] == "ok":  # a raising thread traps on the GPU
        targets.append(None)
    for target in targets:
        got = arguments(setting)
        launch = k[blocks, BLOCK, target] if target else k[blocks, BLOCK]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _outcome(launch, got)
        where = target or "gpu"
        if out[0] == "raises" and _is_compile_error(out):
            return "typed", f"{out[1].__name__}: {str(out[2]).splitlines()[0][:200]}"
        if expected[0] == "raises":  # the emulation stops at the first raising thread: its exception class
            if out[0] != "raises" or not issubclass(out[1], expected[1]):
                shown = f"raised {out[1].__name__}: {out[2]}" if out[0] == "raises" else "no exception"
                return "wrong", f"{where}: CPython raised {expected[1].__name__}: {expected[2]}; {shown}"[:300]
            continue
        if out[0] == "raises":
            return "wrong", f"{where}: raised {out[1].__name__}: {out[2]}"[:300]
        diff = _compare(want, got, where)
        if diff:
            return "wrong", diff[:300]
    if os.environ.get("GPUC_FUZZ_PTXAS") == "1":
        diff = _ptxas_check(k, arguments(setting))
        if diff:
            return "wrong", diff
    return "right", ""


__all__ = ["generate", "run_kernel_program"]
