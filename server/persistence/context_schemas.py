"""Each graph's context JSON schema, which the server reads on every run with a context, built once per schema class.

`dev_checkpointer` patches langgraph's ``Pregel.get_context_jsonschema`` at start-up.
"""

from __future__ import annotations

import copy
import functools
from typing import Any


def _keep_context_schemas(pregel: Any = None) -> None:
    """Build each context schema's JSON schema once instead of on every run.

    For every run with a context, langgraph-api 0.16.7 (``stream.astream_state``) asks the
    graph for its context's JSON schema, to drop keys the schema does not name; langgraph's
    ``Pregel.get_context_jsonschema`` builds a pydantic ``TypeAdapter`` each time (about
    0.9 ms for fan_room's context, more than the graph's own nodes). The schema of a class
    never changes while the process runs, so it is kept per class, and each caller gets
    its own copy. ``pregel``: the class to patch (default: langgraph's Pregel).
    """
    if pregel is None:
        from langgraph.pregel.main import Pregel

        pregel = Pregel
    built = pregel.get_context_jsonschema
    if getattr(built, "keeps_schemas", False):
        return
    kept: dict[Any, dict[str, Any] | None] = {}

    @functools.wraps(built)
    def get_context_jsonschema(self: Any) -> dict[str, Any] | None:
        schema = self.context_schema
        try:
            if schema not in kept:
                kept[schema] = built(self)
        except TypeError:  # an unhashable schema object: build it as langgraph does
            return built(self)  # type: ignore[no-any-return]  # langgraph's own method
        return copy.deepcopy(kept[schema])

    get_context_jsonschema.keeps_schemas = True  # type: ignore[attr-defined]  # marks the patch: applied once
    pregel.get_context_jsonschema = get_context_jsonschema
