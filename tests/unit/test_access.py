"""Bearer tokens -> users, dev mode, operators (server/access.py)."""

from __future__ import annotations

import pytest

from server import access

TOKENS = {access.TOKENS_ENV: "alice:tok-a, bob:tok-b,ops:tok-ops", access.OPERATORS_ENV: "ops"}


@pytest.mark.parametrize(
    ("environ", "dev_mode"),
    [
        pytest.param({}, True, id="unset"),
        pytest.param({access.TOKENS_ENV: "  "}, True, id="blank"),
        pytest.param(TOKENS, False, id="tokens"),
    ],
)
def test_dev_mode_is_on_exactly_when_no_tokens_are_configured(environ: dict, dev_mode: bool) -> None:
    assert access.access_config(environ).dev_mode is dev_mode


@pytest.mark.parametrize("authorization", [None, "", "Bearer tok-a", "Basic abc"], ids=["none", "empty", "bearer", "basic"])
def test_dev_mode_lets_every_request_through_as_the_dev_user(authorization: str | None) -> None:
    user = access.authenticate(authorization, access.access_config({}))
    assert user["identity"] == access.DEV_USER == "dev"
    assert user["permissions"] == []


@pytest.mark.parametrize(
    ("authorization", "identity", "permissions"),
    [
        pytest.param("Bearer tok-a", "alice", [], id="alice"),
        pytest.param("bearer   tok-b ", "bob", [], id="scheme-case-and-space"),
        pytest.param("Bearer tok-ops", "ops", [access.READ_ALL], id="operator"),
    ],
)
def test_a_known_token_is_its_user(authorization: str, identity: str, permissions: list[str]) -> None:
    user = access.authenticate(authorization, access.access_config(TOKENS))
    assert (user["identity"], user["permissions"]) == (identity, permissions)


@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        pytest.param(None, "missing bearer token", id="missing"),
        pytest.param("tok-a", "missing bearer token", id="no-scheme"),
        pytest.param("Basic tok-a", "missing bearer token", id="basic"),
        pytest.param("Bearer tok-z", "unknown bearer token", id="unknown"),
        pytest.param("Bearer ", "missing bearer token", id="empty-token"),
    ],
)
def test_token_mode_refuses_a_missing_or_unknown_token(authorization: str | None, message: str) -> None:
    with pytest.raises(access.Unauthenticated, match=message):
        access.authenticate(authorization, access.access_config(TOKENS))


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        pytest.param({access.TOKENS_ENV: "alice"}, "user:token", id="no-colon"),
        pytest.param({access.TOKENS_ENV: "alice:"}, "user:token", id="no-token"),
        pytest.param({access.TOKENS_ENV: "alice:t,bob:t"}, "one token to two users", id="shared-token"),
        pytest.param({access.TOKENS_ENV: "alice:t", access.OPERATORS_ENV: "carol"}, "without a token", id="unknown-operator"),
    ],
)
def test_malformed_configuration_is_an_error_not_dev_mode(environ: dict, message: str) -> None:
    with pytest.raises(access.AccessConfigError, match=message):
        access.access_config(environ)


def test_the_error_for_a_malformed_entry_does_not_echo_the_token() -> None:
    with pytest.raises(access.AccessConfigError) as caught:
        access.access_config({access.TOKENS_ENV: ":tok-secret"})
    assert "tok-secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("studio", "environ", "owner"),
    [
        pytest.param(False, {}, "dev", id="dev-mode-user"),
        pytest.param(True, {}, "dev", id="dev-mode-studio"),
        pytest.param(False, TOKENS, "alice", id="token-user"),
        pytest.param(True, TOKENS, "studio:alice", id="token-studio"),
    ],
)
def test_owner_identity_separates_studio_users_only_in_token_mode(studio: bool, environ: dict, owner: str) -> None:
    assert access.owner_identity("alice", studio=studio, config=access.access_config(environ)) == owner
