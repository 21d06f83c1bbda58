"""Compile jobs: a source plus a configuration (keyed by :func:`gpucompiler.identity.job_key`).

A job's source is any object of the :class:`Source` protocol; what more it
can do is declared by the narrower protocols below, which the driver and
the cache test with ``isinstance``:

* :class:`JobSource`: its content depends on the job's rules (``fingerprint_for(job)``);
* :class:`RecordedSource`: a two-level cache key (an index fingerprint known without inference,
  and a dependency record checked on a hit, docs/cache.md).
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol, runtime_checkable

import attrs

from .config import CompilerConfig
from .target import Target


@runtime_checkable
class Source(Protocol):
    """What a job compiles: ``entry`` names its entry function, ``fingerprint()`` is stable data
    describing its content (part of the job key), ``generate_ir(job)`` the LLVM IR text the
    pipeline starts from."""

    @property
    def entry(self) -> str: ...

    def fingerprint(self) -> Any: ...

    def generate_ir(self, job: CompilerJob) -> str: ...


@runtime_checkable
class JobSource(Source, Protocol):
    """A source whose content depends on the job's target and plugins (their rules decide what
    Python code reads): the job key takes ``fingerprint_for(job)`` instead of ``fingerprint()``."""

    def fingerprint_for(self, job: CompilerJob) -> Any: ...


@runtime_checkable
class RecordedSource(Source, Protocol):
    """A source with a two-level cache key: an index entry keyed without inference holds the
    dependency record that leads to the full key (:mod:`gpucompiler.cache.core`)."""

    def index_fingerprint(self) -> Any:
        """The part of the fingerprint known without inference (code and argument types)."""
        ...

    def dependency_record(self, job: CompilerJob) -> dict[str, Any] | None:
        """What inference read under ``job``, as JSON data :meth:`verify_record` checks again."""
        ...

    def verify_record(self, job: CompilerJob, record: dict[str, Any]) -> Any:
        """The full fingerprint when ``record`` still holds in this process, else None."""
        ...

    def discard_verified(self, job: CompilerJob) -> None:
        """Forget a fingerprint :meth:`verify_record` rebuilt (no code was found under it)."""
        ...


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

    source: Source
    config: CompilerConfig

    @property
    def name(self) -> str:
        """The name of the entry function in the output."""
        return self.config.name or self.source.entry

    @property
    def target(self) -> Target:
        return self.config.target

    def source_fingerprint(self) -> Any:
        """The source's ``fingerprint_for(self)`` when it is a :class:`JobSource`, else its ``fingerprint()``."""
        source = self.source
        return source.fingerprint_for(self) if isinstance(source, JobSource) else source.fingerprint()
