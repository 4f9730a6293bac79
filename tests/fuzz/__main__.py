"""Run issue 26's systematic testers longer than `make test` does.

    python -m tests.fuzz [api|lifecycle|all] [--examples N] [--seed N|random] [--steps N] [--strict]

``api``: the schema-driven API fuzzing (tests/integration/test_api_fuzz_server.py),
``lifecycle``: the run-lifecycle state machine (tests/integration/test_lifecycle_machine_server.py),
``all`` (default): both. Defaults here: 25 cases per operation and mode, 40 machine runs of
30 steps, a random seed (printed; ``--seed`` or ``FUZZ_SEED`` reruns it). Each setting is an
environment variable of the tests (``FUZZ_EXAMPLES``, ``FUZZ_SEED``, ``LIFECYCLE_EXAMPLES``,
``LIFECYCLE_STEPS``, ``FUZZ_STRICT``), so pytest can be run with them directly too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

FILES = {
    "api": "tests/integration/test_api_fuzz_server.py",
    "lifecycle": "tests/integration/test_lifecycle_machine_server.py",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("which", nargs="?", choices=[*FILES, "all"], default="all")
    parser.add_argument("--examples", type=int, default=25, help="API cases per operation and generation mode")
    parser.add_argument("--runs", type=int, default=40, help="state machine runs (hypothesis max_examples)")
    parser.add_argument("--steps", type=int, default=30, help="steps per state machine run")
    parser.add_argument("--seed", default=os.environ.get("FUZZ_SEED", "random"), help="an integer, or random")
    parser.add_argument("--strict", action="store_true", help="also fail the 5xx already reported")
    args = parser.parse_args(argv)
    env = {
        **os.environ,
        "FUZZ_EXAMPLES": str(args.examples),
        "FUZZ_SEED": str(args.seed),
        "LIFECYCLE_EXAMPLES": str(args.runs),
        "LIFECYCLE_STEPS": str(args.steps),
        **({"FUZZ_STRICT": "1"} if args.strict else {}),
    }
    files = list(FILES.values()) if args.which == "all" else [FILES[args.which]]
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-q", "-o", "timeout=0", *files]
    return subprocess.call(command, env=env, cwd=Path(__file__).resolve().parents[2])


if __name__ == "__main__":
    raise SystemExit(main())
