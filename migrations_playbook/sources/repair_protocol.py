"""The repair part of the `Source` protocol (see `base.py`)."""

from __future__ import annotations

from typing import Protocol


class RepairSource(Protocol):
    """What `repair` needs of a source, beyond the reads every command makes."""
