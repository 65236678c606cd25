"""Connecting to a Dask cluster, or starting one on this machine.

Dask and distributed are an optional extra; they are imported here, when a
distributed run starts, and their absence is an FglError saying how to get
them.
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Iterator

from fgl.errors import FglError

EXTRA = "pip install 'fgl[dask]'"


def require_dask() -> None:
    """Refuse, with the way out, when dask.distributed is not installed."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise FglError(f"training on a Dask cluster needs dask and distributed: {EXTRA}"
                       ) from None


def check_target(dask: Any, workers: int | None) -> None:
    """Refuse a cluster given twice, or a worker count that is no count."""
    if dask is not None and workers:
        raise FglError("give a scheduler (dask=...) or a number of local workers "
                       "(dask_workers=N), not both")
    if workers is not None and not (isinstance(workers, int) and workers >= 1):
        raise FglError(f"dask_workers must be a whole number of worker processes >= 1; found "
                       f"{workers!r}")


@contextlib.contextmanager
def connect(dask: Any = None, workers: int | None = None) -> Iterator[Any]:
    """A ``distributed.Client``: ``dask`` itself when it is one, a client of
    the scheduler at address ``dask`` (``tcp://host:8786``), or of a new
    local cluster of ``workers`` single-threaded worker processes (closed
    on exit, as is a client made here)."""
    check_target(dask, workers)
    require_dask()
    from distributed import Client, LocalCluster

    if dask is not None and not isinstance(dask, str):
        if not hasattr(dask, "submit") or not hasattr(dask, "scatter"):
            raise FglError(f"dask= takes a scheduler address or a distributed.Client; found "
                           f"{type(dask).__name__}")
        yield dask
        return
    if dask is not None:
        try:
            client = Client(dask, timeout="20s")
        except (OSError, TimeoutError, ValueError) as e:   # (ValueError: not an address)
            raise FglError(f"cannot reach the Dask scheduler at {dask}: {e}; give an address "
                           "like tcp://host:8786") from None
        with client:
            yield client
        return
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        yield client


def worker_threads(client: Any, jobs: int) -> int:
    """Threads each worker's engine uses: ``jobs`` when set, else the
    worker's share of its machine's cores (workers on one machine split it)."""
    if jobs > 0:
        return jobs
    info = client.scheduler_info()["workers"]
    hosts: dict[str, int] = {}
    for w in info.values():
        hosts[w["host"]] = hosts.get(w["host"], 0) + 1
    cores = os.cpu_count() or 1
    return max(1, cores // max(hosts.values(), default=1))
