"""Every table, view and function x every role: observed privileges equal the table in docs/security.md."""

from __future__ import annotations

import os
from pathlib import Path

import security_matrix


def test_privileges_match_the_documented_matrix(db):
    observed = security_matrix.observe({role: db.dsn(role) for role in security_matrix.ROLES}, db.dsn())
    if os.environ.get("MEMSUB_MATRIX_OUT"):  # for reviewing a change before updating docs/security.md
        Path(os.environ["MEMSUB_MATRIX_OUT"]).write_text(security_matrix.render(observed) + "\n")
    expected = security_matrix.documented()
    missing = sorted(set(observed) - set(expected))
    stale = sorted(set(expected) - set(observed))
    assert not missing, f"objects without a documented row: {missing}\n{security_matrix.render(observed)}"
    assert not stale, f"documented objects that do not exist: {stale}"
    differences = {name: (expected[name], observed[name]) for name in observed if observed[name] != expected[name]}
    assert differences == {}


def test_a_role_without_grants_is_denied_everything(db):
    observed = security_matrix.observe({"nobody": db.dsn("nobody")}, db.dsn())
    assert {cells["nobody"] for cells in observed.values()} == {"-"}
