"""The checkpoint-id rules of server/request_limits.py, on bodies alone (the server tests send them)."""

from __future__ import annotations

from typing import Any

import pytest

from server.request_limits import Refusal, check_body

RUN = "/threads/t/runs/wait"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"checkpoint_id": 5}, "'checkpoint_id'", id="id-int"),
        pytest.param({"checkpoint_id": ["x"]}, "'checkpoint_id'", id="id-list"),
        pytest.param({"checkpoint_id": True}, "'checkpoint_id'", id="id-bool"),
        pytest.param({"checkpoint": 5}, "'checkpoint'", id="checkpoint-int"),
        pytest.param({"checkpoint": ["x"]}, "'checkpoint'", id="checkpoint-list"),
        pytest.param({"checkpoint": {"checkpoint_id": 5}}, "'checkpoint.checkpoint_id'", id="nested-id"),
        pytest.param({"checkpoint": {"checkpoint_ns": {}}}, "'checkpoint.checkpoint_ns'", id="nested-ns"),
        pytest.param({"checkpoint": {"thread_id": 1}}, "'checkpoint.thread_id'", id="nested-thread"),
        pytest.param({"checkpoint": {"checkpoint_map": 5}}, "'checkpoint.checkpoint_map'", id="nested-map"),
        pytest.param({"config": {"configurable": {"checkpoint_id": 5}}}, "'config.configurable.checkpoint_id'", id="config"),
        pytest.param({"config": {"configurable": {"checkpoint_ns": []}}}, "'config.configurable.checkpoint_ns'", id="config-ns"),
    ],
)
def test_a_checkpoint_id_of_another_type_is_a_422_naming_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(Refusal) as refused:
        check_body("POST", RUN, {"assistant_id": "recycling_guide", **body})
    assert refused.value.status == 422 and field in refused.value.detail and "or null" in refused.value.detail
    with pytest.raises(Refusal):
        check_body("POST", "/runs/batch", [{"assistant_id": "recycling_guide"}, body])  # each body of a batch


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="none"),
        pytest.param({"checkpoint_id": None, "checkpoint": None}, id="nulls"),
        pytest.param({"checkpoint_id": "1f0c0000-0000-6000-8000-000000000000"}, id="id"),
        pytest.param({"checkpoint": {"checkpoint_id": "c", "checkpoint_ns": "", "checkpoint_map": {}}}, id="checkpoint"),
        pytest.param({"config": {"configurable": {"checkpoint_id": "c", "other": 5}}}, id="config"),
        pytest.param({"config": {"configurable": 5}}, id="configurable-not-an-object-left-to-the-server"),
    ],
)
def test_checkpoint_ids_that_are_strings_or_null_pass(body: dict[str, Any]) -> None:
    assert check_body("POST", RUN, {"assistant_id": "recycling_guide", **body}) is None


def test_a_long_odd_value_is_shortened_in_the_message() -> None:
    with pytest.raises(Refusal) as refused:
        check_body("POST", RUN, {"checkpoint_id": list(range(1000))})
    assert len(refused.value.detail) < 200 and refused.value.detail.endswith("...")
