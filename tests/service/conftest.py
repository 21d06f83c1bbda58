import pytest

from tests.cache.servers import redis_url, start_service, stop  # noqa: F401  (fixture)

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """``(url, cache_dir)`` of a ``gpuc serve`` subprocess with a token and a 256 KiB request limit."""
    cache_dir = tmp_path_factory.mktemp("service-cache")
    token_file = cache_dir.parent / "token"
    token_file.write_text(TOKEN)
    url, proc = start_service(cache_dir, "--workers", "2", "--token-file", str(token_file),
                              "--max-request-mb", "0.25", "--timeout", "60")
    try:
        yield url, cache_dir
    finally:
        stop(proc)
