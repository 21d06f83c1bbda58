import pytest

from tests.cache.servers import redis_url  # noqa: F401  (fixture)


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """A fresh cache directory in GPUC_CACHE_DIR, no Redis, no service; returns the directory."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("GPUC_CACHE_DIR", str(directory))
    for name in ("GPUC_CACHE_URL", "GPUC_SERVICE_URL", "GPUC_CACHE", "GPUC_CACHE_SIZE", "GPUC_CACHE_SECRET",
                 "GPUC_CACHE_SECRET_FILE", "GPUC_CACHE_SHARED_DIR"):
        monkeypatch.delenv(name, raising=False)
    return directory
