"""The project's own log lines and warnings, held back from the playbook's output.

`playbook` imports the candidate's (and the deployed code's) graph modules in-process. A project that
configures logging at import (``logging.basicConfig(level=logging.INFO)``, httpx at INFO) or whose
libraries warn would write tens of lines per command into stderr, between the playbook's own lines (51 to
59 per gate run on langchain-ai/agents-from-scratch). While a command runs, the root logger writes to a
file instead (warnings too, through ``logging.captureWarnings``), and one line at the end says how many
lines were held back and where they are. The playbook itself logs nothing: its output is what it prints.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


class HeldLog(logging.Handler):
    """Writes every record to a file made on the first one, and counts them."""

    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.count = 0
        self.path: Path | None = None
        self._file: TextIO | None = None
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._file is None:
                handle, name = tempfile.mkstemp(prefix="playbook-held-", suffix=".log")
                self._file, self.path = os.fdopen(handle, "w", encoding="utf-8"), Path(name)
            file = self._file
            file.write(self.format(record) + "\n")
            file.flush()
            self.count += 1
        except Exception:  # noqa: BLE001 (a log line must never fail the command; logging's own contract)
            self.handleError(record)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        super().close()

    def note(self) -> str | None:
        """The line that says what was held back, or None when nothing was."""
        if not self.count:
            return None
        return (
            f"playbook: note: {self.count} log line(s) and warning(s) from the project's code were held back from "
            f"this output: {self.path}"
        )


@contextlib.contextmanager
def holding(stream: TextIO | None = None) -> Iterator[HeldLog]:
    """Route the root logger and warnings to a `HeldLog` while the block runs; then say on ``stream``
    (stderr) how many lines were held back. Handlers the project adds to the root logger while importing
    are replaced too (``logging.basicConfig`` adds one only where the root has none: here it finds ours)."""
    root = logging.getLogger()
    held = HeldLog()
    saved = (list(root.handlers), root.level)
    root.handlers = [held]
    logging.captureWarnings(True)
    try:
        yield held
    finally:
        logging.captureWarnings(False)
        root.handlers = saved[0]
        root.setLevel(saved[1])
        held.close()
        line = held.note()
        if line:
            print(line, file=stream or sys.stderr)
