"""The embedders: the deterministic hashing embedder, and the bundled MiniLM model loaded offline and used for
retrieval in the database."""

from __future__ import annotations

import math
import os
import unicodedata

import pytest

from memsub.client import Substrate
from memsub.embedding import (
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    default_embedder_name,
    make_embedder,
    minilm_available,
)
from memsub.models import PacketEnvelopeIn

from helpers import TENANT_A


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_hashing_embedder_is_deterministic_normalized_and_lexical():
    for dimension in (7, 384, 1536):
        embedder = HashingEmbedder(dimension)
        vectors = embedder.embed(["HDPE pellets from Stockton", "", "!!!"])
        assert [len(v) for v in vectors] == [dimension] * 3
        assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0) for v in vectors)
        # Same in a new instance (and a new process: BLAKE2b, not Python's salted hash()).
        assert HashingEmbedder(dimension).embed(["HDPE pellets from Stockton"])[0] == vectors[0]
    embedder = HashingEmbedder(384)
    query, close, far = embedder.embed(["recycled hdpe pellets", "HDPE pellets, recycled, 20 t", "diesel prices"])
    assert cosine(query, close) > 0.5 > cosine(query, far)
    assert embedder.embed([]) == []
    assert isinstance(embedder, Embedder)
    with pytest.raises(ValueError):
        HashingEmbedder(0)
    for not_a_count in (True, 2.5, "384"):  # True would be a 1-d embedder; 2.5 and "384" fail only when embedding
        with pytest.raises(TypeError, match="dimension must be an int"):
            HashingEmbedder(not_a_count)  # type: ignore[arg-type]


def test_hashing_embedder_keeps_marks_without_a_composed_form_inside_the_word():
    """NFC composes most accents, but not every letter has a composed form: Devanagari vowel signs, Thai vowels,
    Arabic short vowels and a caron on J stay combining marks, and must not split their word either."""
    embedder = HashingEmbedder(384)
    hindi, thai, arabic = "हिन्दी भाषा", "ภาษาไทย ที่นี่", "كَتَبَ الوَلَدُ"
    for text in (hindi, thai, arabic):
        assert embedder.embed([text]) == embedder.embed([unicodedata.normalize("NFD", text)])
    # A word with a mark is one word: it shares nothing with the bare letters it would have split into.
    assert cosine(embedder.embed_one("हिन्दी"), embedder.embed_one("ह न द")) < 0.5
    assert embedder.embed_one("J\u030c") == embedder.embed_one("\u01f0")  # J with caron, typed or precomposed


def test_hashing_embedder_reads_an_accent_typed_either_way_as_one_word():
    """A letter and its combining accent (NFD, as macOS file names hold text) embed as the one composed character
    most keyboards type (NFC); before, the mark split the word in two."""
    embedder = HashingEmbedder(384)
    text = "Crème brûlée at the Café Zoë"
    composed, decomposed = (unicodedata.normalize(form, text) for form in ("NFC", "NFD"))
    assert composed != decomposed
    assert embedder.embed([decomposed]) == embedder.embed([composed])


def test_make_embedder_names_and_dimensions():
    assert minilm_available()  # make install installs the embed extra
    assert default_embedder_name() == "minilm"
    assert make_embedder("hashing", 1536).dimension == 1536
    assert make_embedder("minilm", 384).dimension == 384
    with pytest.raises(ValueError, match="384-d vectors but this installation stores 1536-d"):
        make_embedder("minilm", 1536)
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder("word2vec")


def test_minilm_loads_offline_and_ranks_by_meaning(db384):
    """Paraphrases that share no content word rank above unrelated sentences, in the model and in the database."""
    embedder = MiniLMEmbedder()
    assert isinstance(embedder, Embedder)
    sentences = [
        "I forgot my login credentials and cannot get into my account.",
        "The truck needs new tires before the winter run.",
        "Preheat the oven and whisk two eggs with sugar.",
        "Quarterly revenue grew eight percent.",
    ]
    query = "How do I reset my password?"
    vectors = embedder.embed(sentences)
    query_vector = embedder.embed([query])[0]
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert all(len(v) == 384 and math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5)
               for v in vectors)
    similarities = [cosine(query_vector, v) for v in vectors]
    assert similarities[0] > 0.5 > 0.2 > max(similarities[1:])

    with Substrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        for sentence, vector in zip(sentences, vectors, strict=True):
            packet = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": sentence}))
            session.search.store_embedding(packet.packet_id, "content", vector, chunk_text=sentence)
        hits = session.search.semantic(query_vector, k=4)
        assert hits[0].chunk_text == sentences[0]
        hybrid = session.search.hybrid(query, query_vector, k=4)
        assert hybrid[0].chunk_text == sentences[0] and hybrid[0].text_rank is None
