"""Model-based test of documentary memory: random sequences of ingests (with and without vectors, the same content
again, a path typed composed or decomposed), index entries, reads of a path's versions, its index entry and a
version's chunks, and searches of the chunks' vectors, by ordinary logins of one tenant (tenant-wide, two users of
one organization, one of another organization, a tenant admin) and of a second tenant, each outcome compared with
a small model of what sql/810_document_index.sql and sql/820_documents.sql promise:

- a path is one version chain per tenant, compared composed (NFC); an ingest whose hash is the latest version's
  changes nothing (status unchanged; given an embedder, the chunks without a vector get one), any other makes
  version n + 1 chained to the latest, which stops being the latest and loses its chunk vectors (its chunks stay);
- document_index_put replaces the latest version's embedding and metadata, or makes a new path's version 1;
- a path's chain is written from one context: its organization's, or the tenant-wide one. A write from another
  context that sees the latest version (an admin, or an organization for a tenant-wide path) is 42501 naming
  file_path; from one that cannot see it (another organization, or tenant-wide for an organization's path),
  23505 naming file_path;
- a reader sees the versions, entries, chunks and chunk vectors of its organization and the tenant-wide ones
  (an admin every one), and nothing of another tenant;
- the latest version's embedding is the mean of its chunk vectors, or none without vectors.
"""

from __future__ import annotations

import hashlib
import itertools
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from memsub import documents
from memsub.client import Substrate, TenantSession
from memsub.errors import MemsubError

from doc_helpers import WordEmbedder
from helpers import TENANT_A, TENANT_B, soak_factor
from model_helpers import attempt, refused

T = TypeVar("T")
ORG_1 = uuid.UUID("0d000000-0000-0000-0000-000000000001")
ORG_2 = uuid.UUID("0d000000-0000-0000-0000-000000000002")
MAX_CHARS = 24  # a chunk a paragraph, each with the example's word


@dataclass(frozen=True)
class Actor:
    tenant: uuid.UUID
    org: uuid.UUID | None
    user: uuid.UUID
    admin: bool = False

    def sees(self, org: uuid.UUID | None) -> bool:
        """Whether this context reads the rows of a chain written from ``org`` (None: tenant-wide)."""
        return self.admin or org is None or org == self.org


ACTORS = {
    "wide": Actor(TENANT_A, None, uuid.UUID(int=1)),
    "org1": Actor(TENANT_A, ORG_1, uuid.UUID(int=2)),
    "org1_other_user": Actor(TENANT_A, ORG_1, uuid.UUID(int=3)),
    "org2": Actor(TENANT_A, ORG_2, uuid.UUID(int=4)),
    "admin": Actor(TENANT_A, None, uuid.UUID(int=5), admin=True),
    "tenant_b": Actor(TENANT_B, None, uuid.UUID(int=1)),
}


@dataclass
class Version:
    id: uuid.UUID
    org: uuid.UUID | None
    hash: str | None  # None: an entry document_index_put made
    metadata: dict[str, Any]
    chunks: list[str]
    packet_id: uuid.UUID | None
    embedded: bool = False  # its chunks carry vectors
    embedding: bool = False  # document_index.embedding is set


@dataclass
class Model:
    # (tenant, composed path) -> versions, oldest first
    paths: dict[tuple[uuid.UUID, str], list[Version]] = field(default_factory=dict)

    def chain(self, tenant: uuid.UUID, path: str) -> list[Version]:
        return self.paths.setdefault((tenant, unicodedata.normalize("NFC", path)), [])


_runs = itertools.count(1)


@pytest.fixture
def substrates(db: Any) -> Iterator[tuple[Substrate, Substrate]]:
    with Substrate(db.dsn("app"), max_size=1) as app, Substrate(db.dsn("tenant_admin"), max_size=1) as admin:
        yield app, admin


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_documents_match_their_model(substrates: tuple[Substrate, Substrate]) -> None:
    app, admin_substrate = substrates
    embedder = WordEmbedder()

    class DocumentsMachine(RuleBasedStateMachine):
        """Each example gets paths and words of its own, so examples share nothing."""

        @initialize()
        def fresh(self) -> None:
            run = next(_runs)
            word = f"run{run}"
            # é composed and decomposed: one path.
            self.paths = [f"r{run}/notes.txt", f"r{run}/caf\u00e9.md", f"r{run}/cafe\u0301.md", f"r{run}/b.md"]
            self.texts = [f"{word} alpha beta\n\n{word} gamma delta\n", f"{word} alpha beta\n\n{word} zeta eta\n",
                          f"{word} theta iota\n\n{word} kappa lambda\n"]
            self.model = Model()

        def session(self, actor: Actor) -> Any:
            if actor.admin:
                return admin_substrate.tenant(actor.tenant, user_id=actor.user, roles=["tenant_admin"])
            return app.tenant(actor.tenant, org_id=actor.org, user_id=actor.user)

        def call(self, actor: Actor, what: Callable[[TenantSession], T]) -> tuple[T | None, MemsubError | None]:
            def run() -> T:
                with self.session(actor) as session:
                    return what(session)
            return attempt(run)

        def refused_for(self, who: Actor, chain: list[Version], error: MemsubError | None) -> bool:
            """Whether the model refuses ``who`` writing the path of ``chain``, and the call was refused so."""
            if not chain:
                return False
            latest = chain[-1]
            if not who.sees(latest.org):
                refused(error, "23505", "file_path")
                return True
            if latest.org != who.org:
                refused(error, "42501", "file_path")
                return True
            return False

        @rule(actor=st.sampled_from(sorted(ACTORS)), path=st.integers(0, 3), text=st.integers(0, 2),
              embed=st.booleans(), tag=st.integers(0, 2))
        def ingest(self, actor: str, path: int, text: int, embed: bool, tag: int) -> None:
            who, file_path, content = ACTORS[actor], self.paths[path], self.texts[text]
            chain = self.model.chain(who.tenant, file_path)
            metadata = {"tag": tag}
            result, error = self.call(who, lambda s: s.documents.ingest(
                file_path, content, file_hash=_sha(content), mime="txt", embedder=embedder if embed else None,
                metadata=metadata, max_chars=MAX_CHARS))
            if self.refused_for(who, chain, error):
                return
            assert error is None, error
            assert result is not None
            chunks = [content[s.start:s.end] for s in documents.chunk_spans(content, MAX_CHARS)]
            latest = chain[-1] if chain else None
            assert result.file_path == unicodedata.normalize("NFC", file_path)
            if latest is not None and latest.hash == _sha(content):
                if embed:
                    latest.embedded = latest.embedding = True
                assert (result.status, result.document_id, result.version) == ("unchanged", latest.id, len(chain))
                assert (result.chunk_count, result.embedded_count) == (len(chunks),
                                                                       len(chunks) if latest.embedded else 0)
                return
            assert result.status == ("new_version" if chain else "created")
            assert (result.version, result.previous_id) == (len(chain) + 1, latest.id if latest else None)
            assert (result.chunk_count, result.embedded_count) == (len(chunks), len(chunks) if embed else 0)
            if latest is not None:
                latest.embedded = False  # a superseded version's vectors leave the index
            chain.append(Version(result.document_id, who.org, _sha(content), metadata, chunks, result.packet_id,
                                 embedded=embed, embedding=embed))

        @rule(data=st.data(), text=st.integers(0, 2), embed=st.booleans())
        def ingest_where_written(self, data: st.DataObject, text: int, embed: bool) -> None:
            """A new version (or the same content again) of a path the example wrote, from a context that may."""
            writable = sorted((actor, self.paths.index(path) if path in self.paths else 0)
                              for (tenant, path), chain in self.model.paths.items() if chain
                              for actor, who in ACTORS.items()
                              if who.tenant == tenant and who.sees(chain[-1].org) and who.org == chain[-1].org)
            actor, path = data.draw(st.sampled_from(writable)) if writable else ("org1", 0)
            self.ingest(actor, path, text, embed, 0)

        @rule(actor=st.sampled_from(sorted(ACTORS)), path=st.integers(0, 3), with_vector=st.booleans(),
              tag=st.integers(3, 5))
        def index_put(self, actor: str, path: int, with_vector: bool, tag: int) -> None:
            who, file_path = ACTORS[actor], self.paths[path]
            chain = self.model.chain(who.tenant, file_path)
            vector = embedder.vector(f"index entry {tag}") if with_vector else None
            entry, error = self.call(who, lambda s: s.documents.index_put(file_path, vector, {"tag": tag}))
            if self.refused_for(who, chain, error):
                return
            assert error is None, error
            assert entry is not None
            assert (entry.file_path, entry.metadata) == (unicodedata.normalize("NFC", file_path), {"tag": tag})
            assert (entry.embedding is not None) == with_vector
            if chain:
                assert entry.id == chain[-1].id
                chain[-1].metadata, chain[-1].embedding = {"tag": tag}, with_vector
            else:
                chain.append(Version(entry.id, who.org, None, {"tag": tag}, [], None, embedding=with_vector))

        @rule(actor=st.sampled_from(sorted(ACTORS)), path=st.integers(0, 3))
        def read_path(self, actor: str, path: int) -> None:
            who, file_path = ACTORS[actor], self.paths[path]
            found, error = self.call(who, lambda s: (s.documents.versions(file_path), s.documents.index_get(file_path)))
            assert error is None, error
            assert found is not None
            versions, entry = found
            chain = [v for v in self.model.chain(who.tenant, file_path) if who.sees(v.org)]
            expected = [(n, v.id, v.hash, n == len(chain), v.org, v.metadata, len(v.chunks),
                         chain[n - 2].id if n > 1 else None) for n, v in reversed(list(enumerate(chain, 1)))]
            assert [(d.version, d.id, d.hash, d.is_latest, d.org_id, d.metadata, d.chunk_count, d.previous_id)
                    for d in versions] == expected
            assert all(d.tenant_id == who.tenant for d in versions)
            assert [d.superseded_at is None for d in versions] == [d.is_latest for d in versions]
            if not chain:
                assert entry is None
                return
            assert entry is not None
            assert (entry.id, entry.metadata, entry.embedding is not None) == (
                chain[-1].id, chain[-1].metadata, chain[-1].embedding)

        def pick_version(self, data: st.DataObject) -> tuple[uuid.UUID, Version] | None:
            known = [(tenant, version) for (tenant, _), chain in sorted(self.model.paths.items(), key=str)
                     for version in chain]
            return data.draw(st.sampled_from(known)) if known else None

        @rule(data=st.data(), actor=st.sampled_from(sorted(ACTORS)))
        def read_chunks(self, data: st.DataObject, actor: str) -> None:
            picked = self.pick_version(data)
            if picked is None:
                return
            tenant, version = picked
            who = ACTORS[actor]
            chunks, error = self.call(who, lambda s: s.documents.chunks_of(version.id))
            assert error is None, error
            assert chunks is not None
            visible = tenant == who.tenant and who.sees(version.org)
            assert [c.content for c in chunks] == (version.chunks if visible else [])
            assert [c.chunk_index for c in chunks] == list(range(1, len(chunks) + 1))
            assert all(c.document_id == version.id for c in chunks)

        @rule(data=st.data(), actor=st.sampled_from(sorted(ACTORS)))
        def search_chunks(self, data: st.DataObject, actor: str) -> None:
            """Searches for a chunk of a version the example wrote (superseded ones too), by its own vector."""
            who = ACTORS[actor]
            written = sorted({c for chain in self.model.paths.values() for v in chain for c in v.chunks})
            wanted = data.draw(st.sampled_from(written)) if written else self.texts[0]
            hits, error = self.call(who, lambda s: s.search.semantic(
                embedder.vector(wanted), 20, packet_type="document", mode="exact"))
            assert error is None, error
            assert hits is not None
            # Another example's chunks carry another run's word, so only this example's can be at distance 0.
            found = sorted((h.packet_id, h.chunk_index) for h in hits if h.distance < 1e-6)
            expected = sorted((v.packet_id, n) for (tenant, _), chain in self.model.paths.items()
                              for v in chain if tenant == who.tenant and v.embedded and who.sees(v.org)
                              and v.packet_id is not None
                              for n, content in enumerate(v.chunks, 1)
                              if embedder.vector(content) == embedder.vector(wanted))
            assert found == expected

        @invariant()
        def every_chain_has_one_latest_version(self) -> None:
            if not hasattr(self, "model"):
                return
            for (tenant, path), chain in self.model.paths.items():
                if not chain:
                    continue
                admin = ACTORS["admin"] if tenant == TENANT_A else ACTORS["tenant_b"]
                versions, error = self.call(admin, lambda s, p=path: s.documents.versions(p))
                assert error is None and versions is not None
                assert [d.id for d in versions if d.is_latest] == [chain[-1].id]
                assert len(versions) == len(chain)

    run_state_machine_as_test(DocumentsMachine, settings=settings(
        max_examples=25 * soak_factor(), stateful_step_count=30, deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
