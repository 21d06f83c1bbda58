"""The package version (part of every cache key), in a module of its own so any room can read it."""

__version__ = "0.1.0"
