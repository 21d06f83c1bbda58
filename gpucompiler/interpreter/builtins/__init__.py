"""The base rule sets: numbers, ``math`` (with the PTX overlay), tuples and arrays."""

from . import complexes, containers, mathlib, numbers  # noqa: F401  (registration)
