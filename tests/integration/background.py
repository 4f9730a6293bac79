"""A test module's slow, independent and mostly waiting jobs (a `playbook check` boots three staging servers and
waits on their runs: about 60% of one core), run a few at a time in threads from the module's start, ahead of the
tests that read them. Only the jobs of the tests selected in the module start (a `-k` or `-m` that deselects a
test starts nothing for it); a job's failure is raised where its test reads it, and fails that test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import pytest

T = TypeVar("T")

WORKERS = 2
"""Jobs at a time in one module: the lane's other worker shares the 2 cores."""


class Background(Generic[T]):
    def __init__(self, jobs: dict[str, Callable[[], T]], workers: int = WORKERS) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers)
        self._jobs: dict[str, Future[T]] = {name: self._pool.submit(job) for name, job in jobs.items()}

    def result(self, name: str) -> T:
        """The result of the job made for the test ``name`` (its id, parameters included)."""
        return self._jobs[name].result(timeout=900)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def ahead(request: pytest.FixtureRequest, jobs: dict[str, Callable[[], T]]) -> Iterator[Background[T]]:
    """For a module-scoped fixture: ``jobs`` (test id -> its job) of the tests selected in the requesting module."""
    selected = {item.name for item in request.session.items if getattr(item, "module", None) is request.module}
    background = Background({name: job for name, job in jobs.items() if name in selected})
    try:
        yield background
    finally:
        background.close()
