"""The shadow's judgement of the long-term store: which items the candidate lost, which hold other values.

Items are compared by ``namespace/key``, except in a namespace whose keys are generated at run time
(``uuid4()``, as langchain-ai/memory-agent writes every memory): two runs of the deployed code (A and A2)
already disagree on those keys, so the candidate's copy (B) cannot be expected to hold A's. There, items
are matched by namespace and content: an item of A that B lacks is lost only when B holds no item of the
same content in that namespace. When the content varies between A and A2 too (a timestamp in the value),
only the number of items is compared. What varies is learned from A against A2, never listed. Pure.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StoreJudgement:
    lost: list[str] = field(default_factory=list)
    """What A keeps and B lost: item keys, or ``namespace/<generated key>`` with a preview of the content."""
    changed: list[str] = field(default_factory=list)
    """Item keys whose values differ on B (and agree between A and A2)."""
    generated: list[str] = field(default_factory=list)
    """Namespaces whose keys are generated at run time (matched by content)."""


def namespace_of(key: str) -> str:
    """``memories/user-1`` of ``memories/user-1/<key>``."""
    return key.rsplit("/", 1)[0] if "/" in key else ""


def _content(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _in(items: Mapping[str, Any], namespace: str, without: Mapping[str, Any]) -> list[str]:
    """The contents of ``items`` in ``namespace`` whose keys ``without`` does not hold."""
    return [_content(v) for k, v in items.items() if namespace_of(k) == namespace and k not in without]


def judge_store(a: Mapping[str, Any], a2: Mapping[str, Any] | None, b: Mapping[str, Any]) -> StoreJudgement:
    """B's store against A's, with what A and A2 differ in learned as noise."""
    other = a2 if a2 is not None else a
    generated = sorted({namespace_of(k) for k in set(a) ^ set(other)})
    judgement = StoreJudgement(generated=generated)
    for key in sorted(set(a) - set(b)):
        if namespace_of(key) not in generated:
            judgement.lost.append(key)
    for namespace in generated:
        ours, theirs = _in(a, namespace, b), _in(b, namespace, a)
        stable = Counter(_in(a, namespace, other)) == Counter(_in(other, namespace, a))
        if stable:
            missing = Counter(ours) - Counter(theirs)
            judgement.lost += [f"{namespace}/<generated key> holding {content[:80]}" for content in sorted(missing.elements())]
        elif len(theirs) < len(ours):
            judgement.lost.append(
                f"{namespace}/<generated key>: {len(ours) - len(theirs)} of {len(ours)} item(s) the deployed code wrote"
            )
    varying = {k for k in a if other.get(k) != a.get(k)}
    judgement.changed = sorted(k for k in set(a) & set(b) if a[k] != b[k] and k not in varying)
    return judgement
