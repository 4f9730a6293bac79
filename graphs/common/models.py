"""The model seam: the one place that turns a model spec into a chat model.

Specs:
* ``offline`` (the default): `OfflineChatModel`, deterministic, no network.
* ``openai:<name>``: `langchain_openai.ChatOpenAI`; needs ``OPENAI_API_KEY``.

Models are built on first use (never at import), cached per spec, so
`langgraph dev` loads every graph without keys. `load_structured_model` caches
the structured-output runnable per (spec, schema) too: binding a schema turns it
into a JSON schema, which costs more than the offline model's whole answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, TypeVar, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.runnables import Runnable
from pydantic import BaseModel

OFFLINE = "offline"
OPENAI_PREFIX = "openai:"
MODEL_ENV = "MODEL"

SchemaT = TypeVar("SchemaT", bound=BaseModel)


class ModelConfigurationError(ValueError):
    """The model spec is unknown or the provider it names is not configured."""


def default_model_spec() -> str:
    """The deployment-wide default: ``$MODEL`` or ``offline``.

    Only a default: a model named in the run's context wins over it.
    """
    return os.environ.get(MODEL_ENV, "").strip() or OFFLINE


def load_chat_model(spec: str | None = None) -> BaseChatModel:
    """Return the chat model for ``spec`` (default: `default_model_spec()`)."""
    return _load(spec.strip() if spec else default_model_spec())


def load_structured_model(spec: str | None, schema: type[SchemaT]) -> Runnable[LanguageModelInput, SchemaT]:
    """``load_chat_model(spec).with_structured_output(schema)``, built once per (spec, schema)."""
    # A pydantic schema (no include_raw) gives instances of it; langchain types every structured output dict | BaseModel.
    return cast("Runnable[LanguageModelInput, SchemaT]", _structured(spec.strip() if spec else default_model_spec(), schema))


@lru_cache(maxsize=32)
def _structured(spec: str, schema: type[BaseModel]) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
    return _parsed_on_the_loop(_with_json_schema_for_tracing(_load(spec).with_structured_output(schema)))


LS_FORMAT = "ls_structured_output_format"
"""The binding argument langchain turns into the ``ls_structured_output_format`` trace metadata."""


def _with_json_schema_for_tracing(runnable: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """The same runnable, its trace metadata's schema given as the JSON schema it becomes.

    `with_structured_output` binds ``ls_structured_output_format={"schema": <pydantic class>}``,
    and every call turns that class into a JSON schema again (`convert_to_json_schema`, about
    0.8 ms per call: more than the offline model's answer) only to put it in the callbacks'
    metadata. Converting once gives the same metadata: the conversion of a JSON schema is
    that schema. Anything of another shape is returned unchanged.
    """
    from langchain_core.runnables import RunnableBinding, RunnableSequence
    from langchain_core.utils.function_calling import convert_to_json_schema

    if not isinstance(runnable, RunnableSequence) or not isinstance(runnable.first, RunnableBinding):
        return runnable
    traced = runnable.first.kwargs.get(LS_FORMAT)
    if not isinstance(traced, dict) or isinstance(traced.get("schema"), dict) or traced.get("schema") is None:
        return runnable
    try:
        schema = convert_to_json_schema(traced["schema"])
    except ValueError:  # langchain then leaves the metadata out; so does the runnable as it is
        return runnable
    first = runnable.first.bind(**{LS_FORMAT: {**traced, "schema": schema}})
    return RunnableSequence(first, *runnable.middle, runnable.last, name=runnable.name)


def _parsed_on_the_loop(runnable: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """The same runnable, its last step (an output parser) calling ``parse_result`` directly.

    langchain's default ``aparse_result`` runs ``parse_result`` in a worker thread
    (``run_in_executor``): for a tool call's few fields that is a thread hop per structured
    call, which cost more than the parse (about 0.3 ms of CPU, and the GIL handed back and
    forth with the server's loop). A parser with its own ``aparse_result`` is left as it is,
    and so is anything that is not a parser. Same class name, so traces name it as before.
    """
    from langchain_core.output_parsers import BaseLLMOutputParser, BaseOutputParser
    from langchain_core.runnables import RunnableSequence

    if not isinstance(runnable, RunnableSequence) or not isinstance(runnable.last, BaseLLMOutputParser):
        return runnable
    kind: type[Any] = type(runnable.last)
    if kind.aparse_result not in (BaseLLMOutputParser.aparse_result, BaseOutputParser.aparse_result):
        return runnable
    inline: Runnable[Any, Any] = _on_the_loop(kind).model_validate(runnable.last, from_attributes=True)
    return RunnableSequence(runnable.first, *runnable.middle, inline, name=runnable.name)


_ON_THE_LOOP: dict[type[Any], type[Any]] = {}
"""parser class -> its subclass that parses inline (one per class: a new class per call would leak)."""


def _on_the_loop(kind: type[Any]) -> type[Any]:
    async def aparse_result(self: Any, result: list[Any], *, partial: bool = False) -> Any:
        return self.parse_result(result, partial=partial)

    if kind not in _ON_THE_LOOP:
        _ON_THE_LOOP[kind] = type(kind.__name__, (kind,), {"aparse_result": aparse_result, "__module__": kind.__module__})
    return _ON_THE_LOOP[kind]


OFFLINE_DELAY_ENV = "OFFLINE_TOKEN_DELAY_MS"
"""Pacing of the offline model: milliseconds before each streamed token (unset or 0: off)."""


def offline_token_delay_ms(environ: Mapping[str, str] | None = None) -> float:
    """The offline model's pacing from ``OFFLINE_TOKEN_DELAY_MS`` (a number of milliseconds, >= 0)."""
    raw = (os.environ if environ is None else environ).get(OFFLINE_DELAY_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        raise ModelConfigurationError(f"{OFFLINE_DELAY_ENV}={raw!r} is not a number of milliseconds (e.g. 20)") from None
    if value < 0:
        raise ModelConfigurationError(f"{OFFLINE_DELAY_ENV}={raw!r} must be 0 or more milliseconds")
    return value


@lru_cache(maxsize=16)
def _load(spec: str) -> BaseChatModel:
    if spec == OFFLINE:
        from graphs.common.offline import OfflineChatModel

        return OfflineChatModel(token_delay_ms=offline_token_delay_ms())
    if spec.startswith(OPENAI_PREFIX) and spec[len(OPENAI_PREFIX) :]:
        if not os.environ.get("OPENAI_API_KEY"):
            raise ModelConfigurationError(
                f"model {spec!r} needs OPENAI_API_KEY in the server's environment "
                "(.env or the deployment's secrets); use model 'offline' to run without keys"
            )
        from langchain_openai import ChatOpenAI

        # stream_usage: ChatOpenAI asks for the usage chunk only when no OPENAI_BASE_URL is
        # set; asking always keeps one chunk shape (and token counts) behind a proxy too.
        return ChatOpenAI(model=spec[len(OPENAI_PREFIX) :], temperature=0, streaming=True, stream_usage=True)
    raise ModelConfigurationError(f"unknown model spec {spec!r}: use 'offline' or 'openai:<model-name>'")
