"""A local NLI cross-encoder as a matcher ([cone-rag §5.1]: NtN matching and de-duplication with the NLI model
MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli).

The model is any sequence-classification checkpoint whose config names an entailment label
(``id2label``, e.g. ``{0: "entailment", 1: "neutral", 2: "contradiction"}``): a local folder or a model
name the transformers cache already holds (no NLI model ships on PyPI; the package never downloads one
by itself: ``local_files_only`` unless you pass ``local_files_only=False``). Pairs are encoded as
(premise, hypothesis), truncated to the model's limit, in batches on CPU or GPU.

Decision: ``entailed = P(entailment) > threshold`` with threshold 0.5 by default, as the CONE-RAG
reference implementation decides NtN (its ``entailment > 50.0`` on percentages); ``threshold=None``
takes the arg-max label instead.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.matchers.base import Match, Matcher, Pair

PAPER_MODEL = "MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli"


def entailment_label(id2label: dict) -> int:
    """The class index whose label is entailment (``entailment``, ``ENTAILMENT``, ``entailed``...).

    :param id2label: the model configuration's ``id2label``.
    """
    found = [int(i) for i, name in id2label.items() if str(name).strip().lower().startswith("entail")]
    if len(found) != 1:
        raise InvalidInput(f"the model's config names no single entailment label (id2label={dict(id2label)}); "
                         "an NLI model for this matcher must have one, e.g. {0: 'entailment', 1: 'neutral', "
                         "2: 'contradiction'}")
    return found[0]


class NLIMatcher(Matcher):
    """Entailment by a local NLI cross-encoder (transformers).

    :param model: a folder or cached model name (e.g. the paper's :data:`PAPER_MODEL`, saved with
        ``save_pretrained``).
    :param threshold: a pair matches when P(entailment) > ``threshold``; ``None``: when entailment is the arg-max
        label.
    :param batch_size: pairs per forward pass.
    :param device: e.g. ``"cpu"`` (default: CUDA when available, else CPU).
    :param max_length: the tokenizer's truncation length (default: the model's).
    :param local_files_only: never download the model.
    """

    transient = {**Matcher.transient, "_loaded": lambda: None}  # the model is loaded again in another process

    def __init__(self, model: str, *, threshold: float | None = 0.5, batch_size: int = 16,
                 device: str | None = None, max_length: int | None = None, local_files_only: bool = True):
        self.model = str(model)
        self.threshold = threshold
        self.batch_size = int(batch_size)
        self.device = device
        self.max_length = max_length
        self.local_files_only = local_files_only
        self._loaded = None

    def __repr__(self) -> str:
        return f"NLIMatcher({os.path.basename(self.model.rstrip('/')) or self.model!r}, threshold={self.threshold})"

    def describe(self) -> str:
        rule = "arg-max label" if self.threshold is None else f"P(entailment) > {self.threshold}"
        return f"NLI {os.path.basename(self.model.rstrip('/'))} ({rule})"

    def _load(self):
        if self._loaded is None:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model, local_files_only=self.local_files_only)
                model = AutoModelForSequenceClassification.from_pretrained(
                    self.model, local_files_only=self.local_files_only)
            except OSError as e:
                raise OSError(f"NLI model {self.model!r} not found locally ({e}). Give the folder of a downloaded "
                              f"NLI model, e.g. {PAPER_MODEL} saved with save_pretrained") from None
            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            model.to(device).eval()
            self._loaded = (tokenizer, model, device, entailment_label(model.config.id2label))
        return self._loaded

    def match_batch(self, pairs: Sequence[Pair]) -> list[Match]:
        import torch
        tokenizer, model, device, label = self._load()
        out: list[Match] = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start:start + self.batch_size]
            enc = tokenizer([p for p, _ in chunk], [h for _, h in chunk], truncation=True, padding=True,
                            max_length=self.max_length, return_tensors="pt").to(device)
            with torch.no_grad():
                probs = torch.softmax(model(**enc).logits.float(), dim=-1).cpu()
            for row in probs:
                p = float(row[label])
                entailed = int(row.argmax()) == label if self.threshold is None else p > self.threshold
                out.append(Match(bool(entailed), p))
        return out
