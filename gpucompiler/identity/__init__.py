"""What identifies a job's output in every process: key documents, their digests, code digests.

The cache stores entries under these keys and the service checks them; a job
itself knows nothing of them (:func:`job_key` is the one way to get its key).
The names load their modules on first use (:mod:`gpucompiler.lazy`): a key that
names no plugin loads neither the plugin registry nor the plugins' identity (:mod:`.keys`).
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .codeprint import code_digest
    from .documents import (FORMAT_VERSION, context, digest, encode_document, index_document, job_key,
                            key_document, machine)
    from .keys import plugin_identity

_LAZY = {"code_digest": ".codeprint", "FORMAT_VERSION": ".documents", "context": ".documents",
         "digest": ".documents", "encode_document": ".documents", "index_document": ".documents",
         "job_key": ".documents", "key_document": ".documents", "machine": ".documents",
         "plugin_identity": ".keys"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["FORMAT_VERSION", "code_digest", "context", "digest", "encode_document", "index_document",
           "job_key", "key_document", "machine", "plugin_identity"]
