"""Model-based test of namespaced memory: random sequences of writes, overwrites, deletes, reads, histories and
listings by ordinary logins (two users and an admin of one tenant, the same user id in a second tenant), each
read compared with a small model of what sql/610_memory_entries.sql's comments promise:

- a write of (namespace, key) stores version n + 1 when it states the version read (None or 0 when no entry is
  live, or the version the delete returned), else 40001 naming expected_version; a delete writes a tombstone
  version and flags every earlier one deleted, P0002 when nothing is live;
- a context writes its own user: namespace only (42501 naming namespace otherwise); app: needs an admin context;
  app: is read by the whole tenant, user:<id> by that user (and admins);
- memory_list is the live entries under a prefix of whole segments, by namespace then key (collation C), all of
  them up to max_rows without a limit (more: 54000 naming namespace_prefix), else the first ``limit`` (22023 below
  1, 54000 over max_rows, naming limit);
- nothing of one tenant is seen from the other.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from memsub.client import Substrate, TenantSession
from memsub.errors import MemsubError
from memsub.memory import MemoryEntry

from helpers import TENANT_A, TENANT_B, soak_factor
from model_helpers import attempt, refused, set_max_rows

MAX_ROWS = 5  # memsub.limits' max_rows in this database: listings reach it
T = TypeVar("T")


@dataclass(frozen=True)
class Actor:
    tenant: uuid.UUID
    user: str  # "alice", "bob" or "" for the admin context
    admin: bool = False


ACTORS = {"alice": Actor(TENANT_A, "alice"), "bob": Actor(TENANT_A, "bob"), "admin": Actor(TENANT_A, "", True),
          "alice_b": Actor(TENANT_B, "alice")}
KEYS = ["a", "k_1", "Z"]
VALUES = st.one_of(st.integers(-3, 3), st.text("xy", max_size=2), st.lists(st.integers(0, 2), max_size=2),
                   st.fixed_dictionaries({"v": st.integers(0, 2)}), st.just(False))


@dataclass
class Version:
    value: Any  # None: the tombstone
    deleted: bool = False


@dataclass
class Model:
    # (tenant, namespace, key) -> its versions, oldest first
    keys: dict[tuple[uuid.UUID, str, str], list[Version]] = field(default_factory=dict)

    def versions(self, tenant: uuid.UUID, namespace: str, key: str) -> list[Version]:
        return self.keys.setdefault((tenant, namespace, key), [])

    def live(self, tenant: uuid.UUID, namespace: str, key: str) -> tuple[int, Any] | None:
        versions = self.keys.get((tenant, namespace, key), [])
        if versions and not versions[-1].deleted:
            return len(versions), versions[-1].value
        return None


_runs = itertools.count(1)


@pytest.fixture
def substrates(db: Any) -> Iterator[tuple[Substrate, Substrate]]:
    set_max_rows(db, MAX_ROWS)
    with Substrate(db.dsn("app"), max_size=1) as app, Substrate(db.dsn("tenant_admin"), max_size=1) as admin:
        yield app, admin


def test_memory_matches_its_model(substrates: tuple[Substrate, Substrate]) -> None:
    app, admin_substrate = substrates

    class MemoryMachine(RuleBasedStateMachine):
        """Each example gets user ids and an app: namespace of its own, so examples share nothing."""

        @initialize()
        def fresh(self) -> None:
            run = next(_runs)
            self.users = {"alice": str(uuid.UUID(int=run * 16 + 1)), "bob": str(uuid.UUID(int=run * 16 + 2))}
            app_ns = f"app:r{run}"
            self.namespaces = [f"user:{self.users['alice']}", f"user:{self.users['alice']}:notes",
                               f"user:{self.users['bob']}", app_ns, f"{app_ns}:sub", f"{app_ns}-1"]
            self.prefixes = [f"user:{self.users['alice']}", f"user:{self.users['bob']}", app_ns, f"{app_ns}:sub",
                             f"user:{self.users['alice']}:notes"]
            self.model = Model()

        def session(self, actor: Actor) -> Any:
            if actor.admin:
                return admin_substrate.tenant(actor.tenant, roles=["tenant_admin"])
            return app.tenant(actor.tenant, user_id=self.users[actor.user])

        def call(self, actor: Actor, what: Callable[[TenantSession], T]) -> tuple[T | None, MemsubError | None]:
            def run() -> T:
                with self.session(actor) as session:
                    return what(session)
            return attempt(run)

        def may_read(self, actor: Actor, namespace: str) -> bool:
            kind, owner = namespace.split(":")[:2]
            return actor.admin or kind == "app" or (kind == "user" and owner == self.users.get(actor.user))

        def may_write(self, actor: Actor, namespace: str) -> bool:
            kind, owner = namespace.split(":")[:2]
            return actor.admin or (kind == "user" and owner == self.users.get(actor.user))

        @rule(actor=st.sampled_from(sorted(ACTORS)), ns=st.integers(0, 5), key=st.sampled_from(KEYS), value=VALUES,
              stated=st.sampled_from(["read", "none", "zero", "stale_up", "stale_down"]))
        def write(self, actor: str, ns: int, key: str, value: Any, stated: str) -> None:
            who, namespace = ACTORS[actor], self.namespaces[ns]
            versions = self.model.versions(who.tenant, namespace, key)
            live = self.model.live(who.tenant, namespace, key)
            current = len(versions)
            expected: int | None = {"read": current if versions else None, "none": None, "zero": 0,
                                    "stale_up": current + 1, "stale_down": current - 1}[stated]
            if stated == "stale_down" and current == 0:
                expected = None
            written, error = self.call(who, lambda s: s.memory.write(namespace, key, value,
                                                                     expected_version=expected))
            if not self.may_write(who, namespace):
                refused(error, "42501", "namespace")
                return
            # What the writer read: no live entry (None, 0, or the deleted key's last version), or the live version.
            accepted = (expected == current) if live else (expected in (None, 0, current))
            if not accepted:
                refused(error, "40001", "expected_version")
                return
            assert error is None, error
            assert written is not None
            versions.append(Version(value))
            assert (written.version, written.value, written.is_deleted) == (len(versions), value, False)
            assert (written.namespace, written.key, written.tenant_id) == (namespace, key, who.tenant)

        @rule(actor=st.sampled_from(sorted(ACTORS)), ns=st.integers(0, 5), key=st.sampled_from(KEYS),
              stale=st.booleans())
        def delete(self, actor: str, ns: int, key: str, stale: bool) -> None:
            who, namespace = ACTORS[actor], self.namespaces[ns]
            versions = self.model.versions(who.tenant, namespace, key)
            live = self.model.live(who.tenant, namespace, key)
            expected = len(versions) + (1 if stale else 0)
            tombstone, error = self.call(who, lambda s: s.memory.delete(namespace, key, expected))
            if not self.may_write(who, namespace):
                refused(error, "42501", "namespace")
                return
            if live is None:
                refused(error, "P0002", "key")
                return
            if stale:
                refused(error, "40001", "expected_version")
                return
            assert error is None, error
            for version in versions:
                version.deleted = True
            versions.append(Version(None, deleted=True))
            assert tombstone is not None
            assert (tombstone.version, tombstone.value, tombstone.is_deleted) == (len(versions), None, True)

        @rule(actor=st.sampled_from(sorted(ACTORS)), ns=st.integers(0, 5), key=st.sampled_from(KEYS))
        def get_and_history(self, actor: str, ns: int, key: str) -> None:
            who, namespace = ACTORS[actor], self.namespaces[ns]
            found, error = self.call(who, lambda s: (s.memory.get(namespace, key), s.memory.history(namespace, key)))
            assert error is None, error
            assert found is not None
            entry, history = found
            if not self.may_read(who, namespace):
                assert (entry, history) == (None, [])
                return
            live = self.model.live(who.tenant, namespace, key)
            assert (None if entry is None else (entry.version, entry.value)) == live
            versions = self.model.keys.get((who.tenant, namespace, key), [])
            assert [(h.version, h.value, h.is_deleted) for h in history] == [
                (n, v.value, v.deleted) for n, v in enumerate(versions, 1)]

        def pick_written(self, data: st.DataObject) -> tuple[str, int, str]:
            """A writer and a (namespace, key) it has written (the example's first one when there is none)."""
            written = sorted((actor, self.namespaces.index(n), k) for (t, n, k) in self.model.keys
                             for actor, who in ACTORS.items() if who.tenant == t and self.may_write(who, n))
            return data.draw(st.sampled_from(written)) if written else ("alice", 0, KEYS[0])

        @rule(data=st.data(), value=VALUES)
        def overwrite_what_was_written(self, data: st.DataObject, value: Any) -> None:
            actor, ns, key = self.pick_written(data)
            self.write(actor, ns, key, value, "read")

        @rule(data=st.data())
        def delete_what_was_written(self, data: st.DataObject) -> None:
            actor, ns, key = self.pick_written(data)
            self.delete(actor, ns, key, False)
            self.get_and_history(data.draw(st.sampled_from(sorted(ACTORS))), ns, key)

        @rule(actor=st.sampled_from(sorted(ACTORS)), prefix=st.integers(0, 4),
              limit=st.none() | st.integers(0, MAX_ROWS + 1))
        def list_prefix(self, actor: str, prefix: int, limit: int | None) -> None:
            who, namespace_prefix = ACTORS[actor], self.prefixes[prefix]
            listed, error = self.call(who, lambda s: s.memory.list(namespace_prefix, limit=limit))
            if limit is not None and limit < 1:
                refused(error, "22023", "limit")
                return
            if limit is not None and limit > MAX_ROWS:
                refused(error, "54000", "limit")
                return
            expected = sorted(
                (namespace, key, *live) for (tenant, namespace, key), _ in self.model.keys.items()
                if tenant == who.tenant and self.may_read(who, namespace)
                and (namespace == namespace_prefix or namespace.startswith(namespace_prefix + ":"))
                and (live := self.model.live(tenant, namespace, key)) is not None)
            if limit is None and len(expected) > MAX_ROWS:
                refused(error, "54000", "namespace_prefix")
                return
            assert error is None, error
            assert listed is not None
            assert [(e.namespace, e.key, e.version, e.value) for e in listed] == expected[:limit]
            assert all(isinstance(e, MemoryEntry) and not e.is_deleted for e in listed)

        @invariant()
        def other_tenant_sees_nothing_of_this_one(self) -> None:
            # The same user id in the other tenant: its reads never show this tenant's entries.
            if not hasattr(self, "model"):
                return
            namespace = self.namespaces[0]
            for other in (TENANT_A, TENANT_B):
                actor = Actor(other, "alice")
                listed, error = self.call(actor, lambda s: s.memory.list(namespace, limit=MAX_ROWS))
                assert error is None and listed is not None
                mine = [(n, k) for (t, n, k) in self.model.keys if t == other and self.model.live(t, n, k)
                        and (n == namespace or n.startswith(namespace + ":"))]
                assert sorted((e.namespace, e.key) for e in listed) == sorted(mine)[:MAX_ROWS]
                assert all(e.tenant_id == other for e in listed)

    run_state_machine_as_test(MemoryMachine, settings=settings(
        max_examples=40 * soak_factor(), stateful_step_count=25, deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
