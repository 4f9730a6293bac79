"""`playbook rules`: the gate's rules, one per finding code (`migrations_playbook.rules`)."""

from __future__ import annotations

import json

from migrations_playbook.errors import EXIT_PASS
from migrations_playbook.rules import ALL_RULES


def run(fmt: str) -> int:
    entries = [
        {"code": r.code, "severity": r.severity, "evidence": list(r.evidence), "why": r.why, "help": r.help} for r in ALL_RULES
    ]
    if fmt == "json":
        print(json.dumps({"rules": entries}, indent=2))
        return EXIT_PASS
    for entry in entries:
        print(f"{entry['code']}  ({entry['severity']}; evidence: {', '.join(entry['evidence'])})")
        print(f"  why: {entry['why']}")
        print(f"  fix: {entry['help']}")
    return EXIT_PASS
