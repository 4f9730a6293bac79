"""Nodes of the ticket-triage graph.

The two model steps have a sync body (`graph.invoke`) and an async twin (`atriage`,
`arespond`: `graph.ainvoke` and the server), wired with `graphs.common.dual.both`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, Literal

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langgraph.constants import TAG_NOSTREAM
from langgraph.func import task
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from graphs.common.context import ModelContext, model_spec
from graphs.common.messages import detect_language, message_text, require_human_text
from graphs.common.models import load_chat_model, load_structured_model
from graphs.ticket_triage.approvals import InvalidResume, build_request, parse_resume
from graphs.ticket_triage.policy import check_policy, sla_hours
from graphs.ticket_triage.prompts import RESPOND_SYSTEM, TRIAGE_SYSTEM, TicketClassification
from graphs.ticket_triage.replies import reply_facts
from graphs.ticket_triage.state import CURRENT_FLOW_VERSION, Approval, Classification, TicketState


def _ticket_text(state: TicketState) -> str:
    return require_human_text(state["messages"], "ticket_triage")


def flow_version(state: TicketState) -> int:
    """The thread's behavioural version; threads from before the stamp are v1."""
    version = state.get("flow_version")
    return version if isinstance(version, int) else 1


def intake(state: TicketState) -> dict[str, Any]:
    """Stamp new threads with the current flow version; keep an existing stamp."""
    _ticket_text(state)  # fail fast on input without a human message
    return {
        "flow_version": state.get("flow_version", CURRENT_FLOW_VERSION),
        "current_step": "intake",
        "next_agent": "triage",
    }


CLASSIFY_TASK: Final = "classify_ticket"
"""The classification task's name: its result is stored under it, so both bodies keep it."""


def _classifier(spec: str) -> Runnable[LanguageModelInput, TicketClassification]:
    return load_structured_model(spec, TicketClassification).with_config(tags=[TAG_NOSTREAM])


def _classified(result: TicketClassification) -> dict[str, Any]:
    return {
        "classification": result.model_dump(),
        "requested_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


@task
def classify_ticket(text: str, model_spec: str) -> dict[str, Any]:
    """Classify once; a resumed `triage` replays this result instead of asking the model again.

    The call is kept out of the messages stream (``nostream``): with ChatOpenAI the
    classification streams as JSON text, which a client would show as an answer.
    """
    return _classified(_classifier(model_spec).invoke([SystemMessage(TRIAGE_SYSTEM), HumanMessage(text)]))


async def _aclassify_ticket(text: str, model_spec: str) -> dict[str, Any]:
    """`classify_ticket` for the async `atriage`, the model awaited."""
    return _classified(await _classifier(model_spec).ainvoke([SystemMessage(TRIAGE_SYSTEM), HumanMessage(text)]))


# A task is named after its function, and its stored result is found by that name: the same
# name as `classify_ticket`, so a thread paused by either body replays the other's result.
# (What ``task(name=...)`` does; its overload leaves the signature untyped for mypy.)
_aclassify_ticket.__name__ = CLASSIFY_TASK
aclassify_ticket = task(_aclassify_ticket)


def route_after_triage(state: TicketState) -> Literal["policy_check", "respond"]:
    """v2 threads go through `policy_check`; v1 threads (no stamp) keep the old path."""
    return "policy_check" if flow_version(state) >= 2 else "respond"


def triage(state: TicketState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """Classify the ticket, then pause for the typed approval it needs."""
    text = _ticket_text(state)
    classified = classify_ticket(text, model_spec(runtime.context)).result()
    return _approved(state, text, classified)


async def atriage(state: TicketState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """`triage` under `graph.ainvoke`: the classification task awaited, then the same pause."""
    text = _ticket_text(state)
    classified = await aclassify_ticket(text, model_spec(runtime.context))
    return _approved(state, text, classified)


def _approved(state: TicketState, text: str, classified: dict[str, Any]) -> dict[str, Any]:
    """Pause for the approval the classification needs; ask again until the answer is valid."""
    classification: Classification = classified["classification"]
    kind = classification["approval_kind"]
    request = build_request(
        kind=kind,
        lang=detect_language(text),
        requested_at=classified["requested_at"],
        next_step=route_after_triage(state),
        summary=classification["summary"],
    )
    payload: dict[str, Any] = dict(request)
    while True:
        value = interrupt(payload)
        try:
            _, answer = parse_resume(value, [request])
            break
        except InvalidResume as exc:
            payload = {**request, "error": str(exc)}
    approval = Approval(
        kind=kind,
        options=request["options"],
        requested_at=request["requested_at"],
        answer=answer,
        answered_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return {
        "classification": classification,
        "approval": approval,
        "current_step": "triage",
        "next_agent": request["next_step"],
    }


def policy_check(state: TicketState) -> dict[str, Any]:
    """Apply the policy rules to the approved plan (flow_version >= 2)."""
    policy = check_policy(state["classification"], state["approval"])
    update: dict[str, Any] = {"policy": policy, "current_step": "policy_check", "next_agent": "respond"}
    hours = sla_hours(policy)
    if hours is not None:
        update["sla_hours"] = hours
    return update


def _respond_call(state: TicketState, runtime: Runtime[ModelContext]) -> tuple[Runnable[Any, BaseMessage], list[BaseMessage]]:
    ticket = _ticket_text(state)
    facts = "\n".join(f"- {fact}" for fact in reply_facts(state, detect_language(ticket)))
    model = load_chat_model(model_spec(runtime.context))
    return model, [SystemMessage(f"{RESPOND_SYSTEM}\n{facts}"), HumanMessage(ticket)]


def _responded(reply: BaseMessage) -> dict[str, Any]:
    text = message_text(reply)
    return {
        "messages": [AIMessage(content=text, id=reply.id, name="respond")],
        "response": text,
        "current_step": "respond",
        "next_agent": "done",
    }


def respond(state: TicketState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """Write the reply from the recorded facts (classification, approval, policy)."""
    model, prompt = _respond_call(state, runtime)
    return _responded(model.invoke(prompt))


async def arespond(state: TicketState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """`respond` under `graph.ainvoke`: the same call, awaited (its tokens stream as they come)."""
    model, prompt = _respond_call(state, runtime)
    return _responded(await model.ainvoke(prompt))
