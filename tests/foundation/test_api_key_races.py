"""An API key revoked while a request authenticated by it runs, or before a request authenticates: a revoked key
opens no context once its revoke has committed, whatever the isolation of the transaction presenting it; a
request that authenticated before the revoke committed ends as it began (docs/security.md, "API keys")."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import TENANT_A, expect_error, set_context, started_call
from session_helpers import one

AUTHENTICATE = "select tenant_id from memsub.authenticate_api_key(%s)"
REVOKE = "select memsub.revoke_api_key(%s)"


def _key(db: Any) -> dict[str, Any]:
    with db.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        key = one(admin, "select key_id, api_key from memsub.create_api_key(%s, p_label => 'worker')", [TENANT_A])
        admin.commit()
    return key


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_a_key_revoked_after_the_transaction_began_opens_no_context(db, isolation):
    """A transaction whose snapshot predates the revoke read the key as it was: it authenticated after the revoke
    had committed, and acted for the key's tenant for as long as it stayed open. It is refused as a revoked
    key."""
    key = _key(db)
    with db.connect("app") as request, db.connect("tenant_admin") as admin:
        request.execute(f"set transaction isolation level {isolation}")
        request.execute("select 1")  # the transaction's snapshot
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        assert admin.execute(REVOKE, [key["key_id"]]).fetchone() == (True,)
        admin.commit()
        expect_error(request, "28000", "api_key", AUTHENTICATE, [key["api_key"]])


def test_a_read_only_transaction_of_a_snapshot_isolation_cannot_authenticate(db):
    """Such a transaction cannot lock the key, so it cannot tell a key revoked since its snapshot: refused, with
    PostgreSQL's code for a read-only transaction, naming the key."""
    key = _key(db)
    with db.connect("app") as request:
        request.execute("set transaction isolation level repeatable read, read only")
        expect_error(request, "25006", "api_key", AUTHENTICATE, [key["api_key"]])
        request.execute("set transaction read only")  # read committed: reads the key as committed now
        assert request.execute(AUTHENTICATE, [key["api_key"]]).fetchone() == (TENANT_A,)


@pytest.mark.parametrize(("isolation", "revoke_waits"), [("read committed", False), ("repeatable read", True)])
def test_a_request_that_authenticated_before_the_revoke_ends_as_it_began(db, isolation, revoke_waits):
    """A request past authentication keeps the context it opened until its transaction ends. In READ COMMITTED
    the revoke does not wait for it; in REPEATABLE READ, which locked the key, the revoke commits after the
    request ends. Its next transaction is refused."""
    key = _key(db)
    with db.connect("app") as request, db.connect("tenant_admin") as admin:
        request.execute(f"set transaction isolation level {isolation}")
        assert request.execute(AUTHENTICATE, [key["api_key"]]).fetchone() == (TENANT_A,)
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        revoke = started_call(db, admin, lambda: admin.execute(REVOKE, [key["key_id"]]).fetchone())
        waited = not revoke.done()
        if not waited:
            admin.commit()
        assert request.execute("select memsub.current_tenant_id()").fetchone() == (TENANT_A,)
        request.commit()
        assert revoke.join().error is None and revoke.result == (True,)
        admin.commit()
        assert waited == revoke_waits
        expect_error(request, "28000", "api_key", AUTHENTICATE, [key["api_key"]])


@pytest.mark.parametrize(("isolation", "refused"), [("read committed", False), ("repeatable read", True)])
def test_an_authentication_during_a_revoke(db, isolation, refused):
    """A revoke in progress: READ COMMITTED reads the key as committed, live, without waiting, and the request
    is one that authenticated before the revoke; REPEATABLE READ waits for the revoke and, once it commits, is
    refused. After the commit, both are refused."""
    key = _key(db)
    with db.connect("tenant_admin") as admin, db.connect("app") as request:
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        assert admin.execute(REVOKE, [key["key_id"]]).fetchone() == (True,)
        request.execute(f"set transaction isolation level {isolation}")
        authenticated = started_call(db, request, lambda: request.execute(AUTHENTICATE, [key["api_key"]]).fetchone())
        waited = not authenticated.done()
        admin.commit()
        authenticated.join()
        request.rollback()
        assert waited == refused
        if refused:
            assert getattr(authenticated.error, "sqlstate", None) == "28000", authenticated.error
            assert authenticated.error.diag.column_name == "api_key"  # type: ignore[union-attr]
        else:
            assert authenticated.error is None and authenticated.result == (TENANT_A,)
        request.execute(f"set transaction isolation level {isolation}")
        expect_error(request, "28000", "api_key", AUTHENTICATE, [key["api_key"]])
