"""The Mermaid picture of the Markdown reports (`render/mermaid.py`): ids, escaping, counts, marks, the cap; and
every diagram drawn here, from hand-made topologies and from gate and inflight reports of the v1 fixture
project's recorded threads, checked by Mermaid's own parser (tests/mermaid_check: ``mermaid.parse`` under node,
one process for all of them)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from migrations_playbook.graphcode.candidate import contract_of, load_candidate, load_compiled
from migrations_playbook.graphcode.contract import lock_document
from migrations_playbook.model import (
    GateReport,
    GraphSummary,
    LiveGraph,
    ThreadSnapshot,
    Topology,
    at_nodes,
    drawings,
)
from migrations_playbook.render import render
from migrations_playbook.render.inflight import markdown as inflight_markdown
from migrations_playbook.render.mermaid import Marks, counts_text, flowchart, label, node_id, section, sections
from migrations_playbook.rules.evaluate import Evaluator
from migrations_playbook.sources.api.reads import reducers_from_lock
from tests.fixtures.gate_projects.variants import BREAKING, SAFE, V1, WARN_ONLY, make_variant
from tests.mermaid_check import parser

SNAPSHOT = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "gate_snapshots" / "v1.json").read_text())
POSITIONS = SNAPSHOT["positions"]
LOCKS = Path(__file__).resolve().parents[2] / "migrations_playbook" / "contracts"
FENCE = re.compile(r"```mermaid\n(.*?)\n```", re.S)

HELPDESK = Topology.from_json(SNAPSHOT["graphs"]["helpdesk"]["topology"])
ESCALATION = Topology.from_json(SNAPSHOT["graphs"]["escalation"]["topology"])
ODD_NAMES = ["end", "graph", "class", "subgraph", "o", "x", "분류", '"quoted"', "a#b", "<b>bold</b>", "a&amp;b", "`tick`", "a b"]
ODD = Topology(
    nodes=frozenset(["__start__", "__end__", *ODD_NAMES]),
    edges=tuple(
        sorted(
            [("__start__", ODD_NAMES[0], False)]
            + [(a, b, i % 2 == 1) for i, (a, b) in enumerate(itertools.pairwise(ODD_NAMES))]
            + [(ODD_NAMES[-1], "__end__", False)]
        )
    ),
)
# A subgraph as `get_graph(xray=True)` draws one (campus_supervisor's agents): its own __start__/__end__ and the
# plain drawing's edges to the subgraph node itself.
AGENT = Topology.from_drawings(
    {
        "nodes": [{"id": n} for n in ("__start__", "intake", "agent", "end_turn", "__end__")],
        "edges": [
            {"source": "__start__", "target": "intake"},
            {"source": "intake", "target": "agent", "conditional": True},
            {"source": "intake", "target": "end_turn", "conditional": True},
            {"source": "agent", "target": "end_turn"},
            {"source": "end_turn", "target": "__end__"},
        ],
    },
    {
        "nodes": [{"id": n} for n in ("agent:__start__", "agent:model", "agent:tools", "agent:__end__")],
        "edges": [
            {"source": "intake", "target": "agent:__start__", "conditional": True},
            {"source": "agent:__start__", "target": "agent:model"},
            {"source": "agent:model", "target": "agent:tools", "conditional": True},
            {"source": "agent:model", "target": "agent:__end__", "conditional": True},
            {"source": "agent:tools", "target": "agent:model"},
            {"source": "agent:__end__", "target": "end_turn"},
        ],
    },
)


def _chain(n: int) -> Topology:
    names = [f"step{i:03d}" for i in range(n)]
    edges = [("__start__", names[0], False), *zip(names, names[1:], [False] * n, strict=False), (names[-1], "__end__", False)]
    return Topology(nodes=frozenset(["__start__", "__end__", *names]), edges=tuple(sorted(edges)))


def _node_lines(text: str) -> dict[str, str]:
    """Mermaid id -> its declaration line (``id["label"]``)."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^\s*([\w]+)(?:\[|\(\[|\(\()(.*)$", text, re.M)}


def _classes(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for members, name in re.findall(r"^\s*class (\S+) (\w+)$", text, re.M):
        found[name] = set(members.split(","))
    return found


# -- ids and labels ----------------------------------------------------------------------


def test_ids_are_prefixed_plain_and_distinct() -> None:
    assert node_id("triage") == "n_triage"
    assert node_id("end") == "n_end"  # never the keyword
    assert node_id("review:confirm") == "n_review__confirm"
    assert re.fullmatch(r"n_[0-9a-f]{6}", node_id("분류"))
    assert re.fullmatch(r"n_quoted_[0-9a-f]{6}", node_id('"quoted"'))
    ids = [node_id(n) for n in [*ODD_NAMES, "a_b", "a:b", "a-b", "분류2", "분류3"]]
    assert all(re.fullmatch(r"n_\w+", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_drawn_ids_are_unique_even_where_names_map_to_the_same_id() -> None:
    names = ["a__b", "a:b", "n_a__b"]
    topology = Topology(nodes=frozenset(["__start__", *names]), edges=tuple(("__start__", n, False) for n in names))
    text = flowchart(topology, Marks()).text
    declared = [line.strip().split("[", 1)[0] for line in text.splitlines() if line.strip().startswith("n_")]
    assert len(declared) == len(set(declared)) == 3
    assert sum(line.strip().startswith("t_start -->") for line in text.splitlines()) == 3


def test_labels_use_mermaids_entity_codes() -> None:
    assert label('say "hi" #1 <b> & `x`') == "say #quot;hi#quot; #35;1 #lt;b#gt; #amp; #96;x#96;"
    assert label("two\nlines") == "two lines"
    text = flowchart(ODD, Marks()).text
    for raw in ('"quoted"', "<b>", "a#b", "`tick`"):
        assert raw not in text
    assert '["#quot;quoted#quot;"]' in text
    assert '["분류"]' in text


# -- counts and marks -------------------------------------------------------------------------


def test_counts_by_status_most_first() -> None:
    assert counts_text({"busy": 1, "interrupted": 3}) == "3 interrupted · 1 busy"
    assert counts_text({}) == ""


def test_threads_counted_at_their_deepest_pending_node_and_idle_ones_at_start() -> None:
    threads = [ThreadSnapshot.from_json(t) for t in SNAPSHOT["threads"]]
    assert {at_nodes(t) for t in threads} == {("review:confirm",), ("triage",), ("__start__",)}
    summary = GraphSummary()
    for thread in threads:
        if thread.graph_id == "helpdesk":
            summary.count(thread)
    assert summary.pending_at == {"triage": {"interrupted": 2}, "__start__": {"idle": 1}}
    other = GraphSummary()
    other.count(threads[0])
    summary.merge(other)
    assert summary.threads_scanned == 4


def test_counts_and_blocking_marks_on_the_nodes() -> None:
    marks = Marks(
        pending={"triage": {"interrupted": 2}, "__start__": {"idle": 1}, "respond": {"busy": 1}},
        blocking={"triage": ["NODE_MISSING"]},
        warning={"respond": ["PATH_CHANGED"]},
    )
    text = flowchart(HELPDESK, marks).text
    nodes = _node_lines(text)
    assert nodes["n_triage"].strip() == 'n_triage["triage<br>2 interrupted"]'
    assert nodes["t_start"].strip() == 't_start(["START<br>1 idle"])'
    assert nodes["n_enrich"].strip() == 'n_enrich["enrich"]'
    classes = _classes(text)
    assert classes["blocking"] == {"n_triage"}
    assert classes["warning"] == {"n_respond"}
    assert classes["threads"] == {"n_triage", "n_respond"}
    assert "classDef blocking fill:#ffe3e3,stroke:#d00000,stroke-width:3px" in text
    assert "  n_intake --> n_enrich" in text.splitlines()
    assert "  n_respond --> t_end" in text.splitlines()


def test_a_marked_node_the_topology_lacks_is_drawn_dashed() -> None:
    text = flowchart(HELPDESK, Marks(pending={"assess": {"interrupted": 1}}, blocking={"assess": ["NODE_MISSING"]})).text
    assert 'n_assess["assess<br>1 interrupted<br>not in this topology"]' in text
    assert _classes(text)["absent"] == {"n_assess"}


def test_subgraph_nodes_are_drawn_in_a_subgraph() -> None:
    text = flowchart(ESCALATION, Marks(pending={"review:confirm": {"interrupted": 1}})).text
    lines = [line.strip() for line in text.splitlines()]
    start = lines.index('subgraph sg_review["review"]')
    assert lines[start + 1 : start + 4] == ['n_review__check["check"]', 'n_review__confirm["confirm<br>1 interrupted"]', "end"]
    assert "t_start --> n_review__check" in lines
    assert "n_review__confirm --> n_close" in lines
    # the plain drawing's edges to the subgraph node itself are replaced by the inner ones
    assert not any("n_review " in line or line.endswith("n_review") for line in lines)


def test_a_subgraphs_own_start_and_end_are_joined_into_the_edges() -> None:
    text = flowchart(AGENT, Marks(blocking={"agent": ["NODE_MISSING"]})).text
    lines = [line.strip() for line in text.splitlines()]
    assert "n_intake -.-> n_agent__model" in lines
    assert "n_agent__model -.-> n_end_turn" in lines
    assert "n_agent__tools --> n_agent__model" in lines
    assert not any("__start__" in line or "agent__end" in line for line in lines)
    assert "style sg_agent stroke:#d00000,stroke-width:3px" in lines  # a finding on the subgraph node marks the subgraph


def test_the_cap_draws_the_nodes_with_threads_and_their_neighbours_and_says_so() -> None:
    chart = flowchart(_chain(100), Marks(pending={"step050": {"interrupted": 4}}, blocking={"step070": ["NODE_MISSING"]}))
    drawn = {i for i in _node_lines(chart.text) if i.startswith("n_")}
    assert drawn == {"n_step049", "n_step050", "n_step051", "n_step069", "n_step070", "n_step071"}
    assert chart.notes == (
        "the graph has 100 nodes, more than the 40 drawn: drawn are the 6 nodes with threads or findings and the nodes "
        "next to them",
    )
    assert "  n_step050 --> n_step051" in chart.text.splitlines()
    assert "t_start" not in chart.text and "t_end" not in chart.text  # nothing drawn next to them
    marked = {f"step{i:03d}": {"busy": 1} for i in range(0, 100, 2)}
    chart = flowchart(_chain(100), Marks(pending=marked), max_nodes=10)
    assert len([i for i in _node_lines(chart.text) if i.startswith("n_")]) == 10
    assert "40 of them are left out" in chart.notes[0]
    lines = section("big", _chain(100), "live", {"step050": {"interrupted": 4}}, [])
    assert "The graph has 100 nodes, more than the 40 drawn" in lines[-1]


# -- the report sections -------------------------------------------------------------------------


def test_only_graphs_with_threads_or_findings_are_drawn() -> None:
    data = {
        "graphs": {
            "busy": {"threads_scanned": 2, "pending_at": {"triage": {"interrupted": 2}}},
            "quiet": {"threads_scanned": 0, "pending_at": {}},
            "broken": {"threads_scanned": 0, "pending_at": {}},
        },
        "findings": [{"graph_id": "broken", "severity": "block", "code": "GRAPH_REMOVED", "node": None, "field": None}],
    }
    drawn = {g: (HELPDESK, "live") for g in ("busy", "quiet", "broken")}
    text = "\n".join(sections(data, drawn))
    assert "#### `busy`" in text and "#### `broken`" in text and "`quiet`" not in text
    assert "Blocking on the whole graph (no node): `GRAPH_REMOVED`." in text
    assert sections(data, {}) == []  # a report that draws nothing (replay's)
    assert "No topology of this graph is known" in "\n".join(sections(data, {"busy": (HELPDESK, "live")}))


# -- reports built from the recorded threads ---------------------------------------------------


@pytest.fixture(scope="module")
def v1_locks() -> dict[str, dict]:
    return {gid: contract_of(gid, graph) for gid, graph in load_compiled(V1 / "langgraph.json").items()}


def _gate_report(candidate_config: Path, locks: dict) -> GateReport:
    """The gate's report on the recorded threads against a candidate, as `commands.gate` builds it."""
    registered, candidates = load_candidate(candidate_config)
    live = {
        gid: LiveGraph(
            graph_id=gid,
            topology=Topology.from_json(g["topology"]),
            reducers=reducers_from_lock(locks.get(gid)),
            lock=lock_document(locks[gid]) if gid in locks else None,
        )
        for gid, g in SNAPSHOT["graphs"].items()
    }
    evaluator = Evaluator(live=live, candidates=candidates, registered=registered)
    for graph_id in live:
        evaluator.summary(graph_id)
    for thread in SNAPSHOT["threads"]:
        evaluator.add(ThreadSnapshot.from_json(thread))
    return GateReport(
        live_url="http://127.0.0.1:2024",
        candidate="candidate/langgraph.json",
        strict=False,
        graphs=evaluator.summaries,
        findings=evaluator.findings(),
        drawings=drawings(list(live), live, candidates),
    )


VARIANTS = {
    "interrupted-node-renamed": BREAKING["interrupted-node-renamed"][0],
    "subgraph-node-renamed": BREAKING["subgraph-node-renamed"][0],
    "graph-removed": BREAKING["graph-removed"][0],
    "reducer-changed": BREAKING["reducer-changed"][0],
    "unguarded-insert": WARN_ONLY["unguarded-insert"][0],
    "safe": SAFE["add-notrequired-field"],
}


@pytest.fixture(scope="module")
def reports(v1_locks, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The gate's Markdown on the recorded threads, per candidate variant."""
    return {
        name: render(_gate_report(make_variant(tmp_path_factory.mktemp(name), "candidate", edits), v1_locks), "markdown")
        for name, edits in VARIANTS.items()
    }


def test_gate_markdown_draws_the_threads_and_the_blocked_node(reports: dict[str, str]) -> None:
    text = reports["interrupted-node-renamed"]
    blocks = FENCE.findall(text)
    assert len(blocks) == 3  # escalation, helpdesk, notes: each has live threads
    helpdesk = next(b for b in blocks if "n_triage" in b)
    assert 'n_triage["triage<br>2 interrupted"]' in helpdesk
    assert 't_start(["START<br>1 idle"])' in helpdesk
    assert _classes(helpdesk)["blocking"] == {"n_triage"}
    assert "Red: blocking findings at `triage` (NODE_MISSING)." in text
    assert "Drawn from the live server's topology (`get_graph(xray=True)`)." in text
    assert "conditional edges dotted" not in text  # the fixture's graphs have none
    assert section("agent", AGENT, "live", {}, [])[-1].startswith(
        "Drawn from the live server's topology (`get_graph(xray=True)`), conditional edges dotted."
    )
    escalation = next(b for b in blocks if "sg_review" in b)
    assert 'n_review__confirm["confirm<br>1 interrupted"]' in escalation
    assert "blocking" not in _classes(escalation)
    sub = FENCE.findall(reports["subgraph-node-renamed"])
    assert _classes(next(b for b in sub if "sg_review" in b))["blocking"] == {"n_review__confirm"}
    assert "Blocking on the whole graph (no node): `GRAPH_REMOVED`." in reports["graph-removed"]
    assert "Blocking on the whole graph (no node): `REDUCER_CHANGED` (field `notes`)." in reports["reducer-changed"]
    assert _classes(next(b for b in FENCE.findall(reports["unguarded-insert"]) if "n_triage" in b))["warning"] == {"n_triage"}
    assert not any("blocking" in _classes(b) for b in FENCE.findall(reports["safe"]))
    assert "Red:" not in reports["safe"]


def test_json_carries_the_threads_per_node(v1_locks) -> None:
    data = _gate_report(V1 / "langgraph.json", v1_locks).to_json()
    assert data["graphs"]["helpdesk"]["pending_at"] == {"__start__": {"idle": 1}, "triage": {"interrupted": 2}}
    assert data["graphs"]["escalation"]["pending_at"] == {"review:confirm": {"interrupted": 1}}


def _inflight_text() -> str:
    summaries: dict[str, GraphSummary] = {}
    for thread in SNAPSHOT["threads"]:
        summaries.setdefault(thread["graph_id"], GraphSummary()).count(ThreadSnapshot.from_json(thread))
    live = {gid: LiveGraph(graph_id=gid, topology=Topology.from_json(g["topology"])) for gid, g in SNAPSHOT["graphs"].items()}
    rows = {gid: [{"status": "interrupted", "flow_version": "none", "next": "x", "threads": 1}] for gid in summaries}
    return inflight_markdown("http://127.0.0.1:2024", rows, None, summaries, drawings(list(live), live))


def test_inflight_markdown_draws_every_graph_with_threads() -> None:
    text = _inflight_text()
    assert text.startswith("**Inflight** (live `http://127.0.0.1:2024`): 5 thread(s)")
    assert len(FENCE.findall(text)) == 3
    assert 'n_triage["triage<br>2 interrupted"]' in text


# -- Mermaid's own parser ----------------------------------------------------------------------


def test_every_diagram_parses_with_mermaids_parser(reports: dict[str, str]) -> None:
    """All the diagrams of this file through ``mermaid.parse`` in one node process: a syntax error is the parser's
    message, not a pattern's opinion. A broken diagram (a keyword as an id) must fail, so the check can fail."""
    reason = parser.available()
    if reason is not None:
        pytest.skip(reason)
    diagrams = {f"gate {name} #{i}": block for name, text in reports.items() for i, block in enumerate(FENCE.findall(text))}
    diagrams |= {f"inflight #{i}": block for i, block in enumerate(FENCE.findall(_inflight_text()))}
    everything = Marks(
        pending={n: {"interrupted": 1, "busy": 2} for n in ODD_NAMES[::2]},
        blocking={n: ["NODE_MISSING"] for n in ODD_NAMES[1::3]},
        warning={n: ["PATH_CHANGED"] for n in ODD_NAMES[2::3]},
    )
    diagrams["odd names"] = flowchart(ODD, everything).text
    diagrams["odd names, absent"] = flowchart(HELPDESK, everything).text
    diagrams["subgraph"] = flowchart(AGENT, Marks(pending={"agent:tools": {"busy": 1}}, blocking={"agent": ["X"]})).text
    diagrams["nested subgraph"] = flowchart(
        Topology.from_json(
            {
                "nodes": ["__start__", "a", "a:b", "a:b:c", "a:b:d"],
                "edges": [["__start__", "a:b:c", False], ["a:b:c", "a:b:d", True]],
            }
        ),
        Marks(pending={"a:b:d": {"interrupted": 1}}, blocking={"a:b": ["NODE_MISSING"]}),
    ).text
    diagrams["capped"] = flowchart(_chain(300), Marks(pending={"step150": {"interrupted": 1}})).text
    diagrams["capped hard"] = flowchart(_chain(300), Marks(pending={f"step{i:03d}": {"busy": 1} for i in range(0, 300, 3)})).text
    for lock_file in sorted(LOCKS.glob("*.json")):  # this repo's own graphs, as the live locks draw them
        topology = Topology.from_lock(json.loads(lock_file.read_text()))
        inner = sorted(n for n in topology.nodes if ":" in n and not n.rsplit(":", 1)[1].startswith("__"))
        marks = Marks(pending={n: {"interrupted": 2} for n in inner[:2]}, blocking={n: ["NODE_MISSING"] for n in inner[2:3]})
        diagrams[f"lock {lock_file.stem}"] = flowchart(topology, marks).text
    broken = "flowchart TD\n  a --> end\n"
    errors = parser.parse({**diagrams, "broken on purpose": broken})
    assert errors.pop("broken on purpose"), "the parser accepted a diagram with a keyword as a node id"
    failed = {name: f"{error}\n---\n{diagrams[name]}" for name, error in errors.items() if error}
    assert not failed, "\n\n".join(f"{name}: {why}" for name, why in failed.items())
    assert len(diagrams) >= 20


def test_inflight_markdown_shows_no_machine_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    text = inflight_markdown(f"sqlite:///{tmp_path}/elsewhere/live.db", {}, None, {}, {})
    assert str(tmp_path) not in text
    assert "live.db`" in text


def test_a_live_lock_draws_like_the_servers_drawing() -> None:
    """A checkpointer source's live topology comes from the lock (``a -?-> b``): campus_supervisor's agents are
    subgraphs, their own start and end joined into the edges, as from ``get_graph(xray=True)``."""
    topology = Topology.from_lock(json.loads((LOCKS / "campus_supervisor.json").read_text()))
    text = flowchart(topology, Marks(pending={"library:tools": {"interrupted": 1}})).text
    lines = [line.strip() for line in text.splitlines()]
    assert {'subgraph sg_library["library"]', 'subgraph sg_academic["academic"]', "n_intake -.-> n_library__model"} <= set(lines)
    assert 'n_library__tools["tools<br>1 interrupted"]' in lines
    assert not any("__start__" in line or "__end__" in line for line in lines)
    assert section("campus_supervisor", topology, "live lock", {}, [])[-1].startswith("Drawn from the live code's contract lock")
