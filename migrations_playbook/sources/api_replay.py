"""The replay operations of `ApiSource` (a mixin; see `replay_protocol.py`)."""

from __future__ import annotations


class ApiReplay:
    """Mixed into `ApiSource`."""
