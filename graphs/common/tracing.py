"""What every run carries for LangSmith: the metadata its filters key on.

The run-creation handler (`server/auth.py`) stamps these keys on every
run's metadata. Agent Server passes run metadata into the run's config, so the
root trace and every child run in LangSmith carry them:

* ``graph_id``: the graph the run belongs to;
* ``flow_version``: the behavioural version of the thread (`flow_version` in its
  state; 1 for an old thread without the stamp; the graph's current version for
  a new thread, which its first node is about to stamp);
* ``code_version``: the deployed code (``$CODE_VERSION``, e.g. the git commit the
  image was built from; default ``versioned-graphs-<package version>``).

The supervisor's model runnable in `campus_supervisor` is tagged
``supervisor_llm`` by the graph itself, so LangSmith can filter its LLM runs by tag.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

CODE_VERSION_ENV = "CODE_VERSION"
DISTRIBUTION = "versioned-graphs"

GRAPH_ID_KEY = "graph_id"
FLOW_VERSION_KEY = "flow_version"
CODE_VERSION_KEY = "code_version"
SUPERVISOR_TAG = "supervisor_llm"
"""Tag of the supervisor's model runs (set in graphs/campus_supervisor)."""


@cache
def _package_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def code_version(environ: Mapping[str, str] | None = None) -> str:
    """``$CODE_VERSION``, else ``versioned-graphs-<installed package version>``."""
    explicit = (os.environ if environ is None else environ).get(CODE_VERSION_ENV, "").strip()
    return explicit or f"{DISTRIBUTION}-{_package_version()}"


def thread_flow_version(values: Any, current: int | None) -> int | None:
    """The flow version a run on a thread with ``values`` runs under.

    A thread with no values yet gets ``current`` (its first node stamps it);
    a thread with values but no stamp is v1 (the repo's convention).
    """
    if isinstance(values, Mapping) and values:
        stamped = values.get(FLOW_VERSION_KEY)
        return stamped if isinstance(stamped, int) else 1
    return current


def run_metadata(graph_id: str, flow_version: int | None, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The metadata keys stamped on a run."""
    metadata: dict[str, Any] = {GRAPH_ID_KEY: graph_id, CODE_VERSION_KEY: code_version(environ)}
    if flow_version is not None:
        metadata[FLOW_VERSION_KEY] = flow_version
    return metadata
