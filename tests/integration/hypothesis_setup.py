"""Hypothesis for the integration lane's systematic testers (issue 26, "the method").

Import this before drawing anything: it keeps hypothesis off the repository and off the
network, and reads the budgets and the seed from the environment.

* Hypothesis's storage (its example database, its caches) goes to a temporary folder,
  never ``.hypothesis/`` in the repo; the example database is off anyway (``database=None``).
* ``FUZZ_SEED``: the seed of every tester (default 26, so ``make test`` is repeatable);
  ``FUZZ_SEED=random`` draws one, and the tests print it so a failure reruns.
* A compatibility shim for the pinned pair hypothesis 6.170.27 / hypothesis-jsonschema
  0.23.1 (schemathesis's data generator): hypothesis-jsonschema still calls
  ``many.more()``, which hypothesis removed (``many`` is now iterated inside a ``with``
  block). Without the shim every object schema fails with ``AttributeError: 'many'
  object has no attribute 'more'``. The shim is the old loop step on the new class.
"""

from __future__ import annotations

import os
import random
import tempfile
from typing import Any

from hypothesis import configuration
from hypothesis.internal.conjecture import utils as conjecture_utils

configuration.set_hypothesis_home_dir(tempfile.mkdtemp(prefix="hypothesis-"))


def _many_more(self: Any) -> bool:
    """``many.more()`` as hypothesis-jsonschema calls it: finish the element drawn last,
    decide whether to draw another, and start it."""
    if self._depth is None:
        self._depth = self.data.depth
    self._finish_element()
    if not self._decide():
        self._closed = True
        return False
    self.count += 1
    self._in_element = True
    self._rejected = False
    return True


if not hasattr(conjecture_utils.many, "more"):
    conjecture_utils.many.more = _many_more


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def fuzz_seed() -> int:
    """``FUZZ_SEED`` (an integer, or ``random``); 26 when unset."""
    raw = os.environ.get("FUZZ_SEED", "").strip()
    if raw == "random":
        return random.SystemRandom().randrange(2**32)
    return int(raw) if raw else 26
