"""The repair operations of `ApiSource` (a mixin; see `repair_protocol.py`)."""

from __future__ import annotations


class ApiRepair:
    """Mixed into `ApiSource`."""
