"""A one-line progress bar on stderr (never on stdout: data goes there)."""

from __future__ import annotations

import sys


class ProgressBar:
    """A one-line progress bar on stderr; silent when stderr is not a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()

    def __call__(self, graph_id: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / total) if total else width
        sys.stderr.write(f"\rscanning {graph_id}: [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
