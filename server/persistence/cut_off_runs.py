"""Runs a crash cut off are retried from their last checkpoint, with their input and command dropped.

So the crash does not re-send a resume answer or a command to a thread that already moved
past it. `dev_checkpointer` runs it once at start-up, before the server takes any run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


async def _retry_cut_off_runs_from_their_checkpoints(saver: BaseCheckpointSaver[Any], store: Any) -> None:
    """Runs a crash left pending continue from their last checkpoint instead of starting over.

    The runtime retries a run it finds pending at start-up with the run's original
    input or command. LangGraph already ignores a repeated input when the thread's
    head was written by the same run, but a command (a resume answer, an update, a
    goto) is applied again to a thread that moved past it. A run that already wrote
    a checkpoint is retried with neither, so LangGraph continues its pending tasks.
    """
    for run in store["runs"]:
        if run["status"] != "pending":
            continue
        config: RunnableConfig = {"configurable": {"thread_id": str(run["thread_id"]), "checkpoint_ns": ""}}
        async for _ in saver.alist(config, filter={"run_id": str(run["run_id"])}, limit=1):
            run["kwargs"]["input"] = None
            run["kwargs"]["command"] = None
