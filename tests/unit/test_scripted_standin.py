"""The scripted model behind the OpenAI stand-in (tests/scripted_standin.py) and the stand-in's embeddings,
through langchain-openai's real clients on an ``httpx.MockTransport`` (no socket).

tests/public_templates.py drives public projects with them: the directives in a user message decide the
tool calls and the structured answers, and the same request always gets the same answer.
"""

from __future__ import annotations

import httpx
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from pydantic import BaseModel, Field

from tests.openai_standin import OpenAIStandIn
from tests.scripted_standin import ScriptedModel


def _chat(standin: OpenAIStandIn) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini",
        api_key="sk-standin-dummy",
        base_url="http://openai-standin.invalid/v1",
        http_client=httpx.Client(transport=standin.transport()),
        http_socket_options=(),
    )


def upsert_memory(content: str, context: str, memory_id: str | None = None) -> str:
    """Upsert a memory."""
    return content


def done(finished: bool) -> str:
    """Say the work is done."""
    return "done"


class Clarify(BaseModel):
    need_clarification: bool = Field(description="ask first?")
    question: str
    kind: str = Field(json_schema_extra={"enum": ["ignore", "respond", "notify"]})


def test_listed_tools_are_called_in_order_then_the_model_answers_in_text() -> None:
    model = _chat(OpenAIStandIn(model=ScriptedModel())).bind_tools([upsert_memory, done])
    asked = [SystemMessage("be brief"), HumanMessage("call:upsert_memory call:nowhere call:done remember tea")]
    first = model.invoke(asked)
    assert [(c["name"], sorted(c["args"])) for c in first.tool_calls] == [("upsert_memory", ["content", "context"])]
    answered = [*asked, first, ToolMessage("stored", tool_call_id=first.tool_calls[0]["id"])]
    second = model.invoke(answered)
    assert [c["name"] for c in second.tool_calls] == ["done"]
    third = model.invoke([*answered, second, ToolMessage("ok", tool_call_id=second.tool_calls[0]["id"])])
    script = "call:upsert_memory call:nowhere call:done"
    assert (third.tool_calls, third.content) == ([], f"Stand-in answer after 6 message(s): {script}.")


def test_a_forced_tool_choice_past_the_list_calls_the_last_listed_tool() -> None:
    model = _chat(OpenAIStandIn(model=ScriptedModel())).bind_tools([upsert_memory, done], tool_choice="required")
    call = AIMessage("", tool_calls=[{"name": "done", "args": {"finished": True}, "id": "call_1"}])
    asked = [HumanMessage("call:done"), call, ToolMessage("ok", tool_call_id="call_1")]
    assert [c["name"] for c in model.invoke(asked).tool_calls] == ["done"]
    assert [c["name"] for c in model.invoke([HumanMessage("no script")]).tool_calls] == ["done"]


def test_a_structured_answer_takes_the_set_values_and_repeats_the_directives_in_text() -> None:
    model = _chat(OpenAIStandIn(model=ScriptedModel())).with_structured_output(Clarify)
    asked = [HumanMessage("set:need_clarification=true set:kind=notify set:need_clarification=false call:x topic")]
    answer = model.invoke(asked)
    assert answer == Clarify(
        need_clarification=False,
        question="question: set:need_clarification=true set:kind=notify set:need_clarification=false call:x",
        kind="notify",
    )
    assert model.invoke(asked) == answer


def test_embeddings_are_unit_vectors_that_depend_on_the_text_only() -> None:
    standin = OpenAIStandIn(model=ScriptedModel())
    embeddings = OpenAIEmbeddings(
        model="text-embedding-3-small",
        api_key="sk-standin-dummy",
        base_url="http://openai-standin.invalid/v1",
        http_client=httpx.Client(transport=standin.transport()),
        check_embedding_ctx_length=False,  # no tiktoken file to download in this lane
    )
    tea, busan, tea_again = embeddings.embed_documents(["I like tea", "I live in Busan", "I like tea"])
    assert len(tea) == 1536 and abs(sum(v * v for v in tea) - 1) < 1e-4
    assert tea == tea_again and tea != busan
    assert [r.path for r in standin.requests] == ["/v1/embeddings"]
