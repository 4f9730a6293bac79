"""Static facts about node and entrypoint functions, read from their source.

LangGraph replays a paused `@entrypoint`, or a Graph API node that calls
`@task`/`interrupt()`, from its first line on resume, and hands it the recorded
task results and resume values by call position. What a thread needs from the
candidate is therefore the *sequence* of those calls up to where it paused: this
module extracts it (and a few other facts the rules need) from the function's
source, without running anything.

Every fact here is best effort and errs towards "something changed": a call the
analysis cannot place keeps its source text, so a change to it shows as a
difference rather than as nothing.
"""

from __future__ import annotations

import ast
import builtins
import collections
import dataclasses
import enum
import inspect
import textwrap
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

INTERRUPT = "interrupt"
"""The element kind of an ``interrupt(...)`` call in a call sequence."""

MAX_HELPER_DEPTH = 3
"""How deep plain helper functions called from a node are followed."""


@dataclass
class FunctionFacts:
    """What the source of one node/entrypoint function shows."""

    calls: list[str] = field(default_factory=list)
    """`@task` and `interrupt()` calls in execution order: ``task:name(args)`` or ``interrupt(args)``."""
    reads: set[str] = field(default_factory=set)
    """Keys read unguarded from the state argument (``state["k"]`` or ``state.k``)."""
    writes: set[str] | None = field(default_factory=set)
    """Keys the function returns as literal dict keys; None when a return is not a literal dict."""
    targets: set[str] = field(default_factory=set)
    """Node names it can route to: ``Command(goto=...)`` and ``Send(...)`` targets (literals, constants,
    Enum members, local names assigned literals)."""
    dynamic_targets: bool = False
    """Some ``Command(goto=...)``/``Send(...)`` target is computed at run time: `targets` may miss nodes."""
    parent_targets: set[str] = field(default_factory=set)
    """Nodes of the parent graph it routes to: ``Command(graph=Command.PARENT, goto=...)`` (a subgraph's
    hand-off), which are not nodes of its own graph."""
    returns: set[str] = field(default_factory=set)
    """String literals it returns (what a router function picks)."""
    subgraphs: list[Any] = field(default_factory=list)
    """Compiled graphs (Pregel objects) the function's code refers to."""


def _source_tree(func: Callable[..., Any]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


def unwrap_function(obj: Any) -> Callable[..., Any] | None:
    """The Python function behind a node runnable, a task or a bound method."""
    for _ in range(6):
        if obj is None:
            return None
        if inspect.isfunction(obj):
            return obj
        if inspect.ismethod(obj):
            return obj.__func__
        nxt = getattr(obj, "func", None) or getattr(obj, "afunc", None) or getattr(obj, "__wrapped__", None)
        if nxt is None or nxt is obj:
            return None
        obj = nxt
    return None


def _namespace(func: Callable[..., Any]) -> dict[str, Any]:
    names: dict[str, Any] = dict(vars(builtins))
    names.update(getattr(func, "__globals__", {}))
    try:
        closure = inspect.getclosurevars(func)
        names.update(closure.nonlocals)
    except (TypeError, ValueError):
        pass
    return names


def _resolve(expr: ast.expr, names: dict[str, Any]) -> Any:
    if isinstance(expr, ast.Name):
        return names.get(expr.id)
    if isinstance(expr, ast.Attribute):
        base = _resolve(expr.value, names)
        return getattr(base, expr.attr, None) if base is not None else None
    return None


def _is_task(obj: Any) -> bool:
    return type(obj).__name__ == "_TaskFunction" and type(obj).__module__.startswith("langgraph")


def _is_interrupt(obj: Any) -> bool:
    return getattr(obj, "__name__", None) == "interrupt" and (getattr(obj, "__module__", "") or "").startswith("langgraph")


def required_fields(model: type) -> set[str]:
    """Fields a pydantic model or dataclass cannot be built without."""
    fields = getattr(model, "model_fields", None)
    if isinstance(fields, dict):
        return {name for name, info in fields.items() if info.is_required()}
    if dataclasses.is_dataclass(model):
        return {
            f.name
            for f in dataclasses.fields(model)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
    return set()


def _is_pregel(obj: Any) -> bool:
    try:
        from langgraph.pregel import Pregel
    except ImportError:  # pragma: no cover - langgraph is a dependency
        return False
    return isinstance(obj, Pregel)


def _args_text(call: ast.Call) -> str:
    parts = [ast.unparse(a) for a in call.args]
    parts += [f"{k.arg}={ast.unparse(k.value)}" if k.arg else f"**{ast.unparse(k.value)}" for k in call.keywords]
    return ", ".join(parts)


QUESTION_KEYS = ("kind", "type", "name", "question")
"""Keys of a literal interrupt payload that name the question it asks."""


def _question(call: ast.Call) -> str:
    """What identifies an ``interrupt(...)`` call: the question it asks. A literal payload
    naming its kind (``{"kind": "plan_approval", ...}``) is identified by that kind, so
    rewording the rest of it is not a different call; any other payload by its source text."""
    payload = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "value"), None)
    if isinstance(payload, ast.Dict):
        for wanted in QUESTION_KEYS:
            for key, value in zip(payload.keys, payload.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value == wanted
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                ):
                    return f"{wanted}={value.value!r}"
    return _args_text(call)


def _constant_names(value: Any) -> set[str] | None:
    """The node names a Python value stands for: a string, an Enum member whose value is one, a
    ``Send``, or a list/tuple/set of those; None for anything else."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, str):
        return {value}
    node = getattr(value, "node", None)
    if type(value).__name__ == "Send" and isinstance(node, str):
        return {node}
    if isinstance(value, list | tuple | set | frozenset):
        found: set[str] = set()
        for item in value:
            names = _constant_names(item)
            if names is None:
                return None
            found |= names
        return found
    return None


def _goto_names(
    expr: ast.expr | None, names: Mapping[str, Any] | None = None, local: Mapping[str, set[str] | None] | None = None
) -> tuple[set[str], bool]:
    """The node names a goto value can be, and whether that is all of them (False when part of it is
    computed at run time). Literals, ``Send("x", ...)``, conditional expressions, lists; with ``names``
    (the function's globals and closure) constants, Enum members and attributes (``Nodes.REVIEW``);
    with ``local``, names the function assigns string literals to (``nxt = "a" if ok else "b"``)."""
    if expr is None:
        return set(), True
    if isinstance(expr, ast.Constant):
        return ({expr.value}, True) if isinstance(expr.value, str) else (set(), expr.value is None)
    if isinstance(expr, ast.List | ast.Tuple | ast.Set):
        found: set[str] = set()
        complete = True
        for item in expr.elts:
            more, whole = _goto_names(item, names, local)
            found |= more
            complete = complete and whole
        return found, complete
    if isinstance(expr, ast.Call) and _call_name(expr) == "Send" and expr.args:
        return _goto_names(expr.args[0], names, local)
    if isinstance(expr, ast.IfExp):
        body, body_whole = _goto_names(expr.body, names, local)
        orelse, orelse_whole = _goto_names(expr.orelse, names, local)
        return body | orelse, body_whole and orelse_whole
    if isinstance(expr, ast.Name) and local is not None and expr.id in local:
        assigned = local[expr.id]
        return (set(assigned), True) if assigned is not None else (set(), False)
    if isinstance(expr, ast.Name | ast.Attribute) and names is not None:
        resolved = _constant_names(_resolve(expr, dict(names)))
        if resolved is not None:
            return resolved, True
    return set(), False


def _literal_names(expr: ast.expr | None) -> set[str]:
    """String constants in a goto value: ``"x"``, ``["x", "y"]``, ``Send("x", ...)``."""
    return _goto_names(expr)[0]


def _own_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function's own body, breadth first as `ast.walk` gives them, without the bodies
    of nested functions, lambdas and classes (they bind their own names)."""
    queue = collections.deque(ast.iter_child_nodes(tree))
    while queue:
        node = queue.popleft()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            queue.extend(ast.iter_child_nodes(node))


def _is_parent(expr: ast.expr) -> bool:
    """``Command.PARENT`` (or its value, ``"__parent__"``): the graph a subgraph's Command goes to."""
    if isinstance(expr, ast.Attribute):
        return expr.attr == "PARENT"
    return isinstance(expr, ast.Constant) and expr.value == "__parent__"


def _local_targets(tree: ast.AST, names: Mapping[str, Any]) -> dict[str, set[str] | None]:
    """Names the function body assigns, in source order, to what `_goto_names` can tell: the node names
    (when every assignment is a known value) or None (some assignment is computed at run time)."""
    local: dict[str, set[str] | None] = {}
    for node in _own_nodes(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            found, whole = _goto_names(value, names, local)
            known = local.get(target.id, set())
            local[target.id] = None if not whole or known is None else known | found
    return local


def _string_keys(display: ast.Dict) -> set[str] | None:
    """The keys of a dict display when every one is a string literal; None otherwise (``**x`` included)."""
    keys: set[str] = set()
    for key in display.keys:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        keys.add(key.value)
    return keys


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self, facts: FunctionFacts, names: dict[str, Any], state_arg: str | None, depth: int, seen: set[int]):
        self.facts = facts
        self.names = names
        self.state_arg = state_arg
        self.aliases: frozenset[str] = frozenset()
        """Other local names bound to the state argument (``prev = previous or {}``)."""
        self.depth = depth
        self.seen = seen
        self.local: dict[str, set[str] | None] = {}

    def _is_state(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Name) and bool(self.state_arg) and (expr.id == self.state_arg or expr.id in self.aliases)

    # Arguments run before the call they are passed to: visit them first.
    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        name = _call_name(node)
        if name == "Command":
            graph = next((k.value for k in node.keywords if k.arg == "graph"), None)
            for keyword in node.keywords:
                if keyword.arg != "goto":
                    continue
                if graph is None or (isinstance(graph, ast.Constant) and graph.value is None):
                    self._target(keyword.value)
                elif _is_parent(graph):
                    self.facts.parent_targets |= _goto_names(keyword.value, self.names, self.local)[0]
                # another graph named by id: not a node of this graph, nothing the gate can check
        elif name == "Send" and node.args:
            self._target(node.args[0])
        target = _resolve(node.func, self.names)
        self.facts.reads |= self._validated_keys(node, target)
        if _is_interrupt(target):
            self.facts.calls.append(f"{INTERRUPT}({_question(node)})")
        elif _is_task(target):
            task_name = getattr(target, "__name__", None) or getattr(unwrap_function(target), "__name__", "?")
            self.facts.calls.append(f"task:{task_name}({_args_text(node)})")
        elif inspect.isfunction(target) and self.depth < MAX_HELPER_DEPTH and id(target) not in self.seen:
            # A plain helper in the project: its task/interrupt calls happen here, in order.
            helper = analyse(target, depth=self.depth + 1, seen=self.seen, with_state=False)
            self.facts.calls.extend(helper.calls)
            self.facts.targets |= helper.targets
            self.facts.parent_targets |= helper.parent_targets
            self.facts.dynamic_targets = self.facts.dynamic_targets or helper.dynamic_targets
            self.facts.subgraphs.extend(s for s in helper.subgraphs if s not in self.facts.subgraphs)

    def _target(self, expr: ast.expr) -> None:
        found, whole = _goto_names(expr, self.names, self.local)
        self.facts.targets |= found
        self.facts.dynamic_targets = self.facts.dynamic_targets or not whole

    def _validated_keys(self, node: ast.Call, target: Any) -> set[str]:
        """Required fields of a model the state argument is validated into in the body
        (``Model.model_validate(state)``, ``Model(**state)``): keys it cannot run without."""
        if not self.state_arg:
            return set()
        model = None
        first = node.args[0] if node.args else None
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in ("model_validate", "parse_obj")
            and first is not None
            and self._is_state(first)
        ):
            model = _resolve(node.func.value, self.names)
        elif any(k.arg is None and self._is_state(k.value) for k in node.keywords):
            model = target
        return required_fields(model) if isinstance(model, type) else set()

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.generic_visit(node)
        if (
            self.state_arg
            and isinstance(node.ctx, ast.Load)
            and self._is_state(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            self.facts.reads.add(node.slice.value)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)
        if (
            self.state_arg
            and isinstance(node.ctx, ast.Load)
            and self._is_state(node.value)
            and not node.attr.startswith("_")
            and node.attr not in {"get", "keys", "items", "values", "model_dump", "copy"}
        ):
            self.facts.reads.add(node.attr)

    def visit_Name(self, node: ast.Name) -> None:
        value = self.names.get(node.id)
        if _is_pregel(value) and value not in self.facts.subgraphs:
            self.facts.subgraphs.append(value)

    def visit_Return(self, node: ast.Return) -> None:
        self.generic_visit(node)
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            self.facts.returns.add(value.value)
        elif isinstance(value, ast.List | ast.Tuple | ast.IfExp):
            self.facts.returns |= _literal_names(value)
        if self.facts.writes is None:
            return
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return
        writes = self.facts.writes
        if isinstance(value, ast.Dict) and (keys := _string_keys(value)) is not None:
            writes |= keys
        elif isinstance(value, ast.Call) and _call_name(value) == "Command":
            for keyword in value.keywords:  # at most one `update=`: a repeated keyword does not parse
                if keyword.arg == "update":
                    if isinstance(keyword.value, ast.Dict) and (keys := _string_keys(keyword.value)) is not None:
                        writes |= keys
                    else:
                        self.facts.writes = None
        else:
            self.facts.writes = None

    # Nested function definitions run later (or never): not part of this body.
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        return

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 - ast.NodeVisitor naming
    visit_Lambda = visit_FunctionDef  # noqa: N815 - ast.NodeVisitor naming; same: a lambda body runs later


def analyse(
    func: Callable[..., Any] | None, *, depth: int = 0, seen: set[int] | None = None, with_state: bool = True
) -> FunctionFacts:
    """The facts of one function (empty when its source cannot be read)."""
    facts = FunctionFacts()
    func = unwrap_function(func)
    if func is None:
        facts.writes = None
        return facts
    seen = set() if seen is None else seen
    seen.add(id(func))
    tree = _source_tree(func)
    if tree is None:
        facts.writes = None
        return facts
    params = [a.arg for a in [*tree.args.posonlyargs, *tree.args.args]]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    state_arg = params[0] if with_state and params else None
    names = _namespace(func)
    visitor = _Visitor(facts, names, state_arg, depth, seen)
    visitor.local = _local_targets(tree, names)
    for statement in tree.body:
        visitor.visit(statement)
    return facts


TOOL_MARK = "tool:"
"""Starts each tool's section in a ToolNode's call sequence (``tool:escalate``)."""


def analyse_node(runnable: Any) -> FunctionFacts:
    """`analyse` for a node runnable; a ToolNode's tools run inside its task, so their
    `@task`/`interrupt()` calls are its calls: one section per tool, by tool name."""
    tools = getattr(runnable, "tools_by_name", None)
    facts = analyse(runnable)
    if not isinstance(tools, dict):
        return facts
    for name in sorted(tools):
        tool = tools[name]
        inner = analyse(getattr(tool, "func", None) or getattr(tool, "coroutine", None), with_state=False)
        if inner.calls:
            facts.calls.extend([f"{TOOL_MARK}{name}", *inner.calls])
    return facts


def sections(calls: Iterable[str]) -> dict[str, list[str]]:
    """A call sequence split into its tool sections (``""``: the node's own calls)."""
    out: dict[str, list[str]] = {"": []}
    current = ""
    for call in calls:
        if call.startswith(TOOL_MARK):
            current = call[len(TOOL_MARK) :]
            out[current] = []
        else:
            out[current].append(call)
    return out


def resume_prefix(calls: Iterable[str]) -> int:
    """How many leading calls a paused run may have recorded: up to and including
    the last ``interrupt`` (the latest point a thread can wait at), or all of
    them when there is none (an errored or busy run may have got anywhere)."""
    calls = list(calls)
    last = max((i for i, c in enumerate(calls) if c.startswith(INTERRUPT + "(")), default=None)
    return len(calls) if last is None else last + 1


PREVIOUS = "previous"
"""The parameter a Functional API entrypoint receives its thread's saved value in."""


@dataclass
class SavedValueFacts:
    """What an entrypoint's source shows about the saved value it is handed (``previous``)."""

    reads: set[str] = field(default_factory=set)
    """Keys read unguarded from it (``previous["k"]``, ``previous.k``; also through a local bound to
    ``previous``, ``previous or {}`` or ``previous if ... else ...``; ``.get`` is not a read)."""
    annotation: Any = None
    """The declared type of ``previous``; None when it is not annotated."""
    saves_other: bool = False
    """Some return is ``entrypoint.final(..., save=...)``: what it saves is not what it returns."""


def _binds_state(value: ast.expr, names: frozenset[str]) -> bool:
    """The expression is the saved value (or it, defaulted): ``previous``, ``previous or {}``,
    ``previous if previous else {}``."""
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        return _binds_state(value.values[0], names)
    if isinstance(value, ast.IfExp):
        return _binds_state(value.body, names) or _binds_state(value.orelse, names)
    return False


def saved_value(func: Callable[..., Any] | None) -> SavedValueFacts | None:
    """The saved-value facts of an entrypoint function; None when it takes no ``previous``
    (then it never reads what its thread saved) or its source cannot be read."""
    func = unwrap_function(func)
    if func is None:
        return None
    try:
        parameter = inspect.signature(func).parameters.get(PREVIOUS)
    except (TypeError, ValueError):
        return None
    tree = _source_tree(func)
    if parameter is None or tree is None:
        return None
    facts = SavedValueFacts()
    if parameter.annotation is not inspect.Parameter.empty:
        try:
            facts.annotation = typing.get_type_hints(func, include_extras=True).get(PREVIOUS, parameter.annotation)
        except Exception:  # noqa: BLE001 - an annotation that cannot be resolved is not a type to check
            facts.annotation = None
    aliases = {PREVIOUS}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _binds_state(node.value, frozenset(aliases)):
            aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            call = node.value
            if _call_name(call) == "final" and any(k.arg == "save" for k in call.keywords):
                facts.saves_other = True
    found = FunctionFacts()
    visitor = _Visitor(found, _namespace(func), PREVIOUS, MAX_HELPER_DEPTH, {id(func)})
    visitor.aliases = frozenset(aliases - {PREVIOUS})
    for statement in tree.body:
        visitor.visit(statement)
    facts.reads = found.reads
    return facts
