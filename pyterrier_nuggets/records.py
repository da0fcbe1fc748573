"""Typed records of nugget evaluation: nuggets, assignments, RAG answers, support judgments, verdicts, labels.

Labels are validated on construction: an invalid label never becomes a record. Readers that meet invalid
labels in real files report them through ``InvalidLabel`` (see :mod:`pyterrier_nuggets.formats`). This
module imports nothing of pyterrier or openai (decisions.md, decision 6).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import both_orders_verdict

IMPORTANCES = (ids.VITAL, ids.OKAY)
ASSIGNMENTS = (ids.SUPPORT, ids.PARTIAL_SUPPORT, ids.NOT_SUPPORT)
SUPPORT_LEVELS = (ids.FULL, ids.PARTIAL, ids.NONE)
BIOGEN_RELATIONS = ids.BIOGEN_RELATIONS
JUDGMENT_LABELS = SUPPORT_LEVELS + (ids.UNJUDGED,)  # a support judgment's label: a level, or unjudged (-1)


@dataclass(frozen=True)
class Nugget:
    """One nugget of a topic ([autonuggetizer §3.1-3.2]).

    ``index`` is the nugget's 0-based position in its source list and makes its id, ``{qid}:n{index}``;
    it stays fixed when other nuggets of the topic are dropped. A nugget without importance (``NuggetCreator``
    output) can be assigned but has no grade, so it cannot be scored or written to nugget qrels.

    :param qid: the topic id.
    :param index: the 0-based position in the topic's source list (the id ``{qid}:n{index}``).
    :param text: the nugget's text.
    :param importance: ``vital`` or ``okay``, or ``None`` for a nugget not scored yet.
    :param provenance: free metadata, not compared (e.g. ``{"source": "post-edit"}`` in TREC RAG 2025 nuggets, or
        the segment ids it was created from).
    """

    qid: str
    index: int
    text: str
    importance: str | None
    provenance: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if self.importance is not None and self.importance not in IMPORTANCES:
            raise InvalidInput(f"nugget importance must be one of {IMPORTANCES}, got {self.importance!r}")

    @property
    def id(self) -> str:
        return ids.nugget_id(self.qid, self.index)

    @property
    def grade(self) -> int:
        """Relevance in nugget qrels: 2 = vital, 1 = okay."""
        if self.importance is None:
            raise InvalidInput(f"nugget {self.id} has no importance yet: score it (NuggetScorer) or give it "
                             "'vital' or 'okay' before scoring answers against it")
        return ids.IMPORTANCE_TO_GRADE[self.importance]


@dataclass(frozen=True)
class Assignment:
    """Whether an answer supports a nugget ([autonuggetizer §3.3-3.4]).

    :param qid: the topic id.
    :param nugget_index: the nugget's ``index`` within the topic.
    :param assignment: ``support``, ``partial_support`` or ``not_support``.
    """

    qid: str
    nugget_index: int
    assignment: str

    def __post_init__(self):
        if self.assignment not in ASSIGNMENTS:
            raise InvalidInput(f"assignment must be one of {ASSIGNMENTS}, got {self.assignment!r}")

    @property
    def nugget_id(self) -> str:
        return ids.nugget_id(self.qid, self.nugget_index)

    @property
    def score(self) -> float:
        return ids.ASSIGNMENT_TO_SCORE[self.assignment]


@dataclass(frozen=True)
class Sentence:
    """One answer sentence.

    :param text: the sentence's text.
    :param citations: 0-based indices into the answer's ``references`` (none: an uncited sentence).
    """

    text: str
    citations: tuple[int, ...] = ()


@dataclass(frozen=True)
class Answer:
    """A RAG answer as the TREC RAG 2024/2025 tracks define it ([autonuggetizer §2]): cited sentences + references.

    :param qid: the topic id.
    :param run_id: the system (run tag) that wrote the answer.
    :param sentences: the answer's sentences (:class:`Sentence`), in order.
    :param references: the cited segment or document ids; a sentence's citations index into them.
    :param query: the topic's text, when the source format carries it.
    :param metadata: fields of the source format we do not interpret (e.g. 2025 ``team_id``, ``type``), so
        writing back loses nothing; not compared.
    """

    qid: str
    run_id: str
    sentences: tuple[Sentence, ...]
    references: tuple[str, ...] = ()
    query: str | None = None
    metadata: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        for j, sentence in enumerate(self.sentences):
            for c in sentence.citations:
                if not (0 <= c < len(self.references)):
                    raise InvalidInput(
                        f"sentence {j} cites reference {c}, but the answer has {len(self.references)} references")

    @property
    def text(self) -> str:
        """The answer as one string (sentences joined by a space), the ``qanswer`` column."""
        return " ".join(s.text.strip() for s in self.sentences if s.text.strip())

    def cited_docnos(self, j: int) -> list[str]:
        return [self.references[c] for c in self.sentences[j].citations]


@dataclass(frozen=True)
class SupportJudgment:
    """Support of one answer sentence by one cited segment or document ([support24 §3.2]).

    A sentence without citation counts as no support ([support24 §3.4]). ``unjudged`` is label -1 of the TREC RAG
    2026 toolkit (the judgment is missing or failed): the support measures leave such a sentence out of their
    denominators, as the toolkit does.

    :param qid: the topic id.
    :param sentence: the 0-based position of the sentence in the answer.
    :param citation: the position of the citation within the sentence (0 = first), or ``None`` for a sentence
        without citation.
    :param docno: the cited segment or document id (``None`` for an uncited sentence).
    :param support: ``full``, ``partial``, ``none`` or ``unjudged``; an uncited sentence is ``none``.
    :param run_id: the run of the judged answer, when known (not compared).
    """

    qid: str
    sentence: int
    citation: int | None
    docno: str | None
    support: str
    run_id: str | None = field(default=None, compare=False)  # the run of the judged answer, when known

    def __post_init__(self):
        if self.sentence < 0 or (self.citation is not None and self.citation < 0):
            raise InvalidInput("sentence and citation positions are 0-based, never negative")
        if self.citation is not None and not self.docno:
            raise InvalidInput("a judged citation needs the docno of the cited segment")
        if self.support not in JUDGMENT_LABELS:
            raise InvalidInput(f"support must be one of {JUDGMENT_LABELS}, got {self.support!r}")
        if self.citation is None and self.support != ids.NONE:
            raise InvalidInput("a sentence without citation can only have support 'none'")

    @property
    def score(self) -> float:
        """1 / 0.5 / 0, or -1 for an unjudged citation (the value of its evaluation-run row)."""
        return ids.UNJUDGED_SCORE if self.support == ids.UNJUDGED else ids.SUPPORT_LEVEL_TO_SCORE[self.support]


@dataclass(frozen=True)
class SupportRelation:
    """The relation of one answer sentence to one cited document on the TREC 2024 BioGen scale
    ([nugget-annotation §3.3]). An uncited sentence has no relation.

    :param qid: the topic id.
    :param sentence: the 0-based position of the sentence in the answer.
    :param citation: the position of the citation within the sentence (0 = first).
    :param docno: the cited document id.
    :param relation: ``supports``, ``contradicts``, ``neutral`` or ``not_relevant``.
    :param run_id: the run of the judged answer, when known (not compared).
    """

    qid: str
    sentence: int
    citation: int
    docno: str
    relation: str
    run_id: str | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.sentence < 0 or self.citation < 0:
            raise InvalidInput("sentence and citation positions are 0-based, never negative")
        if not self.docno:
            raise InvalidInput("a relation needs the docno of the cited segment")
        if self.relation not in BIOGEN_RELATIONS:
            raise InvalidInput(f"relation must be one of {BIOGEN_RELATIONS}, got {self.relation!r}")




VERDICTS = tuple(ids.VERDICT_TO_SCORE)  # satisfied, partially_satisfied, not_satisfied


@dataclass(frozen=True)
class RubricVerdict:
    """The verdict on one rubric criterion for one answer (TREC RAG 2026).

    :param qid: the topic id.
    :param index: the criterion's index in the topic's rubric.
    :param verdict: ``satisfied``, ``partially_satisfied`` or ``not_satisfied``.
    :param run_id: the run of the judged answer, when known.
    """

    qid: str
    index: int
    verdict: str
    run_id: str | None = None

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise InvalidInput(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def criterion_id(self) -> str:
        return ids.rubric_id(self.qid, self.index)

    @property
    def score(self) -> float:
        return ids.VERDICT_TO_SCORE[self.verdict]


@dataclass(frozen=True)
class LabelledAnswer:
    """The label a step that judges whole answers gave one answer (e.g. ``conciseness``: ``yes`` / ``no``), and its
    value in the evaluation run (a yes/no judge: 1 / 0), read by the measure ``AnswerLabel(step=...)``.

    :param qid: the topic id.
    :param step: the step's name (``ir_measures_ext.ids.check_step_name``).
    :param label: the label, as the step names it.
    :param value: its value (a finite number).
    :param run_id: the run of the judged answer, when known.
    """

    qid: str
    step: str
    label: str
    value: float
    run_id: str | None = None

    def __post_init__(self):
        ids.check_step_name(self.step)
        if not isinstance(self.value, (int, float)) or isinstance(self.value, bool) or not math.isfinite(self.value):
            raise InvalidInput(f"topic {self.qid}, step {self.step}: the value of label {self.label!r} must be a finite "
                               f"number, got {self.value!r}")

    @property
    def row_id(self) -> str:
        return ids.label_id(self.qid, self.step)


SPAN_EXACT = "exact"  # the extracted nugget is a span of the text, character for character
SPAN_NORMALISED = "normalised"  # a span once whitespace runs are collapsed and case is ignored
SPAN_NONE = "none"  # not a span of the text (the extraction prompt asks for spans: [cone-rag Table 3])
SPAN_MATCHES = (SPAN_EXACT, SPAN_NORMALISED, SPAN_NONE)


@dataclass(frozen=True)
class ExtractedNugget:
    """One nugget n_p extracted from a text (a response or a passage; [cone-rag §4.1 eq. 1]).

    :param qid: the topic (turn) id.
    :param index: its 0-based position in the extractor's output.
    :param text: the nugget's text.
    :param span: how it was found in the text: ``exact``, ``normalised`` or ``none`` (not a span).
    :param start: the character offset of the span in the text (``text[start:end]``); ``None`` when ``span`` is
        ``"none"``.
    :param end: the character offset after the span; ``None`` when ``span`` is ``"none"``.
    """

    qid: str
    index: int
    text: str
    span: str
    start: int | None = None
    end: int | None = None

    def __post_init__(self):
        if self.span not in SPAN_MATCHES:
            raise InvalidInput(f"span must be one of {SPAN_MATCHES}, got {self.span!r}")
        if (self.span == SPAN_NONE) != (self.start is None or self.end is None):
            raise InvalidInput(f"nugget {self.index} of {self.qid}: offsets are given exactly when the nugget is a span")
        if self.start is not None and not 0 <= self.start <= self.end:
            raise InvalidInput(f"nugget {self.index} of {self.qid}: bad offsets {self.start}..{self.end}")


@dataclass(frozen=True)
class Battle:
    """One pairwise battle of the TREC RAG 2026 arena (docs/arena.md): systems ``pair`` answered topic ``qid``;
    the judge saw ``assistant_a``'s answer in position A and ``assistant_b``'s in B and gave ``verdict`` (``A``,
    ``B`` or ``Tie``, in those positions; None: the judgment failed, ``error`` says why, ``raw`` has the
    replies). Judged in both orders, ``verdicts`` holds the two replies (the second with the answers exchanged,
    in the positions the judge saw then) and ``verdict`` their combination (a disagreement is a tie,
    :func:`ir_measures_ext.scoring.both_orders_verdict`); ``orders_agree`` says whether they agreed.
    ``judge`` names who judged (a model, a baseline, a person); ``extra`` keeps fields of the source file that
    are not interpreted."""

    qid: str
    pair: tuple[str, str]
    assistant_a: str
    assistant_b: str
    verdict: str | None
    judge: str = ""
    verdicts: tuple[str, ...] = ()
    error: str | None = None
    raw: tuple[str, ...] = ()
    query: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if self.assistant_a == self.assistant_b:
            raise InvalidInput(f"topic {self.qid}: a battle needs two different systems, got {self.assistant_a!r} twice")
        if set(self.pair) != {self.assistant_a, self.assistant_b} or len(self.pair) != 2:
            raise InvalidInput(f"topic {self.qid}: the pair {list(self.pair)} is not the two systems shown "
                               f"({self.assistant_a!r} in A, {self.assistant_b!r} in B)")
        if self.verdict is not None and self.verdict not in ids.BATTLE_VERDICTS:
            raise InvalidInput(f"a battle verdict is one of {ids.BATTLE_VERDICTS}, got {self.verdict!r}")
        for v in self.verdicts:
            if v not in ids.BATTLE_VERDICTS:
                raise InvalidInput(f"a battle verdict is one of {ids.BATTLE_VERDICTS}, got {v!r}")

    @property
    def ok(self) -> bool:
        return self.verdict is not None

    @property
    def key(self) -> tuple[str, str, str]:
        """The battle's identity: topic and the two systems in sorted order (the order shown does not matter)."""
        first, second = sorted(self.pair)
        return self.qid, first, second

    @property
    def winner(self) -> str | None:
        """The system whose answer won, None for a tie (or a failed battle)."""
        return {ids.BATTLE_A: self.assistant_a, ids.BATTLE_B: self.assistant_b}.get(self.verdict or "")

    @property
    def orders_agree(self) -> bool | None:
        """Judged in both orders: whether the two orders named the same winner (or both a tie); else None."""
        if len(self.verdicts) != 2:
            return None
        return both_orders_verdict(*self.verdicts)[1]
