"""Exit codes and the errors that map to them (a fixed interface; migrations_playbook/docs/cli.md, "Exit codes").

    0  pass (safe to roll out) / command succeeded
    1  blocked (a block finding, a failed contract check, a rerun whose run failed)
    2  usage or configuration error (bad flags, unreadable config, import error,
       a request the server refused, an operation the source cannot do)
    3  live server (or store, or LangSmith) unreachable, or answering what no Agent Server answers
       (paging that does not advance included), or not done answering when the command's deadline passed

Every layer raises these; only `cli.main` turns them into a message and an exit code.
The helpers below word a refused or failed HTTP request the same way wherever it is caught.
"""

from __future__ import annotations

from typing import Any

EXIT_PASS = 0
EXIT_BLOCKED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


class UsageError(Exception):
    """Bad flags or configuration: exit 2."""


class Unsupported(UsageError):
    """The source cannot do what the command asks of it (a missing capability): exit 2."""


class LiveUnreachable(Exception):
    """The live server (or the store, or LangSmith) did not answer: exit 3."""


class BadAnswer(LiveUnreachable):
    """The server answered, but not as an Agent Server answers that request (a 200 whose body is not
    JSON, or JSON of another shape: HTML from a proxy, an empty or cut-off body, an error payload): exit 3,
    one line naming the request and what came back (`sources/api/answers.py` checks every answer)."""


class NoProgress(BadAnswer):
    """A paged read that does not advance: the server answered a page with nothing new on it (the same
    page whatever the offset), so reading on would never end (`sources/api/paging.py`): exit 3, one line
    naming the server, the route and where the page repeated."""


class OutOfTime(LiveUnreachable):
    """The command's deadline (``--deadline``) passed while a server had not finished answering (a server
    that stalls, or trickles its answer; a search that never ends): exit 3, one line naming the request
    (`sources/budget.py`)."""


def request_of(exc: Exception) -> Any:
    """The httpx request an error is about, or None."""
    try:
        return exc.request  # type: ignore[attr-defined]  # httpx errors; raises RuntimeError when unset
    except (AttributeError, RuntimeError):
        return None


def origin(exc: Exception) -> str:
    """``scheme://host:port`` of the server an error is about (``(unknown)`` when it names none)."""
    request = request_of(exc)
    return f"{request.url.scheme}://{request.url.netloc.decode()}" if request is not None else "(unknown)"


def server_refusal(exc: Exception) -> str:
    """``<status>: <message>`` of an error status the server answered (langgraph-sdk or httpx error)."""
    from langgraph_sdk.errors import APIStatusError

    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", "?")
    if isinstance(exc, APIStatusError):
        detail = exc.message
        if detail.startswith(str(status)) and isinstance(exc.body, str) and exc.body.strip():
            detail = exc.body.strip()[:300]  # a plain-text (or HTML) body: the SDK keeps only "<status> <reason>"
    else:
        try:
            body = response.json() if response is not None else None
        except (ValueError, RuntimeError):  # not JSON, or a streamed body never read (httpx.ResponseNotRead)
            body = None
        reported = (body.get("detail") or body.get("message")) if isinstance(body, dict) else None
        detail = str(reported or exc)
    return detail if detail.startswith(str(status)) else f"{status}: {detail}"


def refused(exc: Exception) -> str:
    """``refused POST /threads/search: 401: Authorization header missing`` (+ a hint for 401/403)."""
    request = request_of(exc)
    what = f" {request.method} {request.url.path}" if request is not None else ""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    text = f"refused{what}: {server_refusal(exc)}"
    if status in (401, 403):
        text += " (pass a token the server accepts: --header 'Authorization: Bearer ...')"
    elif isinstance(status, int) and status >= 500:
        text += " (the server failed on the request, or in its custom auth: its log has the cause)"
    return text
