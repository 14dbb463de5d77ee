"""Signed context tokens, for a gateway that holds a signing key and services that must not choose their tenant.

A token is ``<claims>.<signature>``: the claims are a JSON object encoded as unpadded base64url, the signature is
HMAC-SHA256 of the encoded claims (the ASCII text before the dot) under the key registered in the database with
``memsub.set_context_signing_key(key_id, secret)``, also unpadded base64url. ``memsub.set_context_signed(token)``
verifies it and sets the context it names. Claims:

- ``kid``: the key id; ``exp``: expiry, seconds since the epoch (required);
- ``tenant``, ``org``, ``user`` (UUIDs; ``org``/``user`` may be null), ``roles`` (context roles), ``session``;
- ``login`` (optional): the only database login that may present the token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Sequence
from uuid import UUID


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _text(value: UUID | str | None) -> str | None:
    return None if value is None else str(UUID(str(value)))


def mint_context_token(key: bytes, key_id: str, tenant_id: UUID | str | None, *,
                       org_id: UUID | str | None = None, user_id: UUID | str | None = None,
                       roles: Sequence[str] = (), session_id: str | None = None, ttl_seconds: int = 300,
                       login: str | None = None, now: float | None = None) -> str:
    """A token that lets a service act for this tenant, organization, user and session until ``ttl_seconds``
    from ``now`` (default: the current time). Keep the lifetime short: a token is a bearer credential."""
    if len(key) < 32:
        raise ValueError("a context signing key must be at least 32 bytes")
    if ttl_seconds <= 0:
        raise ValueError("ttl_seconds must be positive")
    issued = time.time() if now is None else now
    claims: dict[str, object] = {
        "kid": key_id,
        "exp": int(issued) + ttl_seconds,
        "tenant": _text(tenant_id),
        "org": _text(org_id),
        "user": _text(user_id),
        "roles": list(roles),
        "session": session_id,
    }
    if login is not None:
        claims["login"] = login
    encoded = _b64url(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
    signature = hmac.new(key, encoded.encode("ascii"), hashlib.sha256).digest()
    return f"{encoded}.{_b64url(signature)}"
