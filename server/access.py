"""Who is calling: bearer tokens mapped to users, from the server's environment.

Pure functions; `server/auth.py` wires them into Agent Server's custom auth.

Two modes, chosen by ``AUTH_TOKENS`` alone:

* **dev mode** (``AUTH_TOKENS`` unset or empty, the default): every request is the
  documented user `DEV_USER` (``dev``), Studio's included. Nothing is refused for
  lack of a token, so ``make run`` and Studio work from a fresh clone. Every thread
  and run is still stamped ``owner: dev`` and every handler runs (the run checks
  of `server/serving.py` included), but nothing is filtered by owner: with
  one user there is nothing to hide, and threads made by in-process routes (which
  bypass auth) or before auth existed carry no owner and must stay visible.
* **token mode** (``AUTH_TOKENS=alice:<token>,bob:<token>``): a request must send
  ``Authorization: Bearer <token>``; a missing or unknown token is a 401.
  ``AUTH_OPERATORS=ops`` names users who may *read* every thread (the playbook's
  gate, inflight and snapshot scans); their writes stay limited to their own threads.

Studio requests (``x-auth-scheme: langsmith``) reach the handlers as a
`StudioUser`. In dev mode that is the dev user; in token mode it is an owner of
its own, ``studio:<identity>``: it sees the threads it made and nobody else's
(on `langgraph dev` anyone can send that header, so it must not be more).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

TOKENS_ENV = "AUTH_TOKENS"
"""``user:token`` pairs, comma-separated. Unset or empty: dev mode."""

OPERATORS_ENV = "AUTH_OPERATORS"
"""Comma-separated users (from ``AUTH_TOKENS``) who may read every thread."""

DEV_USER = "dev"
"""The one user of dev mode."""

OWNER_KEY = "owner"
"""Thread (and assistant, and run) metadata key holding the owner's identity."""

READ_ALL = "threads:read_all"
"""Permission of operators: reads and searches are not filtered by owner."""

STUDIO_PREFIX = "studio:"
"""Owner prefix for Studio users in token mode."""


class AccessConfigError(ValueError):
    """``AUTH_TOKENS`` or ``AUTH_OPERATORS`` is malformed."""


class Unauthenticated(Exception):
    """No valid bearer token (token mode only): a 401."""


@dataclass(frozen=True)
class AccessConfig:
    """Users and tokens, parsed from the environment."""

    tokens: Mapping[str, str] = field(default_factory=dict)
    """token -> user identity. Empty means dev mode."""
    operators: frozenset[str] = frozenset()
    """Identities allowed to read every thread."""

    @property
    def dev_mode(self) -> bool:
        return not self.tokens


def parse_tokens(raw: str) -> dict[str, str]:
    """``"alice:tok-a, bob:tok-b"`` -> ``{"tok-a": "alice", "tok-b": "bob"}``."""
    tokens: dict[str, str] = {}
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            continue
        user, sep, token = entry.partition(":")
        user, token = user.strip(), token.strip()
        if not sep or not user or not token:
            raise AccessConfigError(f"{TOKENS_ENV} entries must look like 'user:token', got {entry.split(':')[0]!r}...")
        if token in tokens and tokens[token] != user:
            raise AccessConfigError(f"{TOKENS_ENV} gives one token to two users ({tokens[token]}, {user})")
        tokens[token] = user
    return tokens


@lru_cache(maxsize=8)
def _parse(raw_tokens: str, raw_operators: str) -> AccessConfig:
    tokens = parse_tokens(raw_tokens)
    operators = frozenset(op.strip() for op in raw_operators.split(",") if op.strip())
    unknown = operators - set(tokens.values())
    if tokens and unknown:
        raise AccessConfigError(f"{OPERATORS_ENV} names users without a token: {', '.join(sorted(unknown))}")
    return AccessConfig(tokens=tokens, operators=operators)


def access_config(environ: Mapping[str, str] | None = None) -> AccessConfig:
    """The configuration in ``environ`` (default: the process environment), parsed once per value."""
    env = os.environ if environ is None else environ
    return _parse(env.get(TOKENS_ENV, "").strip(), env.get(OPERATORS_ENV, "").strip())


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def authenticate(authorization: str | None, config: AccessConfig) -> dict[str, Any]:
    """The user (``MinimalUserDict``) for a request's Authorization header.

    Raises `Unauthenticated` in token mode when the token is missing or unknown.
    """
    if config.dev_mode:
        return {"identity": DEV_USER, "display_name": "dev (no AUTH_TOKENS set)", "permissions": []}
    token = bearer_token(authorization)
    if token is None:
        raise Unauthenticated("missing bearer token: send 'Authorization: Bearer <token>'")
    user = None
    for known, identity in config.tokens.items():  # compare every token, in constant time each
        if hmac.compare_digest(known.encode(), token.encode()):
            user = identity
    if user is None:
        raise Unauthenticated("unknown bearer token")
    permissions = [READ_ALL] if user in config.operators else []
    return {"identity": user, "display_name": user, "permissions": permissions}


def owner_identity(identity: str, *, studio: bool, config: AccessConfig) -> str:
    """The owner a request acts as (what is stamped and filtered on)."""
    if config.dev_mode:
        return DEV_USER
    return f"{STUDIO_PREFIX}{identity}" if studio else identity
