"""Nodes of the recycling guide.

    intake -> classify -(waste)---> lookup -> compose
                       -(summary)-> recap  ->
                       -(general)-> chat   ->

Every node reports progress on the custom stream (graphs/recycling_guide/progress.py).
The classifier's model call is kept out of the messages stream (``nostream``):
clients streaming messages see only the answer's tokens. The two model steps have a sync
body (`graph.invoke`) and an async twin (`aclassify`, `acompose`: `graph.ainvoke` and the
server), wired with `graphs.common.dual.both`.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.common.context import ModelContext, model_spec
from graphs.common.messages import detect_language, message_text, require_human_text
from graphs.common.models import load_chat_model, load_structured_model
from graphs.recycling_guide.progress import emit
from graphs.recycling_guide.prompts import (
    CLASSIFY_SYSTEM,
    TurnAnalysis,
    answer_prompt,
    phrase,
)
from graphs.recycling_guide.rules import has_rule, resolve, rule_text, rules
from graphs.recycling_guide.state import (
    CURRENT_FLOW_VERSION,
    Analysis,
    GuideState,
    Intent,
)

ROUTES: dict[Intent, Literal["lookup", "recap", "chat"]] = {
    "waste": "lookup",
    "summary": "recap",
    "general": "chat",
}
"""The node that gathers the facts for each intent."""


def _user_text(state: GuideState) -> str:
    return require_human_text(state.get("messages") or [], "recycling_guide")


def _lang(state: GuideState) -> str:
    return detect_language(_user_text(state))


def intake(state: GuideState) -> dict[str, Any]:
    """Count the turn, stamp new threads, and tell the client the turn is queued."""
    _user_text(state)  # fail fast on input without a human message
    turn = state.get("turn", 0) + 1
    emit("queued", turn)
    return {"flow_version": state.get("flow_version", CURRENT_FLOW_VERSION), "turn": turn}


def _classify_call(user_text: str, runtime: Runtime[ModelContext]) -> tuple[Runnable[Any, TurnAnalysis], list[BaseMessage]]:
    model = load_structured_model(model_spec(runtime.context), TurnAnalysis)
    return model.with_config(tags=[TAG_NOSTREAM]), [SystemMessage(CLASSIFY_SYSTEM), HumanMessage(user_text)]


def _classified(turn: int, result: TurnAnalysis) -> Command[Literal["lookup", "recap", "chat"]]:
    analysis = Analysis(intent=result.intent, item=result.item, part=result.part)
    emit("intent", turn, intent=analysis["intent"])
    return Command(
        update={"analysis": analysis, "intent_history": [analysis["intent"]]},
        goto=ROUTES[analysis["intent"]],
    )


def classify(state: GuideState, runtime: Runtime[ModelContext]) -> Command[Literal["lookup", "recap", "chat"]]:
    """Read the intent, item and part of the latest message; append the intent to the history."""
    model, prompt = _classify_call(_user_text(state), runtime)
    return _classified(state["turn"], model.invoke(prompt))


async def aclassify(state: GuideState, runtime: Runtime[ModelContext]) -> Command[Literal["lookup", "recap", "chat"]]:
    """`classify` under `graph.ainvoke`: the same call, awaited."""
    model, prompt = _classify_call(_user_text(state), runtime)
    return _classified(state["turn"], await model.ainvoke(prompt))


def lookup(state: GuideState) -> dict[str, Any]:
    """Find the rule for a disposal question, resolving follow-ups from the topic."""
    emit("stage", state["turn"], node="lookup")
    lang, analysis = _lang(state), state["analysis"]
    found = resolve(analysis["item"], analysis["part"], state.get("topic"))
    if found.rule is None:
        names = ", ".join(item["name"][lang] for item in rules()["items"].values())
        return {"facts": [phrase("ask_item", lang, items=names)]}
    facts = [rule_text(found.rule, lang)]
    if found.missing_part:
        assert found.topic is not None  # resolve() names the topic with every rule it finds
        item = rules()["items"][found.topic]["name"][lang]
        part = rules()["parts"][analysis["part"]]["name"][lang]
        facts.insert(0, phrase("no_part_rule", lang, item=item, part=part))
    return {"facts": facts, "topic": found.topic, "covered": [found.rule]}


def recap(state: GuideState) -> dict[str, Any]:
    """Gather every rule told so far, once each, in the order they were told (ids the
    dataset no longer has are skipped)."""
    emit("stage", state["turn"], node="recap")
    lang = _lang(state)
    told = [rid for rid in dict.fromkeys(state.get("covered") or []) if has_rule(rid)]
    if not told:
        return {"facts": [phrase("recap_empty", lang)]}
    return {"facts": [phrase("recap", lang), *(rule_text(rid, lang) for rid in told)]}


def chat(state: GuideState) -> dict[str, Any]:
    """Anything else: say what the guide can do."""
    emit("stage", state["turn"], node="chat")
    return {"facts": [phrase("general", _lang(state))]}


def _compose_call(
    facts: list[str], user_text: str, runtime: Runtime[ModelContext]
) -> tuple[Runnable[Any, BaseMessage], list[BaseMessage]]:
    model = load_chat_model(model_spec(runtime.context))
    return model, [SystemMessage(answer_prompt(facts)), HumanMessage(user_text)]


def _composed(turn: int, intent: Intent, reply: BaseMessage) -> dict[str, Any]:
    text = message_text(reply)
    emit("answer", turn, text=text)
    emit("done", turn, intent=intent)
    return {"messages": [AIMessage(content=text, id=reply.id)], "answer": text}


def compose(state: GuideState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """Write the answer from the turn's facts (streamed), then close the turn's events."""
    turn = state["turn"]
    emit("stage", turn, node="compose")
    model, prompt = _compose_call(state["facts"], _user_text(state), runtime)
    return _composed(turn, state["analysis"]["intent"], model.invoke(prompt))


async def acompose(state: GuideState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """`compose` under `graph.ainvoke`: the same call, awaited (its tokens stream as they come)."""
    turn = state["turn"]
    emit("stage", turn, node="compose")
    model, prompt = _compose_call(state["facts"], _user_text(state), runtime)
    return _composed(turn, state["analysis"]["intent"], await model.ainvoke(prompt))
