"""Intrinsics of the NumPy implementations (:mod:`.npimpl`), lowered by :mod:`.arrayexpr`.

Each is a plain Python function with the meaning its docstring gives, so
that the method tables key on it like on any other callee.
"""


def element(x, *index):
    """``x[index]`` of an array, expression or number, ``index`` in ``x``'s own shape, unchecked."""
    return x[index] if index else x


def broadcast_element(x, *index):
    """The element at ``index`` of ``x`` broadcast to a shape of ``len(index)`` axes, unchecked."""
    return x[index[len(index) - x.ndim:]] if hasattr(x, "ndim") else x


def check_broadcast(x, shape):
    """ValueError unless ``x`` broadcasts to ``shape`` (NumPy's rule)."""


def same_shape(*xs):
    """Whether every array among ``xs`` (and inside expressions) has one and the same shape."""
    shapes = {x.shape for x in xs if hasattr(x, "shape")}
    return len(shapes) <= 1


def exact(x):
    """``x``, known to need no broadcasting (:func:`same_shape` held): its arrays are indexed directly."""
    return x


def fmaximum(a, b):
    """The larger of two numbers; NaN if either is NaN (LLVM's ``llvm.maximum``, vectorised reductions)."""
    return a if a != a or a >= b else b


def fminimum(a, b):
    """The smaller of two numbers; NaN if either is NaN (``llvm.minimum``)."""
    return a if a != a or a <= b else b


def overlaps(out, src):
    """Whether an array of ``src`` shares memory with ``out`` other than element for element
    (the same data, strides and shape): a fused assignment would read what it already wrote."""
    return False


def new_array(shape, dt):
    """A new C-ordered array of ``shape`` (a tuple of integers) and scalar type ``dt``, uninitialised
    (an intrinsic: only compiled code calls it)."""
    raise NotImplementedError("new_array is an intrinsic of compiled code")


def zeroed_array(shape, dt):
    """:func:`new_array` filled with zeros."""
    raise NotImplementedError("zeroed_array is an intrinsic of compiled code")
