"""A graph node with a synchronous and an asynchronous body: `graph.invoke` runs one, `graph.ainvoke` the other.

Why: a node that calls a model or a compiled subgraph must be ``async`` under an async
server. LangGraph runs a sync node there in a worker thread, and a subgraph invoked in
that thread reads and writes its checkpoints through the saver's *synchronous* methods:
an ``AsyncPostgresSaver`` then parks the thread on the event loop (or refuses, when the
call comes from the loop's own thread), and the server's own wrapper around a custom
checkpointer has no sync methods at all. But LangGraph cannot run an ``async`` node
under ``graph.invoke`` (it raises), and scripts and tests call the graphs synchronously.
So such a node keeps its sync body for ``invoke`` and gets an async twin for
``ainvoke``/``astream``, the two written side by side in the graph's ``nodes.py``.

`both(func, afunc)` runs a body as LangGraph runs a plain function node (no callback run
of its own, so stream tags and traces stay as they were), with the async body
LangGraph's ``add_node`` has no way to take. Each body receives ``runtime`` when its
signature names it. It is a `RunnableLambda` (public langchain-core API) only so that
LangGraph finds a compiled subgraph the sync body refers to, as it does for a plain
function (``get_graph(xray=True)``, ``get_state(subgraphs=True)``, the playbook's lock):
its ``invoke``/``ainvoke`` are its own. The playbook's contract reads the sync body
(``func``), so node names, calls, reads and targets stay what the lock says; the async
twin must do the same steps (tests/unit/test_async_nodes.py compares their outputs).

``add_node`` infers a `Command` node's destinations from a plain function's return
annotation only: pass ``destinations=`` with a `both` node.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.runtime import get_runtime


class SyncAndAsyncNode(RunnableLambda[Any, Any]):
    """A node runnable: ``func`` under ``invoke``, ``afunc`` under ``ainvoke`` (see the module docstring)."""

    def __init__(self, func: Callable[..., Any], afunc: Callable[..., Awaitable[Any]], *, name: str | None = None) -> None:
        if not inspect.iscoroutinefunction(afunc):
            raise TypeError(f"{afunc.__qualname__} must be an async function (the async body of {func.__qualname__})")
        if inspect.iscoroutinefunction(func):
            raise TypeError(f"{func.__qualname__} must be a plain function (the sync body of {afunc.__qualname__})")
        wants = [(p.name for p in inspect.signature(f).parameters.values()) for f in (func, afunc)]
        sync_params, async_params = (list(w) for w in wants)
        if sync_params != async_params:
            raise TypeError(f"{func.__qualname__}{sync_params} and {afunc.__qualname__}{async_params} take different parameters")
        if sync_params[1:] not in ([], ["runtime"]):
            raise TypeError(f"{func.__qualname__}: a node body takes (state) or (state, runtime), not {sync_params}")
        # RunnableLambda keeps func (the sync body: LangGraph's subgraph lookup and the playbook's
        # lock read it) and afunc; its overloads name no (state, runtime) signature, hence the casts.
        super().__init__(cast(Any, func), cast(Any, afunc), name=name or func.__name__)
        self._sync, self._async = func, afunc
        self._with_runtime = sync_params[1:] == ["runtime"]

    def _args(self, state: Any) -> tuple[Any, ...]:
        # LangGraph runs a node's first step with its config in context (RunnableSeq), so the
        # runtime of this run is the one get_runtime() reads.
        return (state, get_runtime()) if self._with_runtime else (state,)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """The sync body (`graph.invoke`, `graph.stream`)."""
        return self._sync(*self._args(input))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """The async body (`graph.ainvoke`, `graph.astream`, Agent Server)."""
        return await self._async(*self._args(input))


def both(func: Callable[..., Any], afunc: Callable[..., Awaitable[Any]]) -> SyncAndAsyncNode:
    """A node named after ``func``: ``func`` under ``graph.invoke``, ``afunc`` under ``graph.ainvoke``."""
    return SyncAndAsyncNode(func, afunc)
