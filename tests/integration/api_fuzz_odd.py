"""Deep and oddly typed JSON for the API fuzz (issue 37): the bodies schemathesis does not draw.

Schemathesis draws a body from its operation's schema: valid ones, and invalid ones a declared
field at a time. Two classes of bad input stay out of its reach, and both were 500s:

* **deep** (`deep_requests`): a body nesting past what a layer of the server parses or stores.
  Every route with a body gets one request per declared top-level field (the first
  ``2 * FUZZ_EXAMPLES`` of them, sorted), that field nested `DEPTHS` levels deep, the depths
  taken in turn: 300 is past what orjson writes (the runtime's stores and the in-process
  client encode with it), 5,000 past what Python's parser reads.
* **oddly typed** (`odd_requests`): every id the runtime reads on a route (a declared field
  ending in ``_id``, `RUN_READS` on a run, `NESTED_IDS`) set to a value of another JSON type
  (`odd_values`, drawn).

* **another user's ids** (`foreign_requests`, token mode): every declared ``*_id`` field set to
  the id of another user's thread, assistant, run or checkpoint, sent by the caller: the answer
  may refuse it, but not confirm that it exists.

The base of each request is a valid body drawn by schemathesis, grounded (`ground`): the ids
and the fields a route reads first are real ones of the caller, so the odd part is what the
server gets to. Each request goes through `Fuzzer.check` like every fuzz case: no 5xx, a
refusal (also a 2xx that answers an error) changed nothing, counts of threads and assistants
included, and no answer names another user's data.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import requests
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.integration import api_fuzz

DEPTHS = (300, 5000)
NOT_STRINGS: tuple[Any, ...] = (5, -1, 1.5, True, ["x"], {"x": 1}, [], {})
NOT_OBJECTS: tuple[Any, ...] = (5, 1.5, True, "x", ["x"], [])
NESTED_IDS: dict[tuple[str, ...], str] = {
    ("checkpoint", "checkpoint_id"): "checkpoint",
    ("checkpoint", "checkpoint_ns"): "checkpoint",
    ("config", "configurable", "checkpoint_id"): "config",
    ("metadata", "graph_id"): "supersteps",
}
"""Ids the runtime reads below a top-level field, and the field a route must declare for them to be
tried (``metadata.graph_id`` names the graph a new thread's supersteps are written through)."""
RUN_READS: tuple[tuple[str, ...], ...] = (("checkpoint_id",), ("checkpoint",), ("checkpoint", "checkpoint_id"))
"""What the runtime reads from a run request, declared by its schema or not (`langgraph-sdk` sends a
top-level ``checkpoint_id``; the stateless routes declare no ``checkpoint``)."""
BASE_FIELDS: dict[str, Any] = {
    "message": "캔은 어떻게 버려?",
    "supersteps": [{"updates": [{"values": {"messages": [{"role": "user", "content": "hi"}]}, "as_node": "__input__"}]}],
}
"""Added to the base body of a route that declares them: what the route acts on first (``/visible``
needs a message before it reads the rest; ``POST /threads`` writes its supersteps, so an odd
``metadata.graph_id`` next to them reaches that write)."""


def declared_fields(spec: dict[str, Any], operation: Any) -> list[str]:
    """The top-level fields of the operation's JSON body schema (``$ref`` and ``anyOf`` resolved)."""
    body = operation.definition.raw.get("requestBody") or {}
    schema = ((body.get("content") or {}).get("application/json") or {}).get("schema") or {}
    return sorted(_properties(spec, schema, depth=0))


def _properties(spec: dict[str, Any], schema: Any, depth: int) -> set[str]:
    if not isinstance(schema, dict) or depth > 5:
        return set()
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = spec
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return _properties(spec, target, depth + 1)
    found = set(schema.get("properties") or {})
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key) or []:
            found |= _properties(spec, part, depth + 1)
    if schema.get("type") == "array":
        found |= _properties(spec, schema.get("items"), depth + 1)
    return found


def nested(depth: int) -> str:
    """JSON text nesting arrays and objects ``depth`` levels deep."""
    return '{"x": ' * (depth // 2) + "[" * (depth - depth // 2) + "]" * (depth - depth // 2) + "}" * (depth // 2)


def with_deep_field(body: Any, field: str, depth: int) -> bytes:
    """``body`` with ``field`` nested ``depth`` levels deep, as bytes (Python's encoder stops near
    1,000 levels, so the deep part is spliced in as text). A batch (a list) gets it in its first body."""
    marker = f"deep-{uuid.uuid4().hex}"
    if isinstance(body, list):
        first = body[0] if body and isinstance(body[0], dict) else {}
        text = json.dumps([{**first, field: marker}, *body[1:]])
    else:
        text = json.dumps({**(body if isinstance(body, dict) else {}), field: marker})
    return text.replace(json.dumps(marker), nested(depth), 1).encode()


def with_odd_id(body: Any, path: tuple[str, ...], value: Any) -> Any:
    """``body`` with the id at ``path`` set to ``value`` (the objects on the way made as needed)."""
    if isinstance(body, list):
        return [with_odd_id(body[0] if body else {}, path, value), *body[1:]]
    root: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    here = root
    for part in path[:-1]:
        below = here.get(part)
        here[part] = dict(below) if isinstance(below, dict) else {}
        here = here[part]
    here[path[-1]] = value
    return root


def odd_paths(fields: list[str]) -> list[tuple[str, ...]]:
    """The ids of a route with these declared fields that `odd_requests` sends oddly typed."""
    paths = [(f,) for f in fields if f.endswith("_id")]
    if {"assistant_id", "config"} <= set(fields):  # a run (or a cron)
        paths += RUN_READS
    paths += [path for path, needs in NESTED_IDS.items() if needs in fields]
    return list(dict.fromkeys(paths))


def odd_values(path: tuple[str, ...]) -> tuple[Any, ...]:
    """Values of another JSON type than the one at ``path`` (an object for ``checkpoint``, else a string id)."""
    return NOT_OBJECTS if path == ("checkpoint",) else NOT_STRINGS


def ground(case: Any, real: dict[str, Any], fields: list[str]) -> None:
    """Put the caller's real ids into the case (path parameters and body fields named in
    ``real``), and `BASE_FIELDS` the route declares into its body."""
    case.path_parameters = {k: real.get(k, v) for k, v in (case.path_parameters or {}).items()}
    added = {k: v for k, v in BASE_FIELDS.items() if k in fields}

    def one(body: Any) -> Any:
        return {**{k: real.get(k, v) for k, v in body.items()}, **added} if isinstance(body, dict) else body

    case.body = [one(b) for b in case.body] if isinstance(case.body, list) else one(case.body if case.body else {})


def draw_case(operation: Any, seed_value: int) -> Any | None:
    """One valid case of ``operation`` drawn by schemathesis with this seed, or None."""
    drawn: list[Any] = []

    @settings(max_examples=1, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @seed(seed_value)
    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
    def one(case: Any) -> None:
        drawn.append(case)

    try:
        one()
    except Unsatisfiable:
        return None
    return drawn[0] if drawn else None


def deep_requests(case: Any, fields: list[str], url: str, count: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(what, request kwargs)`` of the deep bodies of one route: its first ``count`` fields."""
    base = case.as_transport_kwargs(base_url=url)
    for n, field in enumerate((fields or ["deep"])[:count]):
        depth = DEPTHS[n % len(DEPTHS)]
        kwargs = {k: v for k, v in base.items() if k not in ("json", "data")}
        kwargs["data"] = with_deep_field(case.body, field, depth)
        kwargs["headers"] = {**(base.get("headers") or {}), "Content-Type": "application/json"}
        yield f"{field} nested {depth} deep", kwargs


def odd_requests(case: Any, fields: list[str], url: str, rng: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(what, request kwargs)`` of the oddly typed ids of one route, each value drawn from `odd_values`."""
    for path in odd_paths(fields):
        value = rng.choice(odd_values(path))
        kwargs = {k: v for k, v in case.as_transport_kwargs(base_url=url).items() if k not in ("json", "data")}
        kwargs["json"] = with_odd_id(case.body, path, value)
        yield f"{'.'.join(path)} = {json.dumps(value)}", kwargs


def foreign_requests(case: Any, fields: list[str], url: str, foreign: dict[str, str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(what, request kwargs)`` of one route with another user's id in each declared id field."""
    for field in fields:
        if field in foreign:
            kwargs = {k: v for k, v in case.as_transport_kwargs(base_url=url).items() if k not in ("json", "data")}
            kwargs["json"] = with_odd_id(case.body, (field,), foreign[field])
            yield f"{field} = another user's", kwargs


def run(
    fuzzer: api_fuzz.Fuzzer,
    operations: list[Any],
    spec: dict[str, Any],
    caller: api_fuzz.Caller,
    real: dict[str, Any],
    *,
    deep_fields: int,
    foreign: dict[str, str] | None = None,
    include: Callable[[Any], bool] = lambda op: True,
) -> None:
    """Send every route with a body its deep requests (``deep_fields`` of them), its oddly typed
    ones and (given ``foreign``, field -> another user's id) its requests with another user's ids,
    as ``caller``, each checked."""
    for index, operation in enumerate(operations):
        if not operation.definition.raw.get("requestBody") or not include(operation):
            continue
        case = draw_case(operation, fuzzer.seed + 5000 + index)
        if case is None:
            fuzzer.tally.skipped.append(f"{operation.label} deep/odd: no valid case to start from")
            continue
        fields = declared_fields(spec, operation)
        ground(case, real, fields)
        rng = random.Random(fuzzer.seed + index)
        started, url = time.monotonic(), fuzzer.world.url
        variants = [
            *deep_requests(case, fields, url, deep_fields),
            *odd_requests(case, fields, url, rng),
            *foreign_requests(case, fields, url, foreign or {}),
        ]
        for what, kwargs in variants:
            try:
                status, body = fuzzer.send(caller, kwargs)
            except requests.RequestException as exc:
                fuzzer.tally.findings.append(api_fuzz.Finding("no-answer", operation.label, caller.name, None, repr(exc), what))
                continue
            curl = f"{operation.label} as {caller.name}, the body drawn with seed {fuzzer.seed + 5000 + index} and {what}"
            fuzzer.check(f"{operation.label} [{what}]", operation.path, caller, kwargs, status, body, curl)
        fuzzer.tally.seconds[f"{operation.label} deep/odd"] = time.monotonic() - started
    fuzzer.verify()
