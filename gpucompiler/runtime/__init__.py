"""Loading and calling compiled code: the CPU JIT (:mod:`.cpu`)."""

from .cpu import CPULibrary, LinkError

__all__ = ["CPULibrary", "LinkError"]
