"""What identifies a job's output in every process: key documents, their digests, code digests.

The cache stores entries under these keys and the service checks them; a job
itself knows nothing of them (:func:`job_key` is the one way to get its key).
"""

from .codeprint import code_digest
from .keys import (FORMAT_VERSION, context, digest, encode_document, index_document, job_key, key_document,
                   machine, plugin_identity)

__all__ = ["FORMAT_VERSION", "code_digest", "context", "digest", "encode_document", "index_document",
           "job_key", "key_document", "machine", "plugin_identity"]
