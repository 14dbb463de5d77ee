"""memsub.graph_nodes names the bounds of a node's window as valid_from and valid_until. A node replaced in the
transaction that created it (a session ended, a document version superseded) has the empty window [t, t), which
PostgreSQL keeps without bounds: the view gives it valid_from = valid_until = created_at, while its valid_period
stays empty, so it exists at no as_of."""

from __future__ import annotations

from typing import Any

from memsub.client import Substrate

from helpers import TENANT_A
from session_helpers import ALICE

READ = ("select node_id, created_at, valid_from, valid_until, isempty(valid_period) as empty, "
        "valid_period @> created_at as at_creation from memsub.graph_nodes where node_type = 'Episode' "
        "order by node_id")


def test_a_node_replaced_where_it_was_made_has_its_creation_for_bounds_and_exists_at_no_time(db: Any) -> None:
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="quick") as session:
            session.sessions.create("quick")
            session.sessions.terminate("quick")
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="open") as session:
            session.sessions.create("open")
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            found = {row["node_id"]: row for row in session.fetch(READ)}
    quick, opened = found["quick"], found["open"]
    assert quick["valid_from"] == quick["valid_until"] == quick["created_at"]
    assert (quick["empty"], quick["at_creation"]) == (True, False)
    assert (opened["valid_from"], opened["valid_until"]) == (opened["created_at"], None)
    assert (opened["empty"], opened["at_creation"]) == (False, True)
