"""Values that are well-formed for their type but meaningless for memsub are refused, naming the field.

Zero vectors (and vectors whose norm single precision cannot hold) give NaN cosine distances; NaN and infinite
numbers poison weights, scores and confidences; infinite timestamps and intervals make validity windows and
decay meaningless; a document index vector of the wrong dimension cannot be searched. Each is refused with
22023 and the field in the error's column diagnostic, as an ordinary application login, and nothing is written.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, expect_error, set_context, table_state

USER = uuid.UUID("00000000-0000-0000-0001-0000000000a1")
PACKET = uuid.UUID("00000000-0000-0000-0002-0000000000a1")


@pytest.fixture(scope="module")
def world(server, template_db) -> Iterator[tuple[str, str, int]]:
    """One database for the module: a packet and a memory key to point at; returns (superuser, app dsn, dim)."""
    name = f"memsub_values_{uuid.uuid4().hex[:10]}"
    with server.janitor(name, template=template_db):
        superuser, app = server.dsn(name), server.dsn(name, "memsub_test_app")
        with psycopg.connect(superuser) as conn:
            dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        with psycopg.connect(app) as conn:
            set_context(conn, TENANT_A, user=USER, session="values")
            conn.execute("select memsub.write_packet(%s::jsonb)", [json.dumps(
                {"packet_id": str(PACKET), "packet_type": "event", "payload": {"text": "seed"}})])
            conn.execute("select memsub.memory_remember(%s, 'k', '1'::jsonb)", [f"user:{USER}"])
            conn.commit()
        yield superuser, app, dimension


@contextmanager
def in_context(world: tuple[str, str, int]) -> Iterator[psycopg.Connection[Any]]:
    """An application connection in the module's tenant context; what it writes is rolled back afterwards."""
    _, app, _ = world
    with psycopg.connect(app) as conn:
        set_context(conn, TENANT_A, user=USER, session="values")
        yield conn
        conn.rollback()


def _vector(dimension: int, value: float = 0.0, first: float | None = None) -> str:
    values = [value] * dimension
    if first is not None:
        values[0] = first
    return "[" + ",".join(repr(v) for v in values) + "]"


def _fill(call: str, dimension: int) -> str:
    """Constant arguments spelled as placeholders in the call tables: a valid query vector, the seeded packet, the
    user's memory namespace and a well-formed content hash."""
    for placeholder, value in [("'VALID'", _vector(dimension, 0.0, first=1.0)), ("'PACKET'", str(PACKET)),
                               ("'NAMESPACE'", f"user:{USER}"), ("'HASH'", "0" * 64)]:
        call = call.replace(placeholder, "'" + value + "'")
    return call


# Functions that need an admin context: called as the platform admin login.
ADMIN_ONLY = ("memory_maintenance", "learn_importance")


def _refused(world: tuple[str, str, int], call: str, params: list[Any], column: str,
             sqlstate: str = "22023") -> psycopg.Error:
    superuser, app, dimension = world
    admin = any(name in call for name in ADMIN_ONLY)
    if admin:
        app = psycopg.conninfo.make_conninfo(superuser, user="memsub_test_platform_admin")
    call = _fill(call, dimension)
    with psycopg.connect(superuser) as ground, psycopg.connect(app) as conn:
        before = table_state(ground)
        ground.rollback()
        set_context(conn, TENANT_A, user=USER, session="values",
                    roles=("tenant_admin", "platform_admin") if admin else ())
        refused = expect_error(conn, sqlstate, column, call, params)
        assert column.split("[")[0].split(".")[-1] in str(refused) or column in str(refused)
        assert table_state(ground) == before
    return refused


VECTOR_CALLS = [
    ("select memsub.store_embedding(%s, 'content', %s::vector)", "packet", "vector"),
    ("select memsub.store_semantic_memory('agent', %s::vector)", None, "vector"),
    ("select * from memsub.search_semantic_memory(%s::vector)", None, "query"),
    ("select memsub.record_reflection('lesson', 'text', p_vector => %s::vector)", None, "vector"),
    ("select memsub.record_summary('topic', 'x', 'text', %s, p_vector => %s::vector)", "packets", "vector"),
    ("select * from memsub.semantic_search(%s::vector)", None, "query"),
    ("select * from memsub.hybrid_search('seed', %s::vector)", None, "query"),
    ("select * from memsub.retrieve_reflections(%s::vector)", None, "query"),
]


@pytest.mark.parametrize("kind", ["zero", "tiny", "huge"])
@pytest.mark.parametrize(("call", "extra", "column"), VECTOR_CALLS, ids=[c[0].split("(")[0][-40:] + c[2]
                                                                        for c in VECTOR_CALLS])
def test_a_vector_argument_without_a_usable_norm_is_refused(world, call, extra, column, kind):
    dimension = world[2]
    # zero: every element 0; tiny: squares underflow single precision; huge: squares overflow it
    vector = {"zero": _vector(dimension), "tiny": _vector(dimension, 1e-30),
              "huge": _vector(dimension, 0.0, first=1e30)}[kind]
    params: list[Any] = {"packet": [PACKET, vector], "packets": [[PACKET], vector], None: [vector]}[extra]
    _refused(world, call, params, column)


def test_the_vector_check_names_the_field(world):
    _refused(world, "select memsub._check_vector(%s::vector, 'my_field')", [_vector(world[2])], "my_field")


@pytest.mark.parametrize(("embedding", "label"), [
    ("zero", "zero"), ("short", "wrong dimension"), ("nan", "NaN"), ("inf", "infinity"), ("big", "over real")])
def test_document_index_put_refuses_unusable_embeddings(world, embedding, label):
    dimension = world[2]
    values: list[float] = {
        "zero": [0.0] * dimension,
        "short": [1.0] * (dimension - 1),
        "nan": [float("nan")] + [1.0] * (dimension - 1),
        "inf": [float("inf")] + [1.0] * (dimension - 1),
        "big": [1e300] + [1.0] * (dimension - 1),
    }[embedding]
    _refused(world, "select * from memsub.document_index_put('a.txt', %s::double precision[])", [values], "embedding")


@pytest.mark.parametrize("embedding", ["zero", "big", "string"])
def test_document_chunk_embeddings_without_a_usable_norm_are_refused(world, embedding):
    dimension = world[2]
    vector: Any = {"zero": [0] * dimension, "big": [1e39] + [1] * (dimension - 1),
                   "string": ["NaN"] + [1] * (dimension - 1)}[embedding]
    chunks = json.dumps([{"start_char": 0, "end_char": 4, "embedding": vector}])
    _refused(world, "select * from memsub.document_ingest('d.txt', %s, 'txt', 'text', %s::jsonb)",
             ["0" * 64, chunks], "chunks[0].embedding")


@pytest.mark.parametrize("embedding", ["zero", "big", "tiny"])
def test_fanned_out_payload_embeddings_without_a_usable_norm_are_refused(world, embedding):
    dimension = world[2]
    vector: Any = {"zero": [0] * dimension, "big": [1e39] + [1] * (dimension - 1),
                   "tiny": [1e-30] * dimension}[embedding]
    envelope = {"packet_type": "memory_write", "payload": {},
                "memory": {"embeddings": [{"embedding_type": "content", "vector": vector}]}}
    _refused(world, "select * from memsub.write_packet(%s::jsonb)", [json.dumps(envelope)],
             "memory.embeddings[0].vector")


OVER_PGVECTOR = 16001  # one more element than pgvector's vector holds


@pytest.mark.parametrize(("call", "params", "column"), [
    ("select * from memsub.document_index_put('a.txt', %s::double precision[])", [[1.0] * OVER_PGVECTOR],
     "embedding"),
    ("select * from memsub.document_ingest('d.txt', %s, 'txt', 'text', %s::jsonb)",
     ["0" * 64, json.dumps([{"start_char": 0, "end_char": 4, "embedding": [1] * OVER_PGVECTOR}])],
     "chunks[0].embedding"),
    ("select * from memsub.write_packet(%s::jsonb)",
     [json.dumps({"packet_type": "memory_write", "payload": {},
                  "memory": {"embeddings": [{"embedding_type": "content", "vector": [1] * OVER_PGVECTOR}]}})],
     "memory.embeddings[0].vector"),
], ids=["document_index_put", "document_ingest", "write_packet"])
def test_a_vector_longer_than_pgvector_holds_is_refused_as_a_wrong_dimension(world, call, params, column):
    """pgvector refuses more than 16000 elements with 54000 and no field; memsub names the field and the
    installation's dimension, as for any other wrong length."""
    refused = _refused(world, call, params, column)
    assert f"must have {world[2]} dimensions" in str(refused) and str(OVER_PGVECTOR) in str(refused)


NAN, INF, NINF = float("nan"), float("inf"), float("-inf")

FLOAT_CALLS = [
    ("select * from memsub.hybrid_search('seed', null, p_vector_weight => %s)", "vector_weight"),
    ("select * from memsub.hybrid_search('seed', null, p_text_weight => %s)", "text_weight"),
    ("select * from memsub.hybrid_search('seed', null, p_importance_weight => %s)", "importance_weight"),
    ("select * from memsub.hybrid_search('seed', null, p_recency_weight => %s)", "recency_weight"),
    ("select memsub.combined_score(0.5, 0.5, now(), p_similarity_weight => %s)", "similarity_weight"),
    ("select memsub.combined_score(0.5, 0.5, now(), p_importance_weight => %s)", "importance_weight"),
    ("select memsub.combined_score(0.5, 0.5, now(), p_recency_weight => %s)", "recency_weight"),
    ("select memsub.combined_score(%s, 0.5, now())", "distance"),
    ("select memsub.combined_score(0.5, %s, now())", "importance"),
    ("select memsub.record_access('packet', 'PACKET', p_relevance_score => %s)", "relevance_score"),
    ("select * from memsub._record_accesses('packet', array['PACKET']::uuid[], array[%s])",
     "scores[0]"),
    ("select memsub.record_task_reflection('t1', p_execution_time_ms => %s)", "execution_time_ms"),
    ("select * from memsub.memory_maintenance(p_threshold => %s)", "threshold"),
    ("select * from memsub.document_ingest('d.txt', 'HASH', 'txt', 'text', "
     "'[{\"start_char\": 0, \"end_char\": 4}]', p_neighbor_max_distance => %s)", "neighbor_max_distance"),
    ("select memsub.memory_strength(%s, now(), now(), now(), '1 day')", "decay_weight"),
    ("select * from memsub.learn_importance(p_access_rate => %s)", "access_rate"),
    ("select * from memsub.learn_importance(p_feedback_rate => %s)", "feedback_rate"),
    ("select memsub.assert_fact('a', 'b', '1', %s)", "confidence"),
    ("select memsub.memory_remember('NAMESPACE', 'k2', '1', p_importance => %s)", "importance"),
    ("select * from memsub.traverse_graph('a', p_min_confidence => %s)", "min_confidence"),
]


@pytest.mark.parametrize("value", [NAN, INF, NINF], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(("call", "column"), FLOAT_CALLS, ids=[f"{c[1]}-{i}" for i, c in enumerate(FLOAT_CALLS)])
def test_nan_and_infinite_numbers_are_refused(world, call, column, value):
    _refused(world, call, [value], column)


def test_a_fact_confidence_given_as_a_string_nan_is_refused(world):
    envelope = {"packet_type": "memory_write", "payload": {},
                "memory": {"facts": [{"subject": "a", "predicate": "b", "object": 1, "confidence": "NaN"}]}}
    _refused(world, "select * from memsub.write_packet(%s::jsonb)", [json.dumps(envelope)],
             "memory.facts[0].confidence")


@pytest.mark.parametrize("column", ["access_rate", "feedback_rate", "floor"])
def test_a_null_learning_rate_or_floor_is_refused(world, column):
    """A NULL rate acted as a rate of 1 (one access or one useful feedback set the importance to 1) and a NULL floor
    turned decay off; each is refused with 23502 naming it, and no run is recorded."""
    _refused(world, f"select * from memsub.learn_importance(p_{column} => null)",  # noqa: S608
             [], column, sqlstate="23502")


TIMESTAMP_CALLS = [
    ("select memsub.temporal_edge_add('a', 'knows', 'b', p_valid_from => %s::timestamptz)", "valid_from"),
    ("select memsub.temporal_edge_add('a', 'knows', 'b', p_valid_until => %s::timestamptz)", "valid_until"),
    ("select memsub.close_relationship('a', 'knows', 'b', %s::timestamptz)", "valid_until"),
    ("select memsub.supersede_relationship('a', 'knows', 'b', %s::timestamptz)", "valid_from"),
    ("select * from memsub.edges_as_of(%s::timestamptz)", "as_of"),
    ("select * from memsub.graph_neighbors_as_of('a', %s::timestamptz)", "as_of"),
    ("select memsub.upsert_relationship('a', 'knows', 'b', p_seen_at => %s::timestamptz)", "seen_at"),
    ("select memsub.record_event('agent', 'x', p_timestamp => %s::timestamptz)", "timestamp"),
    ("select memsub.record_reflection('lesson', 'text', p_expires_at => %s::timestamptz)", "expires_at"),
    ("select memsub.record_summary('topic', 'x', 'text', array['PACKET']::uuid[], "
     "p_valid_until => %s::timestamptz)", "valid_until"),
    ("select * from memsub.summaries_due(%s::timestamptz)", "as_of"),
    ("select * from memsub.semantic_search('VALID', p_since => %s::timestamptz)", "since"),
    ("select * from memsub.semantic_search('VALID', p_until => %s::timestamptz)", "until"),
    ("select memsub.combined_score(0.5, 0.5, %s::timestamptz)", "last_active"),
    ("select memsub.memory_strength(1, %s::timestamptz, now(), now(), '1 day')", "last_access_ts"),
]


@pytest.mark.parametrize("value", ["infinity", "-infinity"])
@pytest.mark.parametrize(("call", "column"), TIMESTAMP_CALLS,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(TIMESTAMP_CALLS)])
def test_infinite_timestamps_are_refused(world, call, column, value):
    _refused(world, call, [value], column)


# The times a function stores and returns: PostgreSQL holds years 4713 BC to 294276, ISO 8601 clients (Python's
# datetime) years 1 to 9999, and a row holding a time past them could be written but no longer read by such a
# client (every read returning it failed in the Python client: "timestamp too large (after year 10K)"). As an
# envelope's timestamp and ttl, they are refused with 22008 naming the field. The filters (as_of, since, until)
# are compared, never stored, and take any finite time.
STORED_TIME_CALLS = [(call, column) for call, column in TIMESTAMP_CALLS if column not in ("as_of", "since", "until")
                     and "combined_score" not in call and "memory_strength" not in call]


@pytest.mark.parametrize("value", ["10000-01-01 00:00:00+00", "9999-12-31 20:00:00-05", "294276-12-31 23:59:59+00",
                                   "0001-01-01 00:00:00+05", "4714-11-24 00:00:00+00 BC"])
@pytest.mark.parametrize(("call", "column"), STORED_TIME_CALLS,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(STORED_TIME_CALLS)])
def test_a_stored_time_outside_years_1_to_9999_is_refused(world, call, column, value):
    refused = _refused(world, call, [value], column, sqlstate="22008")
    assert "years 1 to 9999" in str(refused)


def test_stored_times_at_the_edges_of_years_1_to_9999_are_kept_and_read_back(world):
    """The first and last microsecond ISO 8601 clients hold are kept, and the Python client reads them back."""
    first, last = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    with in_context(world) as conn:
        conn.execute("set local time zone 'UTC'")  # year 1 in UTC is still year 1 where the client reads it
        conn.execute("select memsub.temporal_edge_add('edge from', 'lasts', 'edge to', %s, %s)", [first, last])
        conn.execute("select memsub.record_event('agent', 'at the start', p_timestamp => %s)", [first])
        conn.execute("select memsub.record_reflection('lesson', 'kept', p_expires_at => %s)", [last])
        assert conn.execute("select lower(valid_period), upper(valid_period) from memsub.edges_as_of(%s, 'edge from')",
                            [last - timedelta(microseconds=1)]).fetchall() == [(first, last)]
        assert conn.execute("select \"timestamp\" from memsub.agent_memory_events where event_type = 'at the start'"
                            ).fetchall() == [(first,)]
        assert conn.execute("select expires_at from memsub.reflection_store where content = 'kept'"
                            ).fetchall() == [(last,)]


INTERVAL_CALLS = [
    ("select * from memsub.hybrid_search('seed', null, p_half_life => %s::interval)", "half_life"),
    ("select memsub.combined_score(0.5, 0.5, now(), p_half_life => %s::interval)", "half_life"),
    ("select memsub.memory_touch('NAMESPACE', 'k', %s::interval)", "half_life"),
    ("select * from memsub.memory_maintenance(p_half_life => %s::interval)", "half_life"),
    ("select memsub.memory_strength(1, now(), now(), now(), %s::interval)", "half_life"),
    ("select * from memsub.learn_importance(p_half_life => %s::interval)", "half_life"),
    ("select * from memsub.learn_importance(p_idle_after => %s::interval)", "idle_after"),
]


@pytest.mark.parametrize("value", ["infinity", "-infinity"])
@pytest.mark.parametrize(("call", "column"), INTERVAL_CALLS, ids=[f"{c[1]}-{i}" for i, c in enumerate(INTERVAL_CALLS)])
def test_infinite_intervals_are_refused(world, call, column, value):
    _refused(world, call, [value], column)


HALF_LIFE_CALLS = [(call, column) for call, column in INTERVAL_CALLS if column == "half_life"]


@pytest.mark.parametrize("value", ["0", "-1 day", "0.5 seconds"])
@pytest.mark.parametrize(("call", "column"), HALF_LIFE_CALLS,
                         ids=[f"half_life-{i}" for i in range(len(HALF_LIFE_CALLS))])
def test_a_half_life_under_a_second_is_refused(world, call, column, value):
    """A zero half-life divided by zero (22012) in memory_strength; every half-life is at least a second."""
    _refused(world, call, [value], column)


NULL_HALF_LIFE_CALLS = [(call, column) for call, column in HALF_LIFE_CALLS if "memory_strength" not in call]


@pytest.mark.parametrize(("call", "column"), NULL_HALF_LIFE_CALLS,
                         ids=[f"half_life-{i}" for i in range(len(NULL_HALF_LIFE_CALLS))])
def test_a_null_half_life_is_refused(world, call, column):
    """combined_score read a NULL half-life as one second (its recency term decayed by half every second) where
    every other function refuses it; memory_strength answers NULL for it, as for any NULL argument."""
    _refused(world, call, [None], column)


@pytest.mark.parametrize("field", ["timestamp", "ttl"])
@pytest.mark.parametrize("value", ["infinity", "-infinity", "+infinity"])
def test_envelope_timestamps_are_iso_8601_never_infinite(world, field, value):
    envelope = {"packet_type": "event", "payload": {"n": 1}, field: value}
    _refused(world, "select * from memsub.write_packet(%s::jsonb)", [json.dumps(envelope)], field, sqlstate="22007")


@pytest.mark.parametrize("embedding", ["string", "big", "empty"])
def test_embeddings_of_stored_chunks_name_the_element(world, embedding):
    """memsub.document_embed_chunks refuses an element that is not a usable vector with 22023 naming it (a bare
    cast error, 22P02 with no column, before), and writes nothing."""
    _, app, dimension = world
    with psycopg.connect(app) as conn:
        set_context(conn, TENANT_A, user=USER, session="values")
        row = conn.execute("select document_id from memsub.document_ingest('embed-later.txt', %s, 'txt', 'text', %s)",
                           ["1" * 64, json.dumps([{"start_char": 0, "end_char": 4}])]).fetchone()
        conn.commit()
    assert row is not None
    vector: Any = {"string": ["a"] + [1] * (dimension - 1), "big": [1e50] + [1] * (dimension - 1),
                   "empty": []}[embedding]
    _refused(world, "select * from memsub.document_embed_chunks(%s, %s::jsonb)",
             [row[0], json.dumps([{"chunk_index": 0, "embedding": vector}])], "embeddings[0].embedding")


# Required text that holds only whitespace other than spaces (tabs, line breaks) is blank too.
BLANK_TEXT_CALLS = [
    ("select memsub.record_event(%s, 'e')", "agent_id"),
    ("select memsub.record_event('a', %s)", "event_type"),
    ("select memsub.record_reflection('lesson', %s)", "content"),
    ("select * from memsub.apply_world_model_update(%s, '[{\"entity_id\": \"x\", \"entity_type\": \"T\"}]')",
     "insight_type"),
    ("select memsub.task_create(%s)", "type"),
    ("select memsub.agent_spawn(%s, 1)", "name"),
    ("select memsub.document_index_put(%s)", "file_path"),
    ("select count(*) from memsub.agent_session_get_items(%s)", "session_id"),
    ("select memsub.langgraph_checkpoint_put(%s, '', 'c1', null, 'msgpack', 'x')", "thread_id"),
]


@pytest.mark.parametrize("value", ["\t", "\n", " \t\r\n "], ids=["tab", "newline", "mixed"])
@pytest.mark.parametrize(("call", "column"), BLANK_TEXT_CALLS, ids=[c[1] for c in BLANK_TEXT_CALLS])
def test_required_text_of_whitespace_only_is_refused(world, call, column, value):
    _refused(world, call, [value], column)


def test_required_text_is_stored_without_surrounding_whitespace_of_any_kind(world):
    with in_context(world) as conn:
        row = conn.execute("select event_type from memsub.record_event('agent', %s)", ["\tdeploy\n  done\r\n"])
        assert row.fetchone() == ("deploy done",)


def test_content_is_stored_as_given_only_names_are_normalized(world):
    """Text that says something (a reflection's content, a summary's text) keeps its line breaks, indentation and
    surrounding white space; only names are trimmed with each run of white space made one space."""
    text = "Step 1:\n    run tests\n\nStep 2:  deploy\n"
    with in_context(world) as conn:
        reflection = conn.execute("select content from memsub.record_reflection('lesson', %s)", [text])
        summary = conn.execute("select summary_text from memsub.record_summary('project', 'p', %s, %s)",
                               [text, [PACKET]])
        assert (reflection.fetchone(), summary.fetchone()) == ((text,), (text,))


def test_optional_text_of_whitespace_only_is_absent(world):
    """An optional agent id or task id of only tabs or line breaks is no value (NULL), as one of spaces is (a blank
    element of a list of names, such as a reflection tag, is refused instead: tests/reflection)."""
    with in_context(world) as conn:
        access = conn.execute("select agent_id from memsub.record_access('packet', %s, %s)", [PACKET, "\t\n"])
        trace = conn.execute("select agent_id from memsub.record_reasoning_trace(%s)", [" \t "])
        reflection = conn.execute("select task_id, tags from memsub.record_reflection('lesson', 'c', null, '{}', %s,"
                                  " p_task_id => %s)", [["kept"], "\n"])
        assert (access.fetchone(), trace.fetchone(), reflection.fetchone()) == ((None,), (None,), (None, ["kept"]))


def test_text_keys_are_stored_and_matched_in_one_form(world):
    """A name used as a key (an agent id, a task id, a summary's scope value) is stored trimmed with each run of
    whitespace made one space, whether the field is required or optional, and a filter on it is read the same way:
    the same key spelled with other whitespace is the same key."""
    dimension = world[2]
    with in_context(world) as conn:
        access = conn.execute("select agent_id from memsub.record_access('packet', %s, %s)", [PACKET, "\tagent\n one"])
        trace = conn.execute("select agent_id from memsub.record_reasoning_trace(%s)", [" agent\t\tone\r\n"])
        lesson = conn.execute("select reflection_id, task_id from memsub.record_reflection('lesson', 'c',"
                              " p_task_id => %s)", ["\ttask\n 7"]).fetchone()
        task = conn.execute("select task_id from memsub.record_task_reflection(%s)", ["task  7"])
        summary = conn.execute("select scope_value from memsub.record_summary('project', %s, 'text', %s)",
                               ["\tproject\n x ", [PACKET]])
        assert lesson is not None
        assert [access.fetchone(), trace.fetchone(), lesson[1:], task.fetchone(), summary.fetchone()] == [
            ("agent one",), ("agent one",), ("task 7",), ("task 7",), ("project x",)]
        found = conn.execute("select reflection_id from memsub.retrieve_reflections(p_task_id => %s)",
                             [" task\t7 "]).fetchall()
        assert found == [(lesson[0],)]
        memory = conn.execute("select embedding_id from memsub.store_semantic_memory(%s, %s)",
                              ["agent\t one", _vector(dimension, 0.0, first=1.0)]).fetchone()
        hits = conn.execute("select embedding_id from memsub.search_semantic_memory(%s, 10, %s)",
                            [_vector(dimension, 0.0, first=1.0), "agent  one\n"]).fetchall()
        assert memory is not None and hits == [memory]


NULL_ELEMENT_CALLS = [
    ("select memsub.record_reflection('lesson', 'x', p_entities => array['Acme', null])", "entities[1]"),
    ("select memsub.record_reflection('lesson', 'x', p_tags => array[null]::text[])", "tags[0]"),
    ("select memsub.record_task_reflection('t1', p_what_worked => array[null]::text[])", "what_worked[0]"),
    ("select memsub.record_task_reflection('t1', p_what_failed => array['a', null])", "what_failed[1]"),
    ("select memsub.record_task_reflection('t1', p_false_constraints => array[null]::text[])",
     "false_constraints[0]"),
    ("select memsub.record_task_reflection('t1', p_helpful_patterns => array[null]::text[])", "helpful_patterns[0]"),
    ("select memsub.record_task_reflection('t1', p_lessons => array[null]::text[])", "lessons[0]"),
    ("select memsub.record_task_reflection('t1', p_recommendations => array[null]::text[])", "recommendations[0]"),
    ("select memsub.record_task_reflection('t1', p_related_decisions => array[gen_random_uuid(), null])",
     "related_decisions[1]"),
    ("select memsub.record_summary('thread', 't', 's', array['PACKET']::uuid[], p_key_entities => array[null]::text[])",
     "key_entities[0]"),
    ("select memsub.record_summary('thread', 't', 's', array['PACKET']::uuid[], p_key_decisions => array['a', null])",
     "key_decisions[1]"),
    ("select memsub.document_ingest('d.txt', 'HASH', 'txt', 'text', '[{\"start_char\": 0, \"end_char\": 4}]', "
     "p_key_concepts => array['resin', null])", "key_concepts[1]"),
]


@pytest.mark.parametrize(("call", "column"), NULL_ELEMENT_CALLS, ids=[c[1] for c in NULL_ELEMENT_CALLS])
def test_a_null_element_of_a_stored_list_is_refused_naming_its_place(world, call, column):
    # stored, a NULL element was a row no reader could take for a list of strings or ids
    _refused(world, call, [], column)
