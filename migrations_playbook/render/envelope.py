"""A gate report as JSON (tools): the envelope of `model.GateReport.to_json`, ``gate_result_version`` first."""

from __future__ import annotations

import json

from migrations_playbook.model import GateReport


def as_json(report: GateReport) -> str:
    return json.dumps(report.to_json(), ensure_ascii=False, indent=2)
