"""memsub: a PostgreSQL-native memory substrate for AI agents.

The product is versioned SQL (``migrations/`` and ``sql/``); this package applies it and wraps its stored
functions in a thin, typed client.
"""

from memsub.async_client import AsyncSubstrate, AsyncTenantSession
from memsub.client import Substrate, TenantSession
from memsub.errors import (
    ConfigurationError,
    ConflictError,
    ConnectionFailed,
    ContextError,
    HotStandbyError,
    ImmutableError,
    IntegrityError,
    InvalidInput,
    LimitExceeded,
    LocalValidationError,
    MemsubError,
    MigrationError,
    NotFound,
    PreflightRefused,
    PrivilegeError,
    ReadOnlyError,
    SessionClosed,
    StateError,
    TransactionAborted,
)
from memsub.models import (
    PacketEnvelope,
    PacketEnvelopeIn,
    PacketLineage,
    PacketStoreRow,
    PacketWriteResult,
)

__all__ = [
    "AsyncSubstrate",
    "AsyncTenantSession",
    "ConfigurationError",
    "ConflictError",
    "ConnectionFailed",
    "ContextError",
    "HotStandbyError",
    "ImmutableError",
    "IntegrityError",
    "InvalidInput",
    "LimitExceeded",
    "LocalValidationError",
    "MemsubError",
    "MigrationError",
    "NotFound",
    "PacketEnvelope",
    "PacketEnvelopeIn",
    "PacketLineage",
    "PacketStoreRow",
    "PacketWriteResult",
    "PreflightRefused",
    "PrivilegeError",
    "ReadOnlyError",
    "SessionClosed",
    "StateError",
    "Substrate",
    "TenantSession",
    "TransactionAborted",
]
__version__ = "0.1.0"
