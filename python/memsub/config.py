"""Connection resolution: ``--dsn`` > ``MEMSUB_DSN`` > ``DATABASE_URL`` > the embedded cluster."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from memsub import embedded


@dataclass(frozen=True)
class ResolvedDsn:
    dsn: str
    source: str  # option | MEMSUB_DSN | DATABASE_URL | embedded


def resolve_dsn(option: str | None = None, *, start_embedded: bool = True) -> ResolvedDsn:
    """Return the DSN to use and where it came from; starts the embedded cluster as the last resort."""
    if option:
        return ResolvedDsn(option, "option")
    for variable in ("MEMSUB_DSN", "DATABASE_URL"):
        value = os.environ.get(variable)
        if value:
            return ResolvedDsn(value, variable)
    current = embedded.status()
    if current.running and current.url:
        return ResolvedDsn(current.url, "embedded")
    if not start_embedded:
        raise RuntimeError("no DSN configured (--dsn, MEMSUB_DSN, DATABASE_URL) and the embedded cluster is stopped")
    print(f"memsub: starting the embedded PostgreSQL cluster in {current.data_dir}", file=sys.stderr)
    return ResolvedDsn(embedded.start(), "embedded")
