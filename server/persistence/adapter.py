"""What the server's wrapper around a custom checkpointer does not forward, passed through to the saver.

langgraph-api's wrapper gets the saver's synchronous methods (`SYNC_METHODS`), which a
subgraph invoked synchronously inside a node needs, and the saver's own
``aget_delta_channel_history`` (`FAST_PATHS`: two queries instead of one checkpoint read per
step back to the last snapshot). `dev_checkpointer` patches the wrapper class at start-up.
"""

from __future__ import annotations

from typing import Any

SYNC_METHODS = ("get_tuple", "list", "put", "put_writes", "delete_thread", "get_delta_channel_history")
"""The saver's synchronous methods, which a graph invoked synchronously inside a node calls."""

FAST_PATHS = ("aget_delta_channel_history",)
"""Async methods BaseCheckpointSaver implements generically and the saver overrides with a fast
path; the wrapper, a BaseCheckpointSaver itself, would otherwise run the generic one."""


def _let_the_adapter_call_sync_methods(adapter: type | None = None) -> None:
    """Pass the synchronous methods, and the saver's fast paths, through the server's wrapper.

    langgraph-api 0.16.7 wraps a custom checkpointer in ``_CustomCheckpointerAdapter``,
    which forwards only the async methods; the sync ones are BaseCheckpointSaver's,
    which raise NotImplementedError. A subgraph invoked synchronously inside a sync
    node (campus_supervisor's supervisor agent) calls them. AsyncSqliteSaver runs
    them on its event loop from the node's worker thread.

    The wrapper does not forward ``aget_delta_channel_history`` either, so every run on
    a thread with a `DeltaChannel` (graphs/common/history.py) rebuilt its messages with
    BaseCheckpointSaver's generic walk: one ``aget_tuple`` (a query and a whole
    checkpoint deserialized) per ancestor back to the last snapshot, up to some 90 per
    run. AsyncSqliteSaver's own version reads the same chain in two queries.

    ``adapter``: the wrapper class (default: the server's; tests pass a stand-in).
    """
    if adapter is None:
        from langgraph_api._checkpointer._adapter import (  # type: ignore[import-untyped]  # no type info
            _CustomCheckpointerAdapter,
        )

        adapter = _CustomCheckpointerAdapter
    for name in SYNC_METHODS:
        if name in vars(adapter):
            continue

        def forward(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            return getattr(self._inner, _name)(*args, **kwargs)

        forward.__name__ = name
        setattr(adapter, name, forward)
    for name in FAST_PATHS:
        if name in vars(adapter):
            continue

        async def forward_async(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            return await getattr(self._inner, _name)(*args, **kwargs)

        forward_async.__name__ = name
        setattr(adapter, name, forward_async)
