"""Kernels of benchmarks/call_speed.py (plain Python, compiled by each engine): calls, not work."""

G1, G2, G3, G4, G5, G6, G7, G8 = 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0


def add(a, b):
    return a + b


def two_arrays(a, b):
    return a[0] + b[0]


def globals8(x):
    return x * G1 + G2 + G3 + G4 + G5 + G6 + G7 + G8


def first(a, b):  # the one-time set-up of a fresh process (another function, also from the cache)
    return a * b - 1
