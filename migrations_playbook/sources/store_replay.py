"""The replay operations of `StoreSource` (a mixin; see `replay_protocol.py`)."""

from __future__ import annotations


class StoreReplay:
    """Mixed into `StoreSource`."""
