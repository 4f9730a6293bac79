"""The webhook policy (server/webhooks.py): which URLs a run may name, without a server or a resolver.

The real server's routes: tests/integration/test_webhooks_server.py (loopback only). Here the
resolver is a stand-in, so public and private answers can both be tried.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from server import webhooks
from server.webhooks import WebhookPolicy, WebhookRefused, check_webhook

ON = WebhookPolicy(allowed_domains=("hooks.example.com", "*.example.org", "93.184.215.14"))


def _resolver(answers: dict[str, list[str]]) -> webhooks.Resolver:
    async def resolve(host: str, port: int) -> list[str]:
        if host not in answers:
            raise OSError("Name or service not known")
        return answers[host]

    return resolve


PUBLIC = _resolver({"hooks.example.com": ["93.184.215.14"], "a.example.org": ["2606:2800:21f:cb07:6820:80da:af6b:8b2c"]})


def test_the_policy_is_read_from_what_langgraph_dev_passes_and_is_off_without_hosts() -> None:
    assert not webhooks.policy_from_environ({}).enabled
    env = {webhooks.WEBHOOKS_ENV: json.dumps({"url": {"allowed_domains": ["hooks.example.com"]}})}
    policy = webhooks.policy_from_environ(env)
    assert policy.enabled and policy.require_https, "https unless configured otherwise"
    http = {webhooks.WEBHOOKS_ENV: json.dumps({"url": {"allowed_domains": ["h.example.com"], "require_https": False}})}
    assert not webhooks.policy_from_environ(http).require_https
    off = {**env, webhooks.HTTP_ENV: json.dumps({"disable_webhooks": True})}
    assert not webhooks.policy_from_environ(off).enabled
    assert not webhooks.policy_from_environ({webhooks.WEBHOOKS_ENV: "not json"}).enabled


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://hooks.example.com/run-done", id="listed-host"),
        pytest.param("https://a.example.org/x", id="wildcard-subdomain-ipv6"),
        pytest.param("https://93.184.215.14/x", id="listed-public-ip"),
    ],
)
async def test_a_listed_public_https_host_is_allowed(url: str) -> None:
    await check_webhook(url, ON, PUBLIC)


REFUSED = [
    pytest.param(WebhookPolicy(), "https://hooks.example.com/x", "webhooks are off", id="off-without-hosts"),
    pytest.param(
        WebhookPolicy(allowed_domains=("hooks.example.com",), disabled=True),
        "https://hooks.example.com/x",
        "disable_webhooks",
        id="off-by-disable-webhooks",
    ),
    pytest.param(ON, "http://hooks.example.com/x", "not an absolute https URL", id="plain-http"),
    pytest.param(ON, "/threads", "not an absolute", id="relative"),
    pytest.param(ON, "https://evil.example.net/x", "is not one this server sends webhooks to", id="unlisted"),
    pytest.param(ON, "https://example.org/x", "is not one this server sends webhooks to", id="wildcard-is-not-the-apex"),
    pytest.param(ON, "https://user:pw@hooks.example.com/x", "credentials", id="credentials"),
    pytest.param(ON, "https://nowhere.example.org/x", "does not resolve", id="unresolvable"),
    pytest.param(ON, 42, "must be a URL string", id="not-a-string"),
    pytest.param(
        WebhookPolicy(allowed_domains=("hooks.example.com",), allowed_ports=(8443,)),
        "https://hooks.example.com/x",
        "port 443 is not allowed",
        id="port",
    ),
]


@pytest.mark.parametrize(("policy", "url", "reason"), REFUSED)
async def test_a_webhook_the_policy_does_not_allow_is_refused_with_the_reason(
    policy: WebhookPolicy, url: Any, reason: str
) -> None:
    with pytest.raises(WebhookRefused, match=reason):
        await check_webhook(url, policy, PUBLIC)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("192.168.0.10", "private"),
        ("172.16.5.4", "private"),
        ("fd00::1", "private"),
        ("100.64.0.1", "not public"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
    ],
)
async def test_a_listed_host_on_an_internal_address_is_refused_whatever_the_list_says(address: str, kind: str) -> None:
    listed = WebhookPolicy(allowed_domains=("hooks.example.com", address))
    with pytest.raises(WebhookRefused, match=f"a {kind} address"):
        await check_webhook("https://hooks.example.com/x", listed, _resolver({"hooks.example.com": [address]}))
    with pytest.raises(WebhookRefused, match=f"a {kind} address"):
        host = f"[{address}]" if ":" in address else address
        await check_webhook(f"https://{host}/x", listed, PUBLIC)


async def test_a_host_with_one_internal_address_among_public_ones_is_refused() -> None:
    resolver = _resolver({"hooks.example.com": ["93.184.215.14", "10.0.0.7"]})
    with pytest.raises(WebhookRefused, match=r"10\.0\.0\.7, a private address"):
        await check_webhook("https://hooks.example.com/x", ON, resolver)


def test_the_webhooks_of_a_run_request_are_found_in_single_and_batch_bodies() -> None:
    assert webhooks.webhooks_in({"webhook": "https://a/x"}) == ["https://a/x"]
    assert webhooks.webhooks_in([{"webhook": "https://a/x"}, {"input": {}}, {"webhook": 3}]) == ["https://a/x", 3]
    assert webhooks.webhooks_in({"webhook": None}) == webhooks.webhooks_in({"webhook": ""}) == []
    assert webhooks.webhooks_in("not a body") == []


@pytest.mark.parametrize(
    ("path", "body", "refused"),
    [
        pytest.param("/threads/t-1/runs/wait", {"webhook": "https://evil.example.net/x"}, True, id="refused"),
        pytest.param("/runs/batch", [{"webhook": "https://hooks.example.com/x"}], False, id="allowed"),
        pytest.param("/threads/t-1/runs", {"input": {}}, False, id="no-webhook"),
        pytest.param("/threads/t-1/state", {"webhook": "https://evil.example.net/x"}, False, id="not-a-run-route"),
    ],
)
async def test_the_middleware_answers_422_before_the_server_reads_the_request(path: str, body: Any, refused: bool) -> None:
    reached: list[bytes] = []

    async def server(scope: Any, receive: Any, send: Any) -> None:
        reached.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    sent: list[dict[str, Any]] = []
    raw = json.dumps(body).encode()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    middleware = webhooks.WebhookMiddleware(server, policy=ON, resolver=PUBLIC)
    await middleware({"type": "http", "method": "POST", "path": path, "headers": []}, receive, send)
    if refused:
        assert reached == [] and sent[0]["status"] == 422
        assert json.loads(sent[1]["body"])["detail"].startswith("webhook refused, nothing was created: host 'evil.example.net'")
    else:
        assert reached == [raw] and sent[0]["status"] == 200, "the server gets the body as it was sent"


@pytest.mark.parametrize(
    ("authorization", "checked"),
    [
        pytest.param("Bearer tok-a", True, id="a-user"),
        pytest.param(None, False, id="no-token"),
        pytest.param("Bearer x", False, id="unknown"),
    ],
)
async def test_in_token_mode_a_request_without_a_valid_token_gets_a_401_and_its_webhook_never_reaches_the_server(
    monkeypatch: pytest.MonkeyPatch, authorization: str | None, checked: bool
) -> None:
    monkeypatch.setenv("AUTH_TOKENS", "alice:tok-a")
    reached: list[str] = []

    async def server(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 401, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b'{"webhook": "https://evil.example.net/x"}', "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    scope = {"type": "http", "method": "POST", "path": "/runs", "headers": headers}
    await webhooks.WebhookMiddleware(server, policy=ON, resolver=PUBLIC)(scope, receive, send)
    assert sent[0]["status"] == (422 if checked else 401), "the policy (and its host list) is shown only to users"
    assert reached == [], "a refused webhook never reaches the server, whatever the middleware guesses of the caller"
    if not checked:
        assert b"evil.example.net" not in b"".join(m.get("body", b"") for m in sent)
