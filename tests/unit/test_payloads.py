"""What a request may write into a thread (server/payloads.py): pure checks, no server."""

from __future__ import annotations

from typing import Annotated, NotRequired

import pytest
from typing_extensions import TypedDict

from graphs.recycling_guide.graph import builder as guide_builder
from server import payloads
from server.payloads import GraphShape, Limits, Refused

LIMITS = Limits(message_chars=100, request_chars=250, request_messages=5)


class _Stage(TypedDict):
    name: str
    done: bool


SHAPE = GraphShape(
    graph_id="desk",
    nodes=frozenset({"intake", "answer"}),
    fields={
        "messages": list,
        "turn": NotRequired[int],
        "tags": NotRequired[Annotated[list[str], "r"]],
        "stage": NotRequired[_Stage],
    },
)


def _refusal(call, *args, **kwargs) -> Refused:
    with pytest.raises(Refused) as refused:
        call(*args, **kwargs)
    return refused.value


def _user(text: str) -> dict:
    return {"role": "user", "content": text}


# -- messages -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "status", "says"),
    [
        pytest.param({"role": "tool", "content": "x"}, 422, "needs 'tool_call_id'", id="tool-without-call-id"),
        pytest.param({"role": "user", "content": [5]}, 422, "content[0] is not text ('int')", id="number-block"),
        pytest.param(
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,x"}}]},
            422,
            "content[0] is not text ('image_url'); this deployment serves text only",
            id="image-block",
        ),
        pytest.param({"role": "user", "content": [{"type": "text"}]}, 422, "is not text ('text')", id="text-block-without-text"),
        pytest.param({"role": "user", "content": 7}, 422, "content must be a string", id="content-a-number"),
        pytest.param({"role": "user"}, 422, "has no 'content'", id="no-content"),
        pytest.param({"role": "boss", "content": "hi"}, 422, "needs a 'role'", id="unknown-role"),
        pytest.param({"role": "user", "content": "hi", "id": 5}, 422, ".id must be a string", id="id-a-number"),
        pytest.param(
            {"role": "assistant", "content": "x", "tool_calls": 5}, 422, "is not a valid message", id="tool-calls-a-number"
        ),
        pytest.param(
            {"role": "user", "content": "hi", "name": 5}, 422, "is not a valid message (ValidationError", id="name-a-number"
        ),
        pytest.param({"type": "remove", "id": "m1", "content": ""}, 422, "needs a 'role'", id="removal-in-run-input"),
        pytest.param([1, 2], 422, "must be a message object", id="a-list"),
        pytest.param("x" * 101, 413, "has 101 characters; the limit is 100 (MAX_MESSAGE_CHARS)", id="oversized-string"),
        pytest.param(
            {"role": "user", "content": ["x" * 60, {"type": "text", "text": "y" * 41}]},
            413,
            "has 101 characters",
            id="oversized-blocks",
        ),
    ],
)
def test_a_message_the_graph_cannot_store_is_refused_with_what_to_send(message: object, status: int, says: str) -> None:
    refused = _refusal(payloads.check_message, "input.messages[0]", message, 100)
    assert (refused.status, says in refused.message) == (status, True), refused.message


@pytest.mark.parametrize(
    "message",
    [
        pytest.param("a bare string is a human message", id="string"),
        pytest.param(_user("x" * 100), id="at-the-limit"),
        pytest.param({"type": "human", "content": ["a", {"type": "text", "text": "b"}]}, id="text-blocks"),
        pytest.param({"role": "tool", "content": "42", "tool_call_id": "call-1"}, id="tool-answer"),
        pytest.param(
            {"role": "assistant", "content": "", "tool_calls": [{"name": "lookup", "args": {}, "id": "call-1"}]},
            id="tool-call",
        ),
        pytest.param(
            {"content": "hi", "additional_kwargs": {}, "response_metadata": {}, "type": "ai", "name": None, "id": "m1"},
            id="as-get-state-returns-it",
        ),
    ],
)
def test_a_message_the_graph_stores_passes(message: object) -> None:
    assert payloads.check_message("input.messages[0]", message, 100) <= 100


def test_a_removal_is_a_message_only_in_a_state_update() -> None:
    assert payloads.check_message("values.messages[0]", {"type": "remove", "id": "m1", "content": ""}, 100, update=True) == 0
    refused = _refusal(payloads.check_message, "values.messages[0]", {"type": "remove", "content": ""}, 100, update=True)
    assert "needs the 'id'" in refused.message


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        pytest.param(
            [_user("x")] * 6, "carries 6 messages; one request may write at most 5 (MAX_REQUEST_MESSAGES)", id="too-many"
        ),
        pytest.param(
            [_user("x" * 100)] * 3,
            "carries 300 characters of message text; one request may write at most 250",
            id="too-much-text",
        ),
    ],
)
def test_one_request_carries_a_bounded_number_of_messages_and_characters(messages: list, says: str) -> None:
    refused = _refusal(payloads.check_messages, "input.messages", messages, LIMITS)
    assert (refused.status, says in refused.message) == (413, True), refused.message


def test_run_input_needs_a_message_a_state_update_may_send_none() -> None:
    assert "is empty" in _refusal(payloads.check_messages, "input.messages", [], LIMITS).message
    assert payloads.check_messages("values.messages", [], LIMITS, update=True) == (0, 0)
    assert "must be a list of messages, got int" in _refusal(payloads.check_messages, "values.messages", 5, LIMITS).message


def test_limits_come_from_the_environment_and_refuse_a_malformed_value() -> None:
    assert payloads.limits(8000, {}) == Limits(message_chars=8000)
    assert payloads.limits(8000, {"MAX_REQUEST_CHARS": "10", "MAX_REQUEST_MESSAGES": "2"}) == Limits(
        message_chars=8000, request_chars=10, request_messages=2
    )
    with pytest.raises(ValueError, match="MAX_REQUEST_CHARS must be a positive integer"):
        payloads.limits(8000, {"MAX_REQUEST_CHARS": "0"})


# -- state values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "status", "says"),
    [
        pytest.param({"messages": 5}, 422, "values.messages must be a list of messages, got int", id="messages-a-number"),
        pytest.param(
            {"messages": [{"role": "tool", "content": "x"}]}, 422, "values.messages[0] is a tool message", id="tool-without-id"
        ),
        pytest.param({"messages": [_user("x" * 101)]}, 413, "values.messages[0] has 101 characters", id="oversized"),
        pytest.param(
            {"bogus": 1}, 422, "unknown field(s) bogus; the desk state has: messages, stage, tags, turn", id="unknown-field"
        ),
        pytest.param({"turn": "three"}, 422, "values.turn: Input should be a valid integer", id="wrong-type"),
        pytest.param({"turn": 2.0}, 422, "values.turn", id="float-for-int"),
        pytest.param({"tags": {"__overwrite__": [1]}}, 422, "values.tags[0]", id="overwritten-with-wrong-type"),
        pytest.param({"stage": {"name": "x"}}, 422, "values.stage.done: Field required", id="typed-dict-missing-key"),
        pytest.param([("turn", 1)], 422, "values must be an object", id="pairs-outside-a-command"),
    ],
)
def test_state_values_the_graph_cannot_store_are_refused(values: object, status: int, says: str) -> None:
    refused = _refusal(payloads.check_values, "values", values, SHAPE, LIMITS)
    assert (refused.status, says in refused.message) == (status, True), refused.message


def test_state_values_of_the_right_shape_pass() -> None:
    values = {
        "messages": [_user("hi"), {"type": "remove", "id": "m0", "content": ""}],
        "turn": 3,
        "tags": {"__overwrite__": ["a"]},
        "stage": {"name": "intake", "done": False},
    }
    assert payloads.check_values("values", values, SHAPE, LIMITS) == (2, 2)


def test_the_message_bound_counts_every_message_of_the_request() -> None:
    command = {
        "update": {"messages": [_user("x" * 100)] * 2},
        "goto": {"node": "answer", "input": {"messages": [_user("y" * 100)]}},
    }
    refused = _refusal(payloads.check_command, command, SHAPE, LIMITS, waits=True)
    assert (refused.status, "carries 300 characters" in refused.message) == (413, True), refused.message


# -- Command and update_state -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "waits", "status", "says"),
    [
        pytest.param(
            {"update": {"messages": 5}}, True, 422, "command.update.messages must be a list", id="update-messages-a-number"
        ),
        pytest.param({"update": [["turn", "x"]]}, True, 422, "command.update.turn", id="update-as-pairs"),
        pytest.param({"update": 5}, True, 422, "command.update must be an object like", id="update-a-number"),
        pytest.param(
            {"goto": "nope"},
            True,
            422,
            "command.goto names node 'nope', which desk does not have; its nodes are: answer, intake",
            id="goto-unknown",
        ),
        pytest.param({"goto": ["intake", "nope"]}, True, 422, "command.goto[1] names node 'nope'", id="goto-list"),
        pytest.param(
            {"goto": {"node": "nope", "input": {}}}, True, 422, "command.goto.node names node 'nope'", id="send-unknown-node"
        ),
        pytest.param(
            {"goto": {"node": "answer", "input": {"turn": "x"}}}, True, 422, "command.goto.input.turn", id="send-bad-input"
        ),
        pytest.param({"resume": "yes"}, False, 409, "is not waiting for an answer: there is nothing to resume", id="resume-idle"),
        pytest.param(5, True, 422, "command must be an object", id="not-an-object"),
    ],
)
def test_a_command_the_thread_cannot_take_is_refused(command: object, waits: bool, status: int, says: str) -> None:
    refused = _refusal(payloads.check_command, command, SHAPE, LIMITS, waits=waits)
    assert (refused.status, says in refused.message) == (status, True), refused.message


@pytest.mark.parametrize(
    ("command", "waits"),
    [
        pytest.param(None, False, id="no-command"),
        pytest.param({"resume": "yes"}, True, id="resume-of-a-waiting-thread"),
        pytest.param({"resume": "yes"}, None, id="resume-the-graph-checks-itself"),
        pytest.param({"goto": "__end__"}, False, id="goto-end"),
        pytest.param({"goto": [{"node": "answer", "input": {"turn": 1}}], "update": [["turn", 2]]}, False, id="send-and-pairs"),
    ],
)
def test_a_command_the_thread_can_take_passes(command: object, waits: bool | None) -> None:
    payloads.check_command(command, SHAPE, LIMITS, waits=waits)


def test_update_state_checks_as_node_and_allows_no_values() -> None:
    payloads.check_state_update(None, "__copy__", SHAPE, LIMITS)
    payloads.check_state_update({"turn": 1}, "intake", SHAPE, LIMITS)
    refused = _refusal(payloads.check_state_update, None, "nope", SHAPE, LIMITS)
    assert "as_node names node 'nope'" in refused.message


def test_the_shape_of_a_real_graph_comes_from_its_builder() -> None:
    shape = GraphShape.from_builder("recycling_guide", guide_builder)
    assert {"intake", "compose"} <= shape.nodes
    assert {"messages", "intent_history", "turn"} <= set(shape.fields)
    payloads.check_values("values", {"intent_history": {"__overwrite__": ["waste"]}, "turn": 3}, shape, LIMITS)
    refused = _refusal(payloads.check_values, "values", {"analysis": {"intent": "dance", "item": "x", "part": ""}}, shape, LIMITS)
    assert "values.analysis.intent" in refused.message


@pytest.mark.parametrize(
    ("supersteps", "status", "says"),
    [
        pytest.param(
            [{"updates": [{"values": {"messages": 5}, "as_node": "intake"}]}],
            422,
            "supersteps[0].updates[0].values.messages must be a list",
            id="messages-a-number",
        ),
        pytest.param(
            [{"updates": [{"values": {}, "as_node": "nope"}]}],
            422,
            "supersteps[0].updates[0].as_node names node 'nope'",
            id="unknown-node",
        ),
        pytest.param(
            [{"updates": [{"command": {"goto": "nope"}}]}],
            422,
            "supersteps[0].updates[0].command.goto names node 'nope'",
            id="command-goto",
        ),
        pytest.param(
            [{"updates": [{"values": {"messages": [_user("x" * 100)]}, "as_node": "intake"}]}] * 3,
            413,
            "carries 300 characters",
            id="bound-over-all-supersteps",
        ),
        pytest.param([{"values": {}}], 422, "supersteps[0] must be {'updates'", id="no-updates"),
        pytest.param({"updates": []}, 422, "supersteps must be a list", id="not-a-list"),
    ],
)
def test_a_new_threads_supersteps_follow_the_same_rules(supersteps: object, status: int, says: str) -> None:
    refused = _refusal(payloads.check_supersteps, supersteps, SHAPE, LIMITS)
    assert (refused.status, says in refused.message) == (status, True), refused.message


def test_supersteps_the_graph_can_store_pass() -> None:
    payloads.check_supersteps(
        [
            {"updates": [{"values": {"messages": [_user("hi")]}, "as_node": "intake"}]},
            {"updates": [{"values": {"turn": 1}, "as_node": "answer"}]},
        ],
        SHAPE,
        LIMITS,
    )


def test_a_field_whose_annotation_cannot_be_cached_is_still_checked() -> None:
    shape = GraphShape(graph_id="desk", nodes=frozenset({"intake"}), fields={"turn": Annotated[int, {"unhashable": []}]})
    payloads.check_values("values", {"turn": 1}, shape, LIMITS)
    assert "values.turn" in _refusal(payloads.check_values, "values", {"turn": "x"}, shape, LIMITS).message
