"""A graph as a Mermaid flowchart for the Markdown reports (gate, shadow, inflight): the graph's own topology,
the live threads paused or pending at each node, and the nodes with findings marked. GitHub draws a
```` ```mermaid ```` block in pull-request comments.

Pure: a `Topology` (the live server's ``get_graph(xray=True)``, the live lock's, or the candidate's) and
counts in, text out. Node ids are made here (``n_<name>``, with a digest when the name is not plain ASCII),
so no node name (Korean, ``end``, quotes, ``:``) reaches Mermaid's syntax; labels are escaped with
Mermaid's entity codes. A subgraph node (``review``, its nodes ``review:confirm``) is a Mermaid
``subgraph``; its own ``__start__``/``__end__`` are contracted into the edges that pass through them. A
graph over `MAX_NODES` is drawn around the nodes that hold threads or findings, and the text says so.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from migrations_playbook.model import Topology

MAX_NODES = 40
"""Nodes drawn at most (START and END not counted); a larger graph is drawn around its nodes with threads
or findings."""
MAX_EDGES = 120
"""Edges drawn at most."""

START, END = "__start__", "__end__"

CLASS_DEFS = {
    "threads": "fill:#fff4c2,stroke:#b08800",
    "warning": "fill:#fff0db,stroke:#e07b00,stroke-width:2px",
    "blocking": "fill:#ffe3e3,stroke:#d00000,stroke-width:3px",
    "absent": "stroke-dasharray:5 4",
    "terminal": "fill:#eeeeee,stroke:#888888",
}
"""Mermaid classes, defined and assigned in this order, so a later one wins where both set a property (a blocked
node with threads is red, whichever of the definition order or the assignment order the renderer follows)."""

_PLAIN = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Marks:
    """What the diagram shows on one graph besides its topology."""

    pending: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Node path -> thread status -> how many live threads are paused at or about to run that node (threads
    with nothing pending are counted at ``__start__``: their next input starts there)."""
    blocking: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Node path -> the codes of the blocking findings at it."""
    warning: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Node path -> the codes of the warnings at it."""


@dataclass(frozen=True)
class Flowchart:
    text: str
    """The Mermaid source (``flowchart TD ...``), without the code fence."""
    notes: tuple[str, ...] = ()
    """What the drawing left out (the cap), in words for the reader."""
    conditional: bool = False
    """Some drawn edge is conditional (dotted)."""


def node_id(path: str, prefix: str = "n") -> str:
    """A Mermaid id for a node path: ``n_triage``, ``n_review__confirm`` for ``review:confirm``; with a digest
    when a name is not plain ASCII (``n_v1_f3a4cf`` for ``분류 "v1"``), so distinct names stay distinct. Always
    prefixed, so never a keyword (``end``, ``graph``, ``class``) and never read as an edge's ``o``/``x`` head.
    (`flowchart` makes the ids it draws unique.)"""
    parts = path.split(":")
    if all(_PLAIN.fullmatch(part) for part in parts):
        return f"{prefix}_{'__'.join(parts)}"
    slug = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")
    digest = hashlib.sha1(path.encode("utf-8")).hexdigest()[:6]
    return f"{prefix}_{slug}_{digest}" if slug else f"{prefix}_{digest}"


def label(text: str) -> str:
    """``text`` for inside a quoted Mermaid label: Mermaid's entity codes for the characters its syntax or
    the HTML label would read (``"`` ``#`` ``<`` ``>`` ``&`` and the backtick of a Markdown string), line
    breaks as spaces."""
    out = text.replace("#", "#35;")
    for char, code in (('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("&", "#amp;"), ("`", "#96;")):
        out = out.replace(char, code)
    return re.sub(r"\s+", " ", out)


def counts_text(by_status: Mapping[str, int]) -> str:
    """``3 interrupted · 1 busy``: the threads at a node by status, most first."""
    items = sorted(by_status.items(), key=lambda kv: (-kv[1], kv[0]))
    return " · ".join(f"{n} {status}" for status, n in items if n)


def _parent(path: str) -> str | None:
    return path.rsplit(":", 1)[0] if ":" in path else None


def _name(path: str) -> str:
    return path.rsplit(":", 1)[-1]


def _contract(nodes: set[str], edges: dict[tuple[str, str], bool]) -> None:
    """Remove each subgraph's own ``P:__start__``/``P:__end__`` that has edges in and out, joining the edges
    through it (conditional when either part is; a solid path wins over a conditional one)."""
    for pseudo in sorted(n for n in nodes if ":" in n and _name(n) in (START, END)):
        ins = [(s, c) for (s, t), c in edges.items() if t == pseudo and s != pseudo]
        outs = [(t, c) for (s, t), c in edges.items() if s == pseudo and t != pseudo]
        if not ins or not outs:
            continue
        for key in [k for k in edges if pseudo in k]:
            del edges[key]
        nodes.discard(pseudo)
        for source, c_in in ins:
            for target, c_out in outs:
                conditional = c_in or c_out
                edges[(source, target)] = edges.get((source, target), True) and conditional


def _layout(topology: Topology) -> tuple[set[str], dict[tuple[str, str], bool], set[str]]:
    """Nodes and edges to draw, and the containers (subgraph nodes drawn as Mermaid subgraphs)."""
    nodes = set(topology.nodes)
    edges: dict[tuple[str, str], bool] = {}
    for source, target, conditional in topology.edges:
        nodes.update((source, target))
        edges[(source, target)] = edges.get((source, target), True) and conditional
    containers = {p for n in nodes for p in _prefixes(n)}
    for container in containers:
        inner = container + ":"
        if any(s.startswith(inner) or t.startswith(inner) for s, t in edges):
            # the plain drawing's edges to the subgraph node itself: the xray edges to its inner nodes replace them
            for key in [k for k in edges if container in k]:
                del edges[key]
    _contract(nodes, edges)
    return nodes, edges, containers


def _prefixes(path: str) -> list[str]:
    parts = path.split(":")
    return [":".join(parts[:i]) for i in range(1, len(parts))]


def _cap(
    nodes: set[str], edges: dict[tuple[str, str], bool], containers: set[str], focus: set[str], max_nodes: int
) -> tuple[set[str], list[str]]:
    """The nodes to draw when there are more than ``max_nodes``: the focus nodes (threads, findings) and their
    neighbours, START and END; the focus alone (most threads first) when even that is too many."""
    leaves = {n for n in nodes if n not in containers}
    drawable = {n for n in leaves if n not in (START, END)}
    if len(drawable) <= max_nodes:
        return leaves, []
    near = set(focus)
    for source, target in edges:
        if source in focus:
            near.add(target)
        if target in focus:
            near.add(source)
    near = {n for n in near if n in leaves and n not in (START, END)}
    notes = []
    if len(near) > max_nodes:
        kept = sorted(focus & drawable, key=lambda n: n)[:max_nodes]
        near = set(kept)
        left = len(focus & drawable) - len(kept)
        notes.append(
            f"the graph has {len(drawable)} nodes, more than the {max_nodes} drawn: only nodes with threads or findings "
            f"are drawn" + (f", and {left} of them are left out (the tables list them)" if left > 0 else "")
        )
    else:
        notes.append(
            f"the graph has {len(drawable)} nodes, more than the {max_nodes} drawn: drawn are the {len(near)} nodes "
            "with threads or findings and the nodes next to them"
        )
    return near | {START, END}, notes


def flowchart(topology: Topology, marks: Marks, *, max_nodes: int = MAX_NODES, max_edges: int = MAX_EDGES) -> Flowchart:
    """The graph as ``flowchart TD``: START and END as rounded terminals, subgraph nodes as subgraphs,
    conditional edges dotted, each node with threads labelled with their counts by status (class
    ``threads``), nodes with blocking findings in red (``blocking``), with warnings in orange (``warning``),
    marked nodes the topology lacks dashed (``absent``)."""
    nodes, edges, containers = _layout(topology)
    marked = set(marks.pending) | set(marks.blocking) | set(marks.warning)
    absent = {n for n in marked if n not in nodes}
    for node in absent:  # a node threads are at (or a finding names) that this topology has not: drawn apart
        nodes.add(node)
        containers.update(_prefixes(node))
    focus = {n for n in marked if n not in containers} | {
        n for n in nodes if n not in containers and any(p in marked for p in _prefixes(n))
    }
    shown, notes = _cap(nodes, edges, containers, focus, max_nodes)
    used_containers = {p for n in shown for p in _prefixes(n)}
    ends = shown | used_containers
    drawn_edges = [(s, t, c) for (s, t), c in sorted(edges.items()) if s in ends and t in ends]
    if len(drawn_edges) > max_edges:
        drawn_edges.sort(key=lambda e: (not (e[0] in focus or e[1] in focus), e[0], e[1]))
        notes.append(f"{len(drawn_edges) - max_edges} of the {len(drawn_edges)} edges are not drawn (the cap is {max_edges})")
        drawn_edges = sorted(drawn_edges[:max_edges])
    touched = {n for s_, t_, _ in drawn_edges for n in (s_, t_)}
    shown = {n for n in shown if n not in (START, END) or n in touched or n in marks.pending}  # no lone START/END

    ids: dict[str, str] = {}
    taken: set[str] = set()

    def ident(path: str, prefix: str = "n") -> str:
        key = f"{prefix}|{path}"
        if key not in ids:
            base = {START: "t_start", END: "t_end"}.get(path) or node_id(path, prefix)
            candidate, k = base, 2
            while candidate in taken:
                candidate, k = f"{base}_{k}", k + 1
            taken.add(candidate)
            ids[key] = candidate
        return ids[key]

    lines = ["flowchart TD"]
    classes: dict[str, list[str]] = {}

    def node_line(path: str) -> str:
        counted = counts_text(marks.pending.get(path, {}))
        if path in (START, END):
            text = "START" if path == START else "END"
            text += f"<br>{label(counted)}" if counted else ""
            classes.setdefault("terminal", []).append(ident(path))
            return f'{ident(path)}(["{text}"])'
        if counted:  # the classes drawn later (blocking, warning) win over this one where they overlap
            classes.setdefault("threads", []).append(ident(path))
        name = _name(path)
        text = label(name) + (f"<br>{label(counted)}" if counted else "")
        if path in absent:
            text += "<br>not in this topology"
            classes.setdefault("absent", []).append(ident(path))
        if path in marks.blocking:
            classes.setdefault("blocking", []).append(ident(path))
        elif path in marks.warning:
            classes.setdefault("warning", []).append(ident(path))
        if _name(path) in (START, END):  # a subgraph's own start/end left drawn (no edge through it)
            return f'{ident(path)}(("{"start" if _name(path) == START else "end"}"))'
        return f'{ident(path)}["{text}"]'

    styles: list[str] = []

    def order(path: str) -> tuple[int, str]:  # START first and END last: Mermaid lays nodes out in this order
        return ({START: 0, END: 2}.get(path, 1), path)

    def emit(parent: str | None, indent: str) -> None:
        for path in sorted((n for n in shown if _parent(n) == parent and n not in used_containers), key=order):
            lines.append(indent + node_line(path))
        for container in sorted(c for c in used_containers if _parent(c) == parent):
            counted = counts_text(marks.pending.get(container, {}))
            title = label(_name(container)) + (f" · {label(counted)}" if counted else "")
            sid = ident(container, "sg")
            lines.append(f'{indent}subgraph {sid}["{title}"]')
            emit(container, indent + "  ")
            lines.append(f"{indent}end")
            if container in marks.blocking:
                styles.append(f"style {sid} stroke:#d00000,stroke-width:3px")
            elif container in marks.warning:
                styles.append(f"style {sid} stroke:#e07b00,stroke-width:2px")

    emit(None, "  ")

    def end_id(path: str) -> str:  # an edge to a subgraph node drawn as a subgraph goes to the subgraph
        return ident(path, "sg") if path in used_containers else ident(path)

    for source, target, conditional in drawn_edges:
        arrow = "-.->" if conditional else "-->"
        lines.append(f"  {end_id(source)} {arrow} {end_id(target)}")
    lines += [f"  classDef {name} {style}" for name, style in CLASS_DEFS.items()]
    for name in CLASS_DEFS:
        if classes.get(name):
            lines.append(f"  class {','.join(sorted(set(classes[name])))} {name}")
    lines += [f"  {s}" for s in styles]
    return Flowchart(text="\n".join(lines), notes=tuple(notes), conditional=any(c for _, _, c in drawn_edges))


def marks_of(graph_id: str, pending: Mapping[str, Mapping[str, int]], findings: Iterable[Mapping[str, Any]]) -> Marks:
    """The marks of ``graph_id`` from a report's JSON: its ``pending_at`` and the findings naming a node."""
    blocking: dict[str, list[str]] = {}
    warning: dict[str, list[str]] = {}
    for finding in findings:
        if finding.get("graph_id") != graph_id or not finding.get("node"):
            continue
        into = blocking if finding.get("severity") == "block" else warning
        codes = into.setdefault(str(finding["node"]), [])
        if finding["code"] not in codes:
            codes.append(str(finding["code"]))
    return Marks(pending=pending, blocking=blocking, warning=warning)


DRAWN_FROM = {
    "live": "the live server's topology (`get_graph(xray=True)`)",
    "live lock": "the live code's contract lock",
    "candidate": "the candidate's topology (the live one is not known)",
}


def section(
    graph_id: str,
    topology: Topology | None,
    drawn_from: str,
    pending: Mapping[str, Mapping[str, int]],
    findings: Sequence[Mapping[str, Any]],
    *,
    max_nodes: int = MAX_NODES,
) -> list[str]:
    """Markdown lines for one graph: a heading, the ```` ```mermaid ```` block, and a legend that says what the
    numbers and colours mean, which findings are on the whole graph, and what the cap left out."""
    marks = marks_of(graph_id, pending, findings)
    lines = [f"#### `{graph_id}`", ""]
    graph_wide = sorted(
        {
            f"`{f['code']}`" + (f" (field `{f['field']}`)" if f.get("field") else "")
            for f in findings
            if f.get("graph_id") == graph_id and f.get("severity") == "block" and not f.get("node")
        }
    )
    if topology is None:
        lines.append("No topology of this graph is known (no live assistant, no lock, not in the candidate): not drawn.")
    else:
        chart = flowchart(topology, marks, max_nodes=max_nodes)
        lines += ["```mermaid", chart.text, "```", ""]
        legend = [
            f"Drawn from {DRAWN_FROM.get(drawn_from, drawn_from)}" + (", conditional edges dotted." if chart.conditional else ".")
        ]
        if any(marks.pending.values()):
            legend.append("The numbers are the live threads paused at or about to run each node, by status")
            if START in marks.pending:
                legend[-1] += " (at START: threads with nothing pending; their next input starts there)"
            legend[-1] += "."
        if marks.blocking:
            named = ", ".join(f"`{n}` ({', '.join(c)})" for n, c in sorted(marks.blocking.items()))
            legend.append(f"Red: blocking findings at {named}.")
        if marks.warning:
            named = ", ".join(f"`{n}` ({', '.join(c)})" for n, c in sorted(marks.warning.items()))
            legend.append(f"Orange: warnings at {named}.")
        if any(n not in topology.nodes for n in (*marks.pending, *marks.blocking, *marks.warning)):
            legend.append("Dashed: a node the drawn topology does not have.")
        legend += [note[0].upper() + note[1:] + "." for note in chart.notes]
        lines.append(" ".join(legend))
    if graph_wide:
        lines += ["", f"Blocking on the whole graph (no node): {', '.join(graph_wide)}."]
    return lines


def sections(
    data: Mapping[str, Any],
    drawings: Mapping[str, tuple[Topology | None, str]],
    *,
    max_nodes: int = MAX_NODES,
) -> list[str]:
    """The ``### Graphs`` part of a gate or shadow report's Markdown (its JSON ``data``): one `section` per graph
    with live threads or findings; nothing when there is none, or when no topology is known at all (a report
    that draws nothing, such as replay's)."""
    if not drawings:
        return []
    findings = list(data.get("findings") or [])
    with_findings = {f.get("graph_id") for f in findings}
    lines: list[str] = []
    for graph_id, graph in data.get("graphs", {}).items():
        if not graph.get("threads_scanned") and graph_id not in with_findings:
            continue
        topology, drawn_from = drawings.get(graph_id, (None, ""))
        lines += ["", *section(graph_id, topology, drawn_from, graph.get("pending_at") or {}, findings, max_nodes=max_nodes)]
    return ["", "### Graphs", *lines] if lines else []
