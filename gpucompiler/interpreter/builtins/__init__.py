"""The base rule sets: numbers, ``math`` (with the PTX overlay), tuples and arrays."""

from . import complexes, containers, creation, mathlib, numbers, output, parallel, records, views  # noqa: F401  (registration)
