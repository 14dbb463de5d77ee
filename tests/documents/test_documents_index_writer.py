"""document_index has one writer: memsub._document_index_write stores every entry, for document_index_put (the
seed 001 index) and document_ingest (seed 003 versions) alike, so the context identity and the one-latest-version
rule are written once."""

from __future__ import annotations

import re
from typing import Any

from session_helpers import ground_truth

WRITES = re.compile(r"\b(insert\s+into|update)\s+memsub\.document_index\b", re.I)


def test_only_the_internal_writer_inserts_or_updates_document_index_rows(db: Any) -> None:
    functions = ground_truth(
        db, "select p.proname, p.prosrc from pg_proc p where p.pronamespace = 'memsub'::regnamespace")
    writers = sorted({f["proname"] for f in functions if WRITES.search(f["prosrc"])})
    # The other writes the mean of the chunk vectors on an entry already stored.
    assert writers == ["_document_index_write", "_document_set_mean_vector"]
    inserting = sorted({f["proname"] for f in functions
                        if re.search(r"\binsert\s+into\s+memsub\.document_index\b", f["prosrc"], re.I)})
    assert inserting == ["_document_index_write"]
    callers = sorted({f["proname"] for f in functions if "memsub._document_index_write(" in f["prosrc"]})
    assert callers == ["document_index_put", "document_ingest"]


def test_the_internal_writer_is_not_callable_by_client_roles(db: Any) -> None:
    granted = ground_truth(db, """
        select r.rolname from pg_roles r
         where r.rolname ~ '^memsub_' and r.rolname <> 'memsub_owner'
           and has_function_privilege(r.oid, 'memsub._document_index_write(memsub.document_index)',
                                      'execute')""")
    assert granted == []
