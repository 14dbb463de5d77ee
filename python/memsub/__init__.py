"""memsub: a PostgreSQL-native memory substrate for AI agents.

The product is versioned SQL (``migrations/`` and ``sql/``); this package applies it and wraps its stored
functions in a thin, typed client.
"""

from memsub.client import Substrate
from memsub.errors import (
    ConfigurationError,
    ConflictError,
    ConnectionFailed,
    ContextError,
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
    StateError,
)
from memsub.models import (
    PacketEnvelope,
    PacketEnvelopeIn,
    PacketLineage,
    PacketStoreRow,
    PacketWriteResult,
)

__all__ = [
    "ConfigurationError",
    "ConflictError",
    "ConnectionFailed",
    "ContextError",
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
    "StateError",
    "Substrate",
]
__version__ = "0.1.0"
