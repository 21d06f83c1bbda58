"""The cache-backed compile service (``gpuc serve``) and its client.

See ``docs/cache.md``. The server needs ``pip install 'gpucompiler[service]'``.
"""

from .client import ServiceClient

__all__ = ["ServiceClient"]
