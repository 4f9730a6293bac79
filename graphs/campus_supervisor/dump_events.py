"""Write the event dumps the visible-text tests replay.

Generated with::

    python -m graphs.campus_supervisor.dump_events            # (re)write tests/fixtures/campus_events/
    python -m graphs.campus_supervisor.dump_events --check    # exit 1 if a dump is stale

Each scenario runs the real compiled graph (offline model, `InMemorySaver`)
turn by turn with ``stream_mode=["messages"], subgraphs=True`` (what Agent
Server runs for ``runs.stream(stream_mode="messages-tuple",
stream_subgraphs=True)``) and records every part in the server's wire shape:
``{"event": "messages|<ns>", "data": [<message dict>, <metadata>]}``.

To keep dumps comparable across runs, metadata keeps only the keys of the run
itself (`DUMPED_METADATA`: tags, node, step, namespaces, model) and every UUID
(message ids, task ids inside namespaces) is renamed ``<uuid-N>`` in order of
first appearance. Node names and namespaces stay in, on purpose: the filter
must not need them, and a test replays the dumps with them scrambled.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from graphs.common.visible import part_from_astream

if TYPE_CHECKING:
    from graphs.campus_supervisor.state import CampusInput

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "campus_events"

SCENARIOS: dict[str, tuple[str, ...]] = {
    "library_ko": ("3층 좌석 남았어?",),
    "library_en": ("How many seats are free on floor 5?",),
    "cafeteria_ko": ("오늘 학식 메뉴 뭐야?",),
    "cafeteria_en": ("What's on the cafeteria menu for lunch?",),
    "three_turns_ko": ("오늘 학식 메뉴 뭐야?", "3층 좌석 남았어?", "자료구조 과제 마감 언제야?"),
    "follow_up_floor_ko": ("도서관 좌석 남았어?", "2층"),
    "follow_up_floor_en": ("Any free seats in the library?", "the second floor"),
    "follow_up_course_ko": ("과제 마감 언제야?", "자료구조"),
    "follow_up_course_en": ("When is the assignment due?", "Data Structures"),
    "pre_route_reservation_ko": ("스터디룸 B 15시에 예약해줘",),
    "pre_route_lms_en": ("Show me all LMS materials",),
}
"""Conversations, one user message per turn, streamed with subgraphs."""

WITHOUT_SUBGRAPHS: dict[str, tuple[str, ...]] = {
    "library_ko_without_subgraphs": ("3층 좌석 남았어?",),
}
"""Streamed without subgraphs: every message arrives as a node output, narration
included, with no model tags; none of it may become visible."""

DUMPED_METADATA = (
    "tags",
    "langgraph_step",
    "langgraph_node",
    "langgraph_triggers",
    "langgraph_path",
    "langgraph_checkpoint_ns",
    "checkpoint_ns",
    "ls_provider",
    "ls_model_type",
    "ls_model_name",
)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _wire(item: Any) -> Any:
    """A streamed value as the server serialises it (messages as their model dump)."""
    if hasattr(item, "model_dump"):
        return item.model_dump()
    if isinstance(item, dict):
        return {k: _wire(v) for k, v in item.items()}
    if isinstance(item, (list, tuple)):
        return [_wire(v) for v in item]
    return item


def normalise(value: Any) -> Any:
    """``value`` with every UUID renamed ``<uuid-N>`` in order of first appearance."""
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return names.setdefault(match.group(0), f"<uuid-{len(names) + 1}>")

    return json.loads(_UUID.sub(rename, json.dumps(value, ensure_ascii=False)))


def record(texts: Sequence[str], *, subgraphs: bool = True) -> dict[str, Any]:
    """Run one conversation on the real graph and return its normalised dump."""
    from graphs.campus_supervisor.graph import builder

    graph = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
    turns = []
    for text in texts:
        parts = []
        for chunk in graph.stream(
            # add_messages takes message dicts; LangGraph types the input as the stored field (AnyMessage)
            cast("CampusInput", {"messages": [{"role": "user", "content": text}]}),
            config,
            stream_mode=["messages"],
            subgraphs=subgraphs,
        ):
            # with a list of modes each item is a (ns, mode, data) tuple; LangGraph types v1 items dict | Any
            event, (message, metadata) = part_from_astream(cast(tuple[Any, ...], chunk))
            kept = {k: metadata[k] for k in DUMPED_METADATA if k in metadata}
            parts.append({"event": event, "data": [_wire(message), _wire(kept)]})
        turns.append({"input": text, "parts": parts})
    dump: dict[str, Any] = normalise({"generated_with": "python -m graphs.campus_supervisor.dump_events", "turns": turns})
    return dump


def render(dump: dict[str, Any]) -> str:
    """The file text of a dump (stable formatting, one part per line)."""
    lines = ["{", f'  "generated_with": {json.dumps(dump["generated_with"])},', '  "turns": [']
    for t_index, turn in enumerate(dump["turns"]):
        lines.append(f'    {{"input": {json.dumps(turn["input"], ensure_ascii=False)}, "parts": [')
        parts = [json.dumps(p, ensure_ascii=False, sort_keys=True) for p in turn["parts"]]
        lines.extend(f"      {p}{',' if i < len(parts) - 1 else ''}" for i, p in enumerate(parts))
        lines.append("    ]}" + ("," if t_index < len(dump["turns"]) - 1 else ""))
    lines += ["  ]", "}", ""]
    return "\n".join(lines)


def dumps() -> dict[str, str]:
    """File name -> file text of every dump."""
    out = {f"{name}.json": render(record(texts)) for name, texts in SCENARIOS.items()}
    out.update((f"{name}.json", render(record(texts, subgraphs=False))) for name, texts in WITHOUT_SUBGRAPHS.items())
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, help="folder of the dumps")
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = []
    for name, text in dumps().items():
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(path, file=sys.stderr)
    for path in stale:
        print(f"stale: {path} (regenerate with python -m graphs.campus_supervisor.dump_events)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
