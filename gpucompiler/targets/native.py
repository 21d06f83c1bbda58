"""The host CPU target."""

from __future__ import annotations

import attrs

from .base import Target


@attrs.frozen
class NativeTarget(Target):
    """The host CPU. Empty ``cpu``/``features`` mean the host's own."""

    name = "native"

    cpu: str = ""
    features: str = ""
