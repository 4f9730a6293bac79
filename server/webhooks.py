"""Run webhooks: off unless configured, then only to the configured hosts, never to an internal address.

A run request may name a ``webhook`` URL that the server calls when the run ends
(``POST /threads/{id}/runs``, ``/runs``, ``/runs/wait``, ``/runs/stream``,
``/runs/batch``, crons). langgraph-api 0.16.7 accepts any address by default: it
refuses loopback, link-local and cloud-metadata addresses, but sends to private
ranges (``10.0.0.0/8``, ``192.168.0.0/16``) and to any public host, over plain
http, so any user could make the deployment send requests where they chose. Its
configuration (langgraph.json ``webhooks.url``, `WebhookUrlPolicy`) offers a host
allowlist, ``require_https``, ``allowed_ports`` and ``disable_private_ips``; but an
allowlisted host skips its address checks entirely (``127.0.0.1`` in the list is
called), ``require_https`` defaults to false, and ``http.disable_webhooks`` drops the
call after the run while accepting the request. This module reads the same settings
with the defaults this deployment wants (`WebhookPolicy`):

* **off** unless ``webhooks.url.allowed_domains`` lists hosts (and off whenever
  ``http.disable_webhooks`` is true): a request with a ``webhook`` is refused;
* **on**: the URL must be absolute, ``https`` (unless ``require_https: false``), to a
  listed host (``hooks.example.com``, or ``*.example.com`` for its subdomains), on an
  ``allowed_ports`` port when those are listed; and every address the host resolves
  to must be a public one: never loopback, link-local, private, shared, reserved,
  multicast or unspecified, whatever the list says.

A refused webhook is a 422 at run creation, ``{"detail": "webhook refused: ...;
<what to do>"}``, before the server reads anything (`WebhookMiddleware`, middleware
of the custom app, server/webapp.py), so no run, thread or cron is made. A
request without a valid token (token mode) is left to the server's 401.
When the run ends the server checks the URL again before it calls it
(`install_call_time_check`): a host that now resolves to an internal address is not
called.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from server.payload_middleware import _buffer, _json_response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Resolver = Callable[[str, int], Awaitable[list[str]]]

WEBHOOKS_ENV = "LANGGRAPH_WEBHOOKS"
"""Where `langgraph dev` (and the server image) hands langgraph.json's ``webhooks`` to the server, as JSON."""

HTTP_ENV = "LANGGRAPH_HTTP"
"""Where the server gets langgraph.json's ``http`` (``disable_webhooks``), as JSON."""

RUN_ROUTES = re.compile(r"(/threads/[^/]+)?/runs(/stream|/wait|/batch|/crons(/[^/]+)?)?/?")
"""The routes whose body may carry a ``webhook``: run creation (thread and stateless), batches, crons."""

RESOLVE_TIMEOUT = 5.0
"""Seconds a webhook host may take to resolve before the request is refused."""

HOW_TO_TURN_ON = (
    "an operator turns webhooks on by listing their hosts in langgraph.json: "
    '"webhooks": {"url": {"allowed_domains": ["hooks.example.com"]}}'
)


class WebhookRefused(ValueError):
    """A webhook URL the policy refuses; the message says why and what to send instead."""


@dataclass(frozen=True)
class WebhookPolicy:
    """Where this server may send webhooks (from langgraph.json ``webhooks.url`` and ``http``)."""

    allowed_domains: tuple[str, ...] = ()
    """Exact hosts, or ``*.example.com`` for the subdomains of example.com. Empty: webhooks are off."""
    require_https: bool = True
    """``https`` only, unless ``require_https: false`` is configured."""
    allowed_ports: tuple[int, ...] = ()
    """When listed, the only ports a webhook may use (443/80 when the URL names none)."""
    max_url_length: int = 4096
    disabled: bool = False
    """``http.disable_webhooks``: off whatever the list says."""

    @property
    def enabled(self) -> bool:
        return bool(self.allowed_domains) and not self.disabled

    def allows_host(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        for pattern in self.allowed_domains:
            pattern = pattern.strip().lower().rstrip(".")
            if pattern.startswith("*.") and host.endswith(pattern[1:]) and host != pattern[2:]:
                return True
            if host == pattern:
                return True
        return False


def policy_from_environ(environ: Mapping[str, str] | None = None) -> WebhookPolicy:
    """The policy in ``environ`` (default: the process environment), as `langgraph dev` passes langgraph.json."""
    env = os.environ if environ is None else environ
    webhooks = _json_object(env.get(WEBHOOKS_ENV))
    http = _json_object(env.get(HTTP_ENV))
    raw_url = webhooks.get("url")
    url: dict[str, Any] = raw_url if isinstance(raw_url, dict) else {}
    return WebhookPolicy(
        allowed_domains=tuple(d for d in url.get("allowed_domains") or () if isinstance(d, str) and d.strip()),
        require_https=url.get("require_https") is not False,
        allowed_ports=tuple(int(p) for p in url.get("allowed_ports") or ()),
        max_url_length=int(url.get("max_url_length") or 4096),
        disabled=bool(http.get("disable_webhooks")),
    )


def _json_object(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def internal_address(address: str) -> str | None:
    """What kind of internal address ``address`` (an IP literal) is, or None for a public one."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, test in (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("unspecified", ip.is_unspecified),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    ):
        if test:
            return kind
    return None if ip.is_global else "not public"


async def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (the system resolver, in a thread)."""
    infos = await asyncio.wait_for(asyncio.to_thread(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT)
    return sorted({str(info[4][0]) for info in infos})


async def check_webhook(url: Any, policy: WebhookPolicy, resolver: Resolver = resolve) -> None:
    """Raise `WebhookRefused` unless ``policy`` lets the server call ``url``."""
    if not policy.enabled:
        why = "http.disable_webhooks is set" if policy.disabled else "no webhook hosts are configured"
        raise WebhookRefused(f"webhooks are off on this server ({why}): leave 'webhook' out of the request; {HOW_TO_TURN_ON}")
    if not isinstance(url, str) or not url.strip():
        raise WebhookRefused("'webhook' must be a URL string, e.g. 'https://hooks.example.com/run-done'")
    if len(url) > policy.max_url_length:
        raise WebhookRefused(f"the webhook URL is longer than {policy.max_url_length} characters")
    parts = urlsplit(url.strip())
    schemes = ("https",) if policy.require_https else ("https", "http")
    if parts.scheme.lower() not in schemes or not parts.hostname:
        raise WebhookRefused(
            f"{url!r} is not an absolute {' or '.join(schemes)} URL: send e.g. 'https://{_example(policy)}/run-done'"
        )
    if parts.username is not None or parts.password is not None:
        raise WebhookRefused(f"{url!r} carries credentials: put them in the receiver's configuration, not the URL")
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        raise WebhookRefused(f"{url!r} has an invalid port") from None
    if not policy.allows_host(host):
        allowed = ", ".join(policy.allowed_domains)
        raise WebhookRefused(f"host {host!r} is not one this server sends webhooks to (allowed: {allowed})")
    if policy.allowed_ports and port not in policy.allowed_ports:
        raise WebhookRefused(f"port {port} is not allowed for webhooks (allowed: {', '.join(map(str, policy.allowed_ports))})")
    try:
        addresses = [host] if _is_ip(host) else await resolver(host, port)
    except (OSError, TimeoutError, UnicodeError) as exc:
        cause = type(exc).__name__
        raise WebhookRefused(f"host {host!r} does not resolve ({cause}): send a webhook to a host that does") from None
    if not addresses:
        raise WebhookRefused(f"host {host!r} does not resolve: send a webhook to a host that does")
    for address in addresses:
        kind = internal_address(address)
        if kind is not None:
            raise WebhookRefused(
                f"host {host!r} is {address}, a {kind} address: webhooks go to public addresses only, "
                "whatever the list of hosts says"
            )


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _example(policy: WebhookPolicy) -> str:
    exact = [d for d in policy.allowed_domains if not d.startswith("*.")]
    return exact[0] if exact else "hooks.example.com"


def webhooks_in(body: Any) -> list[Any]:
    """The ``webhook`` values a run-creating request body carries (a batch is a list of run bodies)."""
    bodies: Iterable[Any] = body if isinstance(body, list) else [body]
    return [b["webhook"] for b in bodies if isinstance(b, dict) and b.get("webhook") not in (None, "")]


# -- at run creation: the custom app's middleware ----------------------------------------------


class WebhookMiddleware:
    """Refuse a run request whose ``webhook`` the policy does not allow (422), before the server reads it.

    ``policy`` and ``resolver`` default to the server's configuration and the system
    resolver (tests pass their own).
    """

    def __init__(self, app: ASGIApp, policy: WebhookPolicy | None = None, resolver: Resolver = resolve) -> None:
        self.app = app
        self.policy = policy
        self.resolver = resolver
        install_call_time_check()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") not in ("POST", "PATCH")
            or not RUN_ROUTES.fullmatch(scope.get("path") or "")
        ):
            await self.app(scope, receive, send)
            return
        body, replay = await _buffer(receive)
        try:
            payload = json.loads(body or b"null")
        except ValueError:
            payload = None  # the server answers for a body that is not JSON
        urls = webhooks_in(payload)
        if urls and not _authenticated(scope):
            # Checked whatever this guess of the server's authentication says (a guess that disagreed
            # with the server must not let a webhook through); a caller it does not know gets the 401
            # the server would give, never the policy or its hosts.
            if await _refused(urls, self.policy, self.resolver):
                await _answer(send, 401, "authentication required")
            else:
                await self.app(scope, replay, send)
            return
        policy = self.policy or policy_from_environ()
        for url in urls:
            try:
                await check_webhook(url, policy, self.resolver)
            except WebhookRefused as exc:
                await _answer(send, 422, f"webhook refused, nothing was created: {exc}")
                return
        await self.app(scope, replay, send)


async def _refused(urls: list[Any], policy: WebhookPolicy | None, resolver: Resolver) -> bool:
    """Whether any of ``urls`` breaks the policy (the reason is not needed: it is not shown)."""
    for url in urls:
        try:
            await check_webhook(url, policy or policy_from_environ(), resolver)
        except WebhookRefused:
            return True
    return False


def _authenticated(scope: Scope) -> bool:
    """Whether the request would pass the server's authentication (always, in dev mode; Studio's header too)."""
    from server import access

    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
    if headers.get("x-auth-scheme") == "langsmith" or str(scope.get("root_path") or "").startswith("/noauth"):
        return True
    try:
        access.authenticate(headers.get("authorization"), access.access_config())
    except (access.Unauthenticated, access.AccessConfigError):
        return False
    return True


async def _answer(send: Send, status: int, detail: str) -> None:
    for message in _json_response(status, detail):
        await send(message)


# -- when the run ends: the server's own check, before it calls the URL --------------------


def install_call_time_check() -> None:
    """Make the server check a webhook against `WebhookPolicy` again right before calling it.

    langgraph-api 0.16.7 (``webhook.call_webhook``) validates the URL with its own
    policy just before sending; an allowlisted host skips its address checks there,
    so a host whose name resolves to an internal address by then would be called. The
    module's validator is wrapped: this policy first, then langgraph-api's own. A
    no-op outside the server (langgraph_api.webhook not loaded).
    """
    import sys

    module = sys.modules.get("langgraph_api.webhook")
    if module is None or getattr(module.validate_webhook_url_or_raise, "checks_policy", False):
        return
    validate = module.validate_webhook_url_or_raise

    async def validate_webhook_url_or_raise(url: str) -> None:
        from starlette.exceptions import HTTPException

        try:
            await check_webhook(url, policy_from_environ())
        except WebhookRefused as exc:
            raise HTTPException(status_code=422, detail=f"webhook refused: {exc}") from None
        await validate(url)

    validate_webhook_url_or_raise.checks_policy = True  # type: ignore[attr-defined]  # marks the wrapper
    setattr(module, "validate_webhook_url_or_raise", validate_webhook_url_or_raise)  # noqa: B010  # found at run time
