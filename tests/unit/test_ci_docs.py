"""The pre-commit hook and the documented CI job call `playbook` with arguments it takes."""

from __future__ import annotations

import re
import shlex

import yaml

from migrations_playbook.cli import build_parser
from tests.conftest import REPO_ROOT


def _parses(command: str) -> None:
    argv = shlex.split(command)
    assert argv[0] == "playbook", command
    args = build_parser().parse_args(argv[1:])  # SystemExit(2) on anything the CLI does not take
    assert callable(args.func)


def test_the_pre_commit_hook_runs_contract_check_in_the_projects_environment() -> None:
    (hook,) = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert (hook["id"], hook["language"], hook["pass_filenames"]) == ("playbook-contract-check", "system", False)
    _parses(hook["entry"])


def test_every_playbook_command_of_the_documented_ci_job_parses() -> None:
    workflow = yaml.safe_load((REPO_ROOT / "docs" / "ci" / "playbook-gate.yml").read_text())
    scripts = [step["run"] for step in workflow["jobs"]["gate"]["steps"] if "run" in step]
    commands = []
    for script in scripts:
        joined = re.sub(r"\\\n\s*", " ", script)  # shell line continuations
        for line in joined.splitlines():
            line = line.split(">")[0].strip()  # the redirect to check.md
            if line.startswith("playbook "):
                commands.append(re.sub(r'"\$\w+"|\$\w+', "X", line))
    assert len(commands) == 2, commands  # contract --check, check
    for command in commands:
        _parses(command)
    assert any("--format markdown" in c and c.startswith("playbook check --checkpointer") for c in commands)
