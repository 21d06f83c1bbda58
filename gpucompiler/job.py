"""Compile jobs: a source plus a configuration (keyed by :func:`gpucompiler.identity.job_key`)."""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

import attrs

from .config import CompilerConfig


class Source(Protocol):
    """What a job compiles.

    ``fingerprint()`` is stable data describing its content (part of the job
    key; a source whose content depends on the job's rules may define
    ``fingerprint_for(job)`` instead); ``generate_ir(job)`` produces the LLVM IR text the pipeline starts from.
    """

    entry: str

    def fingerprint(self) -> Any: ...

    def generate_ir(self, job: CompilerJob) -> str: ...


@attrs.frozen
class LLVMSource:
    """LLVM IR text with the name of its entry function."""

    ir_text: str = attrs.field(repr=False)
    entry: str

    def fingerprint(self) -> Any:
        return {"llvm": hashlib.sha256(self.ir_text.encode()).hexdigest(), "entry": self.entry}

    def generate_ir(self, job: CompilerJob) -> str:
        """IR generation for this source: the text itself."""
        return self.ir_text


@attrs.frozen
class CompilerJob:
    """One unit of compilation: ``source`` compiled under ``config``."""

    source: Any
    config: CompilerConfig

    @property
    def name(self) -> str:
        """The name of the entry function in the output."""
        return self.config.name or self.source.entry

    @property
    def target(self):
        return self.config.target

    def source_fingerprint(self):
        """The source's ``fingerprint_for(self)`` when it has one, else its ``fingerprint()``."""
        fingerprint_for = getattr(self.source, "fingerprint_for", None)
        return fingerprint_for(self) if fingerprint_for is not None else self.source.fingerprint()
