"""API keys (foundation): the calls an admin context makes to mint, revoke and list the keys the HTTP API accepts.
They are administration, not a memory area, so no session namespace carries them; run them in an admin
context with :meth:`TenantSession.run`::

    with substrate.tenant(tenant_id, roles=["tenant_admin"]) as session:
        minted = session.run(api_keys.create_api_key(tenant_id, label="worker"))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, Field

from memsub._calls import Call, ContextRole, function, one, rows, scalar, texts
from memsub.errors import LocalValidationError
from memsub.models import parse_time


class MintedApiKey(BaseModel):
    """A new key: ``api_key`` is shown only now (memsub stores its sha256). The repr leaves it out, so a log line
    or a traceback that prints the object does not print the key."""

    key_id: str
    api_key: str = Field(repr=False)
    tenant_id: UUID
    org_id: UUID | None
    user_id: UUID | None
    roles: list[str]
    label: str
    expires_at: datetime | None


class ApiKey(BaseModel):
    """A key as an admin context sees it, without its secret."""

    key_id: str
    tenant_id: UUID
    org_id: UUID | None
    user_id: UUID | None
    roles: list[str]
    label: str
    created_at: datetime
    created_by: str
    expires_at: datetime | None
    revoked_at: datetime | None


def create_api_key(tenant_id: UUID | str, *, org_id: UUID | str | None = None, user_id: UUID | str | None = None,
                   roles: Sequence[ContextRole] = (), label: str = "",
                   expires_at: datetime | str | None = None) -> Call[MintedApiKey]:
    """Mint a key for a tenant (memsub.create_api_key; tenant_admin or platform_admin context). ``expires_at``
    given as text is ISO 8601 (no offset: UTC); other text raises LocalValidationError (22007) naming it."""
    if isinstance(expires_at, str):
        try:
            expires_at = parse_time(expires_at)
        except ValueError as error:
            raise LocalValidationError(f"field expires_at: {expires_at!r} is not an ISO 8601 time", sqlstate="22007",
                                       field="expires_at") from error
    return function("create_api_key", {"tenant_id": tenant_id, "org_id": org_id, "user_id": user_id,
                                       "roles": texts(roles, "roles"), "label": label, "expires_at": expires_at},
                    one(MintedApiKey))


_WHOLE_KEY = re.compile(r"msk_([0-9a-f]{16})_[0-9a-f]+")


def key_id_of(key: str) -> str:
    """The key_id of a whole key (``msk_<key_id>_<secret>``); any other text as it is."""
    whole = _WHOLE_KEY.fullmatch(key)
    return whole.group(1) if whole else key


def revoke_api_key(key_id: str) -> Call[bool]:
    """Revoke a live key of the context; False when there is none with this id (memsub.revoke_api_key). A whole
    key is revoked by its id: only the id is sent."""
    return function("revoke_api_key", {"key_id": key_id_of(key_id)}, scalar(bool))


def list_api_keys() -> Call[list[ApiKey]]:
    """The keys the admin context manages, without their secrets (memsub.list_api_keys)."""
    return function("list_api_keys", {}, rows(ApiKey))
