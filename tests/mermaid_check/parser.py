"""Mermaid's own parser for the tests: `parse` runs ``mermaid.parse`` (under jsdom, no browser) over many diagrams
in one node process and returns each one's parser message, or None when it parses.

The pinned packages (package.json, package-lock.json: mermaid and jsdom) are installed on demand with ``npm ci``
into a cache folder outside the repository, keyed by the digest of this folder's package files and script
(``$PLAYBOOK_MERMAID_CACHE``, else ``~/.cache/langgraph-playbook-tests``), once per machine: concurrent test
processes wait on a file lock. `available` says why the check cannot run where node is absent: the only case the
tests skip."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = ("package.json", "package-lock.json", "parse.mjs")


def available() -> str | None:
    """Why the parser cannot run here (no ``node`` on PATH), or None."""
    if shutil.which("node") is None:
        return "node is not on PATH: Mermaid's parser (tests/mermaid_check, an npm package) runs under node"
    return None


def _cache_root() -> Path:
    given = os.environ.get("PLAYBOOK_MERMAID_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "langgraph-playbook-tests"


def installed() -> Path:
    """The folder holding parse.mjs and its node_modules, installed with ``npm ci`` when it is not yet."""
    digest = hashlib.sha256(b"".join((HERE / name).read_bytes() for name in FILES)).hexdigest()[:16]
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"mermaid-{digest}"
    with open(root / f"mermaid-{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").exists():
            return target
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("node is installed but npm is not: npm installs Mermaid's parser (tests/mermaid_check)")
        shutil.rmtree(target, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=f"mermaid-{digest}-", dir=root))
        try:
            for name in FILES:
                shutil.copy2(HERE / name, work / name)
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0:
                raise RuntimeError(f"npm ci in {work} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
            (work / ".complete").write_text("ok\n")
            work.rename(target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def parse(diagrams: dict[str, str]) -> dict[str, str | None]:
    """Name -> Mermaid's parser message for each diagram that does not parse, None for each that does: one node
    process for them all."""
    folder = installed()
    done = subprocess.run(
        ["node", str(folder / "parse.mjs")],
        input=json.dumps([{"name": name, "text": text} for name, text in diagrams.items()]),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
    )
    try:
        results = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"parse.mjs failed ({done.returncode}): {done.stderr}") from None
    found = {r["name"]: (None if r["ok"] else r["error"]) for r in results}
    if set(found) != set(diagrams):
        raise RuntimeError(f"parse.mjs answered for {sorted(found)}, asked {sorted(diagrams)}: {done.stderr}")
    if done.returncode != (1 if any(found.values()) else 0):
        raise RuntimeError(f"parse.mjs exit status {done.returncode} does not match its answers: {done.stderr}")
    return found
