"""Connection resolution: ``--dsn`` > ``MEMSUB_DSN`` > ``DATABASE_URL`` > libpq's environment > the embedded
cluster. The rules live in :mod:`memsub.connection`; this module keeps the older entry point."""

from __future__ import annotations

from memsub.connection import ResolvedDsn, resolve


def resolve_dsn(option: str | None = None, *, start_embedded: bool = True) -> ResolvedDsn:
    """Return the DSN to use and where it came from; starts the embedded cluster as the last resort."""
    return resolve(option, start_embedded=start_embedded)


__all__ = ["ResolvedDsn", "resolve_dsn"]
