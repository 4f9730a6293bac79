"""What differs between the LangGraph versions the playbook supports, in one place.

The playbook is installed into the project's own environment (it imports the candidate's graph
code), so it runs on whatever langgraph, langgraph-checkpoint and langgraph-sdk that project
pinned: the supported range is in migrations_playbook/docs/versions.md ("Supported LangGraph
versions") and migrations_playbook/pyproject.toml. Every name below is the newest version's,
and on an older version the equivalent (or a stand-in that behaves the same for what the
playbook does with it). Nothing else in the playbook asks which version it runs on: a module
that needs one of these names imports it from here.

- ``HttpClient``: langgraph-sdk's async HTTP layer (`sources/api/answers.py` subclasses it to check
  every answer). ``langgraph_sdk._async.http`` from 0.3.6 on, ``langgraph_sdk.client`` before;
  the same class and the same methods in both.
- ``DeltaChannel``: new in langgraph 1.2.0 (a channel that stores its writes, not its value).
  On older langgraph no graph can have one, so the stand-in is a class nothing is an instance of.
- ``writes_sort_key``: new in langgraph-checkpoint 4.3.0 (the order of a super-step's writes);
  before it, the same key written out (``(task_path, task_id, idx)``, the order live execution
  applies them in).

Nothing here is a version number compared: each name is imported where it exists, and the
stand-in used where it does not, so a version between two tested ones gets what it has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["DeltaChannel", "HttpClient", "writes_sort_key"]

if TYPE_CHECKING:  # the type checker sees the newest API (the pinned environment's)
    from langgraph.channels.delta import DeltaChannel
    from langgraph.checkpoint.base import writes_sort_key
    from langgraph_sdk._async.http import HttpClient
else:
    try:
        from langgraph_sdk._async.http import HttpClient
    except ImportError:  # langgraph-sdk < 0.3.6 (before the split into _async/_sync)
        from langgraph_sdk.client import HttpClient

    try:
        from langgraph.channels.delta import DeltaChannel
    except ImportError:  # langgraph < 1.2: no graph holds a delta channel

        class DeltaChannel:
            """Stand-in for langgraph < 1.2, which has no DeltaChannel: nothing is an instance of it."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                raise TypeError("DeltaChannel needs langgraph>=1.2")

    try:
        from langgraph.checkpoint.base import writes_sort_key
    except ImportError:  # langgraph-checkpoint < 4.3

        def writes_sort_key(task_path: str, task_id: str = "", idx: int = 0) -> tuple[str, str, int]:
            """The order live execution applies a super-step's writes in (langgraph-checkpoint 4.3's key)."""
            return (task_path, task_id, idx)
