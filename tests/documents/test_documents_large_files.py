"""Files of several megabytes: what an operator's corpus holds (a log, an export, a book as one file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memsub import documents

from doc_helpers import tenant_session
from helpers import TENANT_A
from session_helpers import ground_truth

ROOT = Path(__file__).resolve().parents[2]
# Far above what the calls below take (seconds); a client that waits for an answer to a message it has not sent
# in full waits forever, so a run that does not end in this time is reported as hanging.
HANG = 300

ASYNC_INGEST = """
import asyncio, sys
from memsub.async_client import AsyncSubstrate

async def main() -> None:
    async with AsyncSubstrate(sys.argv[1]) as substrate, substrate.tenant(sys.argv[2]) as session:
        result = await session.documents.ingest_file(sys.argv[3])
    print(result.status, result.chunk_count)

asyncio.run(main())
"""


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    try:
        return subprocess.run(args, capture_output=True, text=True, env=env, timeout=HANG, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(args[:4])} ... did not end within {HANG} s")


def test_a_file_of_several_megabytes_is_ingested_by_the_command_and_by_the_async_client(db, tmp_path):
    """A call sends its arguments in a pipeline. psycopg's pipeline Sync stops sending once its commands are
    queued, with part of a large message still in libpq's output buffer, then waits for the answer: a document
    of about 2 MB or more (the text, its chunks) left the client and the server waiting for each other, for ever
    (the server in ClientRead)."""
    text = "".join(f"line {n} of a long export, written by a tool that never wraps its output.\n"
                   for n in range(40_000))  # 3.1 MB
    for name, command in (("sync.txt", None), ("async.txt", ASYNC_INGEST)):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        if command is None:
            run = _run([sys.executable, "-m", "memsub", "ingest", str(path), "--dsn", db.dsn("app"),
                        "--tenant", str(TENANT_A), "--json"])
            assert run.returncode == 0 and json.loads(run.stdout)["status"] == "created", run.stderr
        else:
            run = _run([sys.executable, "-c", command, db.dsn("app"), str(TENANT_A), str(path)])
            assert run.returncode == 0 and run.stdout.split()[0] == "created", run.stderr
    stored = ground_truth(db, "select file_path, length(extracted_text) as chars from memsub.document_index "
                              "order by file_path")
    assert [(Path(row["file_path"]).name, row["chars"]) for row in stored] == [
        ("async.txt", len(text)), ("sync.txt", len(text))]




@pytest.mark.parametrize("pattern", [
    "a",                      # one byte a character
    "𝄞",                      # four: a chunk fills its byte window exactly
    "é€𝄞a",                   # every width, cut at every place of a character
    "a𝄞𝄞𝄞 €\n",               # runs of wide characters between the places a chunk prefers to end
])
@pytest.mark.parametrize("max_chars", [2, 3, 7])
def test_each_stored_chunk_is_its_slice_of_the_text_whatever_the_character_widths(db, pattern, max_chars):
    """document_ingest cuts the chunks' texts from the UTF-8 bytes of the document at a running byte offset (one
    read of the text, where substr per chunk read it once per chunk): each chunk is still exactly its characters."""
    text = "".join(pattern[(n * 7) % len(pattern)] if n % 5 else pattern[n % len(pattern)] for n in range(301))
    with tenant_session(db.dsn("app")) as session:
        result = session.documents.ingest("mixed.txt", text, file_hash=documents.sha256_hex(text.encode()),
                                          mime="txt", max_chars=max_chars)
        stored = session.documents.chunks_of(result.document_id)
    assert [(c.start_char, c.end_char, c.content) for c in stored] == [
        (s.start, s.end, text[s.start:s.end]) for s in documents.chunk_spans(text, max_chars)]
    assert "".join(c.content for c in stored) == text
