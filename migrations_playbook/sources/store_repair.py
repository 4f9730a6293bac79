"""The repair operations of `StoreSource` (a mixin; see `repair_protocol.py`)."""

from __future__ import annotations


class StoreRepair:
    """Mixed into `StoreSource`."""
