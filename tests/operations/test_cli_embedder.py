"""One ``--embedder`` for every command that embeds (search, ingest, packet write, mcp): a built-in name or
``module:factory``, the same ``MEMSUB_EMBEDDER``, and the same one-line refusal with exit 2 for a bad spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsub.cli import main

from helpers import TENANT_A, superuser_count

FACTORY = "memsub.embedding:HashingEmbedder"  # module:factory building the hashing embedder of any dimension
BAD_SPECS = {
    "unknown name": "nonsense",
    "missing module": "no_such_module_for_memsub:build",
    "no factory": "memsub.embedding:",
    "not an embedder": "memsub.embedding:EMBEDDER_NAMES",
    "wrong dimension": "minilm",  # 384-d; the test installation stores 1536-d vectors
}
ENVELOPES = [
    {"packet_type": "event", "payload": {"text": "Pacific Polymers ships recycled HDPE pellets from Stockton"}},
    {"packet_type": "event", "payload": {"text": "the Reno route closes at Donner Pass when it snows"}},
    {"packet_type": "event", "payload": {"count": 3}},
]


def _base(db) -> list[str]:
    return ["--dsn", db.dsn("app"), "--tenant", str(TENANT_A)]


def _arguments(command: str, tmp_path: Path) -> list[str]:
    if command == "ingest":
        note = tmp_path / "note.md"
        note.write_text("# Routes\n\nThe Reno route closes at Donner Pass when it snows.\n", encoding="utf-8")
        return ["ingest", str(note)]
    if command == "packet write":
        source = tmp_path / "envelopes.jsonl"
        source.write_text("".join(json.dumps(e) + "\n" for e in ENVELOPES), encoding="utf-8")
        return ["packet", "write", str(source)]
    if command == "mcp":
        return ["mcp"]
    return ["search", "Donner Pass"]


@pytest.mark.parametrize("command", ["search", "ingest", "packet write", "mcp"])
@pytest.mark.parametrize("why", sorted(BAD_SPECS))
def test_every_command_refuses_a_bad_embedder_in_one_line_with_exit_2(db, tmp_path, command, why):
    spec = BAD_SPECS[why]
    result = CliRunner().invoke(main, [*_arguments(command, tmp_path), *_base(db), "--embedder", spec])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(f"memsub: --embedder {spec!r}: ") and "field embedder" in lines[-1]
    assert "Traceback" not in result.output and result.stdout == ""
    assert superuser_count(db) == 0 and superuser_count(db, "memsub.memory_embeddings") == 0


FAULTY_FACTORIES = {
    "factory raises": "memsub_test_factories:raises",
    "factory is no callable": "memsub_test_factories:NOT_CALLABLE",
    "module fails on import": "memsub_test_broken_module:build",
}


@pytest.fixture
def faulty_factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "memsub_test_factories.py").write_text(
        "NOT_CALLABLE = 3\n\ndef raises(dimension):\n    raise KeyError('EMBEDDING_API_KEY')\n", encoding="utf-8")
    (modules / "memsub_test_broken_module.py").write_text("1 / 0\n", encoding="utf-8")
    (modules / "memsub_test_no_vectors.py").write_text(
        "class Embedder:\n    def __init__(self, dimension):\n        self.dimension = dimension\n\n"
        "    def embed(self, texts):\n        return []\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(modules))


@pytest.mark.parametrize("why", sorted(FAULTY_FACTORIES))
def test_a_faulty_factory_is_refused_in_one_line_before_anything_is_written(db, tmp_path, faulty_factories, why):
    spec = FAULTY_FACTORIES[why]
    result = CliRunner().invoke(main, [*_arguments("packet write", tmp_path), *_base(db), "--embedder", spec])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(f"memsub: --embedder {spec!r}: ") and "field embedder" in lines[-1], result.output
    assert "Traceback" not in result.output and result.stdout == ""
    assert superuser_count(db) == 0


@pytest.mark.parametrize("command", ["search", "ingest", "packet write"])
def test_an_embedder_that_returns_no_vector_is_one_line_not_a_crash(db, tmp_path, faulty_factories, command):
    result = CliRunner().invoke(main, [*_arguments(command, tmp_path), *_base(db),
                                       "--embedder", "memsub_test_no_vectors:Embedder"])
    assert result.exit_code in (1, 2), result.output  # ingest reports a file it could not store with 1
    assert "returned 0 vectors for" in result.stderr + result.stdout, result.output
    assert "unexpected error" not in result.output and "Traceback" not in result.output
    assert superuser_count(db) == 0


@pytest.mark.parametrize("command", ["search", "ingest", "packet write"])
def test_memsub_embedder_means_the_same_for_every_command(db, tmp_path, command):
    result = CliRunner().invoke(main, [*_arguments(command, tmp_path), *_base(db)],
                                env={"MEMSUB_EMBEDDER": "nonsense"})
    assert result.exit_code == 2 and "memsub: --embedder 'nonsense': unknown embedder" in result.stderr


@pytest.mark.parametrize("spec", ["hashing", FACTORY])
def test_both_spec_forms_embed_on_ingest_and_on_search(db, tmp_path, spec):
    runner = CliRunner()
    ingested = runner.invoke(main, [*_arguments("ingest", tmp_path), *_base(db), "--embedder", spec])
    assert ingested.exit_code == 0, ingested.output
    assert "1 embedded" in ingested.stdout
    found = runner.invoke(main, ["search", "Reno route Donner Pass", *_base(db), "--embedder", spec, "--json"])
    assert found.exit_code == 0, found.output
    assert "hashing (feature hashing, 1536-d" in found.stderr or "HashingEmbedder (1536-d)" in found.stderr
    assert "Donner Pass" in json.loads(found.stdout.splitlines()[0])["chunk_text"]


@pytest.mark.parametrize(("write_spec", "search_spec"), [(FACTORY, "hashing"), ("hashing", FACTORY)])
def test_a_packet_written_with_an_embedder_is_found_by_search_with_the_same_one(db, tmp_path, write_spec,
                                                                                 search_spec):
    runner = CliRunner()
    written = runner.invoke(main, [*_arguments("packet write", tmp_path), *_base(db), "--embedder", write_spec,
                                   "--json"])
    assert written.exit_code == 0, written.output
    ids = [json.loads(line)["packet_id"] for line in written.stdout.splitlines()]
    # the two envelopes with a text get their content vector; the one without a text gets none
    assert superuser_count(db, "memsub.memory_embeddings") == 2
    found = runner.invoke(main, ["search", ENVELOPES[1]["payload"]["text"], *_base(db), "--embedder", search_spec,
                                 "--json"])
    assert found.exit_code == 0, found.output
    hits = [json.loads(line) for line in found.stdout.splitlines()]
    assert [h["packet_id"] for h in hits] == [ids[1], ids[0]]
    assert hits[0]["distance"] == pytest.approx(0.0, abs=1e-6)
    assert hits[0]["chunk_text"] == ENVELOPES[1]["payload"]["text"]


def test_packet_write_without_an_embedder_stores_no_vector_and_keeps_an_envelopes_own(db, tmp_path):
    own = {"packet_type": "event", "payload": {"text": "brings its own"},
           "memory": {"embeddings": [{"embedding_type": "content", "vector": [1.0] + [0.0] * 1535,
                                      "chunk_text": "its own chunk"}]}}
    runner = CliRunner()
    plain_source = tmp_path / "plain.jsonl"
    plain_source.write_text(json.dumps(ENVELOPES[0]) + "\n", encoding="utf-8")
    plain = runner.invoke(main, ["packet", "write", str(plain_source), *_base(db)], env={"MEMSUB_EMBEDDER": None})
    assert plain.exit_code == 0, plain.output
    assert superuser_count(db) == 1 and superuser_count(db, "memsub.memory_embeddings") == 0
    source = tmp_path / "own.jsonl"
    source.write_text(json.dumps(own) + "\n" + json.dumps(ENVELOPES[1]) + "\n", encoding="utf-8")
    embedded = runner.invoke(main, ["packet", "write", str(source), *_base(db), "--embedder", "hashing"])
    assert embedded.exit_code == 0, embedded.output
    with db.connect() as conn:
        chunks = sorted(r[0] for r in conn.execute("select chunk_text from memsub.memory_embeddings"))
    assert chunks == sorted(["its own chunk", ENVELOPES[1]["payload"]["text"]])
