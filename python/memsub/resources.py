"""Locates the SQL that ships with memsub: ``migrations/`` and ``sql/``.

An installed wheel carries both folders inside the package; a source checkout keeps them at the repository
root. The wheel copy wins when both exist.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"memsub cannot find its {name}/ folder next to {_PACKAGE_DIR}")


def migrations_dir() -> Path:
    """Folder of versioned, run-once migration files."""
    return _find("migrations")


def repeatables_dir() -> Path:
    """Folder of re-runnable SQL objects (functions, policies, grants, comments)."""
    return _find("sql")
