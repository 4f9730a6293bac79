"""What the rehearsal scripts share: git, a commit's code in a folder, and `playbook` commands
printed as the transcript a migration record pastes (server URLs shown as port 2024, the
work folder as $W)."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

SHOWN_URL = "http://127.0.0.1:2024"


def git(repo: Path, *argv: str) -> str:
    """``git -C repo ARGV``'s output, stripped (raises on failure)."""
    return subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, text=True, check=True).stdout.strip()


def archive(repo: Path, rev: str, dest: Path) -> None:
    """``rev``'s tree of ``repo`` (`git archive`) in the new folder ``dest``."""
    dest.mkdir()
    subprocess.run(f"git -C {repo} archive {rev} | tar -x -C {dest}", shell=True, check=True)


def playbook(
    root: Path, urls: Sequence[str], argv: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m migrations_playbook ARGV`` and print it as a transcript block."""
    r = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *argv],
        capture_output=True,
        text=True,
        cwd=cwd or root,
        env={**os.environ, **(env or {})},
    )
    shown = " ".join(argv).replace(str(root), "$W")
    out = (r.stdout + r.stderr).replace(str(root), "$W")
    for url in urls:
        shown, out = shown.replace(url, SHOWN_URL), out.replace(url, SHOWN_URL)
    print(f"\n```text\n$ playbook {shown}\n{out.rstrip()}\n(exit {r.returncode})\n```", flush=True)
    return r


def parse_args(doc: str) -> argparse.Namespace:
    """The rehearsals' common arguments: ``--live-commit``, ``--candidate-tree`` and the work folder."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--live-commit", default=None, help="the deployed code (default: before the change)")
    parser.add_argument("--candidate-tree", type=Path, default=None, help="the candidate's folder (default: HEAD)")
    parser.add_argument("workdir", nargs="?", type=Path, default=None)
    return parser.parse_args()


def commit_before(repo: Path, path: str, subject: str) -> str:
    """The commit before the one whose subject starts with ``subject`` (touching ``path``): the deployed code."""
    out = git(repo, "log", "--format=%H %s", "--", path)
    made = [line.split()[0] for line in out.splitlines() if line.split(" ", 1)[1].startswith(subject)]
    if not made:
        raise SystemExit(
            f"no commit says {subject!r} yet (the change is not landed): pass --live-commit HEAD and "
            "--candidate-tree <a working tree with the change>"
        )
    return git(repo, "rev-parse", f"{made[-1]}^")


def fresh_workdir(args: argparse.Namespace, prefix: str) -> Path:
    """The work folder (``args.workdir`` or a new temporary one), emptied."""
    root = args.workdir or Path(tempfile.mkdtemp(prefix=prefix))
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return root


def gate_argv(url: str, candidate: str, graph: str, *extra: str) -> list[str]:
    """``playbook gate`` on ``graph`` of the live server against the candidate, as a record shows it."""
    return ["gate", "--live", url, "--candidate", candidate, "--graph", graph, *extra, "--format", "markdown", "--no-progress"]


def shadow_argv(url: str, live: Path, candidate: str, graph: str, *extra: str) -> list[str]:
    """``playbook shadow --all`` on ``graph``: the live code in ``live`` (its stored data there too)."""
    return [
        "shadow",
        "--live",
        url,
        "--persistence",
        str(live),
        "--live-code",
        str(live),
        "--candidate",
        candidate,
        "--graph",
        graph,
        "--all",
        *extra,
        "--format",
        "markdown",
    ]
