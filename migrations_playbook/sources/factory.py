"""`open_source`: the `Source` a command's request names. The one place that knows the implementations."""

from __future__ import annotations

from migrations_playbook.sources.base import Source, SourceRequest


def open_source(request: SourceRequest) -> Source:
    """The source the request names (``--checkpointer`` wins: the parser makes them exclusive)."""
    if request.checkpointer:
        from migrations_playbook.sources.store.source import StoreSource

        return StoreSource(request)
    from migrations_playbook.sources.api.source import ApiSource

    if not request.live:
        from migrations_playbook.errors import UsageError

        raise UsageError("no source: pass --live URL or --checkpointer URI")
    return ApiSource(request)
