"""A gate report as JSON (tools): the envelope of `model.GateReport.to_json`, ``gate_result_version`` first."""

from __future__ import annotations

import json
from typing import Any

from migrations_playbook.model import GateReport


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def as_json(report: GateReport) -> str:
    """The envelope with paths relative to the working folder (`render.paths`)."""
    from migrations_playbook.render.paths import scrub_json

    return dumps(scrub_json(report.to_json()))
