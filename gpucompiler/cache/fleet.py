"""What a shared Redis tier needs beyond get and put: a circuit breaker and a compile lock with a lease.

* :class:`CircuitBreaker`: after a failure (refused, reset, or a socket
  timeout of a Redis that stopped answering) the tier is skipped for
  ``cooldown`` seconds, then one call tries it again; so a stopped server
  costs one timeout per cooldown, not one per operation.
* :class:`LeaseLock`: ``SET lock:<key> <token> NX PX <lease>`` makes one
  process of a fleet (several machines, several ``gpuc serve``) compile a
  job while the others wait for its entry. The holder renews the lease
  every third of it; a holder that dies stops renewing, the lease runs out
  and a waiter takes the lock over. Release and renewal check the token
  (a Lua script), so a holder whose lease ran out cannot free a lock
  another process has taken since.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any
from collections.abc import Callable

from ..errors import CacheError


class TierUnavailable(CacheError):
    """A tier skipped by its circuit breaker (it failed a moment ago)."""


class CircuitBreaker:
    """Skip a tier for ``cooldown`` seconds after a failure; ``trips`` and ``skipped`` count."""

    def __init__(self, cooldown: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self.cooldown = cooldown
        self._clock = clock
        self._open_until = 0.0
        self.last_error = ""
        self.trips = 0
        self.skipped = 0

    def call(self, what: str, op: Callable[..., Any], *args: Any, errors: tuple[type[BaseException], ...] = (), **kwargs: Any) -> Any:
        """``op(*args, **kwargs)``, unless the breaker is open (:class:`TierUnavailable`)."""
        remaining = self._open_until - self._clock()
        if remaining > 0:
            self.skipped += 1
            raise TierUnavailable(f"{what} skipped for {remaining:.0f} more s after a failure ({self.last_error})")
        try:
            result = op(*args, **kwargs)
        except errors as exc:
            self.trips += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            self._open_until = self._clock() + self.cooldown
            raise
        self._open_until = 0.0
        return result


_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class LeaseLock:
    """The fleet-wide compile lock of one key in Redis (see the module docstring)."""

    def __init__(self, call: Callable[..., Any], client: Any, name: str, lease: float, wait: float):
        self._call, self._client, self.name = call, client, name
        self.lease, self.wait = lease, wait
        self.token = os.urandom(16).hex()
        self.took_over = False

    def acquire(self) -> None:
        """Wait for the lock (polling), take it, and keep its lease renewed until :meth:`release`."""
        lease_ms = max(1, int(self.lease * 1000))
        deadline = time.monotonic() + self.wait
        while not self._call("lock", self._client.set, self.name, self.token, nx=True, px=lease_ms):
            self.took_over = True  # (taken after waiting: freed by its holder, or its lease ran out)
            if time.monotonic() > deadline:
                raise CacheError(f"timed out after {self.wait:.0f} s waiting for the fleet compile lock "
                                 f"{self.name} (its holder keeps renewing it)")
            time.sleep(0.02)
        self._stop = threading.Event()
        self._keeper = threading.Thread(target=self._renew, args=(lease_ms,), name="gpuc-lock-lease", daemon=True)
        self._keeper.start()

    def _renew(self, lease_ms: int) -> None:
        while not self._stop.wait(self.lease / 3):
            try:
                self._client.eval(_RENEW, 1, self.name, self.token, lease_ms)
            except Exception:  # Redis gone: the lease runs out, a waiter takes over
                return

    def release(self) -> None:
        self._stop.set()
        self._keeper.join()
        try:
            self._client.eval(_RELEASE, 1, self.name, self.token)
        except Exception:
            pass  # the lease frees it
