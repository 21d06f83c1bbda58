"""Reverse-mode AD across kernel launches: a launch tape, generated and hand-written kernel gradients."""

from .gradients import KernelGradientError, register_gradient
from .tape import LaunchTape, LaunchTapeError

__all__ = ["KernelGradientError", "LaunchTape", "LaunchTapeError", "register_gradient"]
