"""Miniature collections in the real formats, for tests and benchmarks.

``write_segment_shard`` writes a gzipped JSONL shard of the MS MARCO V2.1 segmented corpus exactly as the
official files are laid out: one JSON object per line with the keys ``docid, url, title, headings, segment,
start_char, end_char``, and a ``docid`` of the form ``msmarco_v2.1_doc_{shard}_{docbyte}#{segidx}_{segbyte}``,
where ``segbyte`` is the byte offset of the line in the *decompressed* shard. The text is random words, but
shaped like the real corpus (overlapping sentence windows of one document repeat its title and headings), so
it compresses about as well as the real shards do.
"""
from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

SHARD_FILE = "msmarco_v2.1_doc_segmented_{shard:02d}.json.gz"


class SyntheticSegment(NamedTuple):
    docid: str
    url: str
    title: str
    headings: str
    segment: str
    start_char: int
    end_char: int


class _Vocabulary:
    """Random words drawn with Zipf's law (frequency of rank r proportional to 1/r), as in English text."""

    def __init__(self, rng: random.Random, size: int = 3000):
        letters = "abcdefghijklmnopqrstuvwxyz"
        self.words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 11))) for _ in range(size)]
        total = 0.0
        self.cum_weights = []
        for rank in range(1, size + 1):
            total += 1.0 / rank
            self.cum_weights.append(total)

    def sentence(self, rng: random.Random) -> str:
        words = rng.choices(self.words, cum_weights=self.cum_weights, k=rng.randint(6, 28))
        return " ".join(words).capitalize() + "."


def synthetic_documents(shard: int, seed: int = 0) -> Iterator[tuple[str, str, str, list[str]]]:
    """Endless stream of ``(url, title, headings, sentences)`` documents for one shard."""
    rng = random.Random(seed * 1000 + shard)
    vocab = _Vocabulary(rng)
    n = 0
    while True:
        title = " ".join(rng.choice(vocab.words) for _ in range(rng.randint(2, 9))).title()
        headings = "\n".join([title] + [vocab.sentence(rng)[:60] for _ in range(rng.randint(0, 4))])
        sentences = [vocab.sentence(rng) for _ in range(rng.randint(3, 40))]
        yield f"http://example{n % 997}.org/{rng.choice(vocab.words)}/{n}", title, headings, sentences
        n += 1


def segments_of(shard: int, docbyte: int, url: str, title: str, headings: str, sentences: list[str],
                window: int = 10, stride: int = 5) -> Iterator[tuple[int, SyntheticSegment]]:
    """Segments of one document: windows of ``window`` sentences every ``stride`` sentences (as the
    official segmentation does), with ``docid`` missing its ``segbyte`` (filled in by the writer)."""
    body = " ".join(sentences)
    starts = []
    pos = 0
    for s in sentences:
        starts.append(pos)
        pos += len(s) + 1
    idx = 0
    first = 0
    while True:
        last = min(first + window, len(sentences))
        start, end = starts[first], starts[last - 1] + len(sentences[last - 1])
        yield idx, SyntheticSegment(f"msmarco_v2.1_doc_{shard:02d}_{docbyte}#{idx}", url, title, headings,
                                    body[start:end], start, end)
        if last == len(sentences):
            return
        idx += 1
        first += stride


def write_segment_shard(path: str | Path, shard: int, *, n_segments: int | None = None,
                        min_bytes: int | None = None, seed: int = 0, compresslevel: int = 6) -> list[str]:
    """Write a synthetic shard to ``path`` (gzip), stopping after ``n_segments`` segments or once at least
    ``min_bytes`` decompressed bytes are written. Returns the segment ids in file order."""
    if n_segments is None and min_bytes is None:
        raise ValueError("give n_segments or min_bytes")
    ids: list[str] = []
    segbyte = 0
    docbyte = 0
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb", compresslevel=compresslevel) as out:
        for url, title, headings, sentences in synthetic_documents(shard, seed):
            for _, seg in segments_of(shard, docbyte, url, title, headings, sentences):
                doc_id = f"{seg.docid}_{segbyte}"
                record = {"docid": doc_id, "url": seg.url, "title": seg.title, "headings": seg.headings,
                          "segment": seg.segment, "start_char": seg.start_char, "end_char": seg.end_char}
                line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
                out.write(line)
                ids.append(doc_id)
                segbyte += len(line)
                if (n_segments is not None and len(ids) >= n_segments) or (
                        min_bytes is not None and segbyte >= min_bytes):
                    return ids
            # the parent document's byte offset in the (unsegmented) document shard
            docbyte += len(url) + len(title) + len(headings) + sum(len(s) + 1 for s in sentences) + 100
    return ids
