"""The replay part of the `Source` protocol (see `base.py`)."""

from __future__ import annotations

from typing import Protocol


class ReplaySource(Protocol):
    """What `replay` needs of a source, beyond the reads every command makes."""
