"""The measures, as ir_measures declares them: name, parameters, formula and source. Computing is the
providers' job (:mod:`ir_measures_ext.providers`); formulas are in :mod:`ir_measures_ext.scoring`.

Inputs (decisions.md, decision 1; row ids in :mod:`ir_measures_ext.ids`):
- qrels: nugget qrels ``qid 0 {qid}:n{i} REL`` (2 vital, 1 okay); they define the topics and their nuggets;
  sub-narrative rows ``qid 0 {qid}:n{i}:sn{k} 1`` map nuggets to the narrative's sub-narratives (TREC RAG 2025).
- qrels of rubric scoring: ``qid 0 {qid}:r{i} WEIGHT`` and tier rows ``{qid}:r{i}:mandatory|optional``.
- run: an evaluation run; the labels of whole answers ``{qid}:label:{step}``; rubric verdict rows ``{qid}:r{i}`` (1 / 0.5 / 0); CONE-RAG rows ``{qid}:ntr:n{i}``, ``{qid}:ntn:n{i}``, ``{qid}:ntn:x{j}`` (1 / 0); nugget rows ``{qid}:n{i}`` scored 1 / 0.5 / 0, support rows
  ``{qid}:s{j}:c{k}:{docno}`` scored 1 / 0.5 / 0, ``{qid}:s{j}:uncited`` rows, and a ``{qid}:words`` row
  (or a ``qanswer`` column when the run is a DataFrame, as in pt.Experiment).

Which topics a run's mean averages over is each measure's ``FAMILY`` (decisions.md, decision 13): nugget
measures over the topics with nuggets, rubric measures over the topics with a rubric, citation support and
answer length over the topics the run answered. A topic of the family's qrels that the run did not answer scores
0 there (an empty answer, trec_eval's rule); support and length have no qrels of their own, so a topic the run
did not answer counts nowhere (the TREC RAG 2026 toolkit's (topic, run) cells). A value ir_measures gives a topic
outside the family (NaN, the measures' ``DEFAULT``) is left out of the mean (:class:`DefinedMean`).
(pt.Experiment averages every measure over every topic of its per-topic table with its own mean: where measures of
several families cover different topics, its averages show NaN rather than a mean over other topics.)
"""
from __future__ import annotations

import math

from ir_measures import measures
from ir_measures.measures.base import Agg

from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.ids import check_step_name

_CITE = measures.ParamInfo(dtype=str, choices=("first", "all_judged", "all_pairs"), default="first",
                           desc="which citations of a sentence count: 'first' (TREC 2024, the 2026 toolkit's "
                           "*_first_citation), 'all_judged' (the mean over its judged citations, the toolkit's "
                           "*_all_judged_citations) or 'all_pairs' (every judged pair; recall: best citation)")
_CREDIT = measures.ParamInfo(dtype=str, choices=("weighted", "hard"), default="weighted",
                             desc="what a citation is worth: 'weighted' (full 1, partial 0.5) or 'hard' (full "
                             "support only; first citation, the toolkit's hard_precision / hard_recall)")
_REPEATS = measures.ParamInfo(dtype=str, choices=("forgive", "penalize"), default="forgive",
                              desc="an uncited sentence repeating nuggets a valid sentence conveyed before: "
                                   "'forgive' (ignored, [nugget-annotation §3.4]) or 'penalize' (hallucinated, Table 1 as printed)")


# the topics a measure's run mean averages over (decisions.md, decision 13), by family; in the tables' notes
NUGGET_TOPICS = "nuggets"  # the topics of the nugget qrels with at least one nugget
RUBRIC_TOPICS = "rubrics"  # the topics of the rubric qrels
ANSWERED_TOPICS = "answered"  # the topics the run answered (an evaluation row or a qanswer)
SEGMENT_TOPICS = "segments"  # the topics of the segment qrels
# what the topics of each family are, after their count in a note: "22 topics with nuggets", "52 topics answered"
FAMILY_TOPICS = {NUGGET_TOPICS: "with nuggets", RUBRIC_TOPICS: "with a rubric", ANSWERED_TOPICS: "answered",
                 SEGMENT_TOPICS: "with segment qrels"}


class DefinedMean(Agg):
    """The mean of a measure over the topics where it is defined: a NaN value (a topic outside the measure's
    family, e.g. where measures of several families are computed together) is left out; NaN when no topic has a
    value."""

    def __init__(self):
        self.sum = 0.0
        self.count = 0

    def add(self, value: float) -> None:
        if not math.isnan(value):
            self.sum += value
            self.count += 1

    def result(self) -> float:
        return self.sum / self.count if self.count else math.nan


class _Measure(measures.Measure):
    """A measure whose hash is computed once, whose parameters are checked where they are given and show
    in declaration order (so that ``SupportP(credit='hard', cite='first')`` and
    ``SupportP(cite='first', credit='hard')`` are one measure). Its run mean averages over the topics of its
    ``FAMILY``; a topic outside it is NaN (``DEFAULT``) and left out of the mean (:class:`DefinedMean`)."""

    DEFAULT = math.nan
    FAMILY = NUGGET_TOPICS

    def aggregator(self) -> Agg:
        return DefinedMean()

    def __call__(self, **kwargs):
        # ir_measures checks parameters only when a measure is computed, with an AssertionError: refuse them here,
        # so that parse_measure("V_strict@10") fails in one line (as parse_measure("Vstrict") does)
        for name, value in kwargs.items():
            info = self.SUPPORTED_PARAMS.get(name)
            if info is None:
                what = "cutoff (@k): it scores a whole answer, not a ranked list" if name == self.AT_PARAM \
                    else f"parameter {name!r}"
                takes = ", ".join(self.SUPPORTED_PARAMS) or "none"
                raise InvalidInput(f"{self.NAME} takes no {what} (its parameters: {takes})")
            if not info.validate(value):
                raise InvalidInput(f"{self.NAME}({name}={value!r}): not a valid value"
                                   + (f"; choose one of {', '.join(map(repr, info.choices))}" if info.choices else ""))
        return super().__call__(**kwargs)

    def __repr__(self):
        order = list(self.SUPPORTED_PARAMS)
        ordered = sorted(self.params.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
        if list(self.params.items()) != ordered:
            return type(self)(**dict(ordered)).__repr__()
        return super().__repr__()

    def __hash__(self):
        # ir_measures hashes a measure by its repr for every per-topic value it handles; the parameters of a
        # measure object never change, so the hash is computed once (a 3x faster evaluation of many runs)
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = self.__dict__["_hash"] = hash(repr(self))
        return cached


def family(measure) -> str | None:
    """The family of topics ``measure``'s run mean averages over (a key of :data:`FAMILY_TOPICS`), None for a
    measure of another package."""
    return measure.FAMILY if isinstance(measure, _Measure) else None


class _NuggetMeasure(_Measure):
    SUPPORTED_PARAMS: dict = {}


class _V_strict(_NuggetMeasure):
    """Vital Strict: fraction of vital nuggets the answer supports fully ([autonuggetizer §3.5], primary metric).

    V_strict = sum_i ss^v_i / |n^v|, ss = 1 for support, else 0. 0 when the topic has no vital nugget.
    """

    __name__ = "V_strict"
    NAME = "V_strict"
    PRETTY_NAME = "Vital strict nugget score"
    SHORT_DESC = "Fraction of vital nuggets fully supported by the answer (TREC RAG 2024)."


class _V(_NuggetMeasure):
    """Vital: V = sum_i s^v_i / |n^v|, s = 1 support, 0.5 partial_support, 0 otherwise ([autonuggetizer §3.5])."""

    __name__ = "V"
    NAME = "V"
    PRETTY_NAME = "Vital nugget score"
    SHORT_DESC = "Mean score of vital nuggets, partial support = 0.5 (TREC RAG 2024)."


class _W_strict(_NuggetMeasure):
    """Weighted Strict: (sum ss^v + 0.5 sum ss^o) / (|n^v| + 0.5 |n^o|) ([autonuggetizer §3.5])."""

    __name__ = "W_strict"
    NAME = "W_strict"
    PRETTY_NAME = "Weighted strict nugget score"
    SHORT_DESC = "Full support only, vital nuggets weigh 1 and okay nuggets 0.5 (TREC RAG 2024)."


class _W(_NuggetMeasure):
    """Weighted: (sum s^v + 0.5 sum s^o) / (|n^v| + 0.5 |n^o|) ([autonuggetizer §3.5])."""

    __name__ = "W"
    NAME = "W"
    PRETTY_NAME = "Weighted nugget score"
    SHORT_DESC = "Partial support = 0.5, vital nuggets weigh 1 and okay nuggets 0.5 (TREC RAG 2024)."


class _A_strict(_NuggetMeasure):
    """All Strict: A_strict = sum_i ss_i / N over all nuggets ([autonuggetizer §3.5])."""

    __name__ = "A_strict"
    NAME = "A_strict"
    PRETTY_NAME = "All strict nugget score"
    SHORT_DESC = "Fraction of all nuggets fully supported by the answer (TREC RAG 2024)."


class _A(_NuggetMeasure):
    """All: A = sum_i s_i / N over all nuggets, partial_support = 0.5 ([autonuggetizer §3.5])."""

    __name__ = "A"
    NAME = "A"
    PRETTY_NAME = "All nugget score"
    SHORT_DESC = "Mean score of all nuggets, partial support = 0.5 (TREC RAG 2024)."


class _SubNarrativeCoverage(_NuggetMeasure):
    """Sub-narrative coverage (TREC RAG 2025): the share of the topic's sub-narratives with at least one supported
    vital nugget. ``credit='strict'`` (default): a sub-narrative counts when one of its vital nuggets is fully
    supported; ``credit='partial'``: it counts 0.5 when its best vital nugget is partially supported. Reads the
    nugget qrels' sub-narrative rows ``qid 0 {qid}:n{i}:sn{k} 1`` (nugget i belongs to sub-narrative k; written
    from the nuggets' ``mapped_sub_narrative``) and the assignment rows ``{qid}:n{i}``. Sub-narratives whose
    nuggets are all okay count in the denominator (they cannot be covered). Qrels without sub-narrative rows are
    an error, not 0."""

    __name__ = "SubNarrativeCoverage"
    NAME = "SubNarrativeCoverage"
    SUPPORTED_PARAMS = {"credit": measures.ParamInfo(
        dtype=str, choices=("strict", "partial"), default="strict",
        desc="'strict': a fully supported vital nugget covers its sub-narrative; 'partial': a partially supported "
             "one covers it half")}
    PRETTY_NAME = "Sub-narrative coverage"
    SHORT_DESC = "Share of the narrative's sub-narratives with a supported vital nugget (TREC RAG 2025)."


class _SupportFamily(_NuggetMeasure):
    """Shared parameters of SupportP and SupportR (``cite``, ``credit``), checked on construction. Defined on the
    topics the run answered."""

    SUPPORTED_PARAMS = {"cite": _CITE, "credit": _CREDIT}
    FAMILY = ANSWERED_TOPICS

    def __call__(self, **params):
        if params.get("cite") == "all":
            raise InvalidInput(f"{self.NAME}(cite='all') was ambiguous and is gone: cite='all_judged' is the TREC RAG "
                             "2026 toolkit's mean over each sentence's judged citations, cite='all_pairs' counts "
                             "every judged (sentence, citation) pair (the earlier cite='all')")
        out = super().__call__(**params)
        if out["credit"] == "hard" and out["cite"] != "first":
            raise InvalidInput(f"{self.NAME}(credit='hard') is defined on the first citation (the toolkit's "
                             f"hard_precision / hard_recall); cite={out['cite']!r} has no hard variant")
        return out


class _SupportP(_SupportFamily):
    """Support precision over cited sentences ([support24 §3.4]; the TREC RAG 2026 toolkit's variants).

    Sum over the sentences with a counted citation of its value / number of such sentences; uncited sentences do
    not count. ``cite='first'`` (default; TREC 2024, the toolkit's ``weighted_precision_first_citation``): each
    sentence's first citation, s = 1 full, 0.5 partial, 0 none. ``cite='all_judged'``
    (``weighted_precision_all_judged_citations``): the mean of s over the sentence's judged citations.
    ``credit='hard'`` (``hard_precision``): full support only, first citation. ``cite='all_pairs'``: every
    judged (sentence, citation) pair. A citation scored -1 (unjudged: missing or failed) takes its sentence out
    of the denominators as the toolkit does (:func:`ir_measures_ext.scoring.support_scores`). 0 when the
    answer has no citation."""

    __name__ = "SupportP"
    NAME = "SupportP"
    PRETTY_NAME = "Support precision"
    SHORT_DESC = "Support of the cited sentences by their citations (TREC RAG 2024 / 2026 support)."


class _SupportR(_SupportFamily):
    """Support recall over all sentences ([support24 §3.4]; the TREC RAG 2026 toolkit's variants): the sum of
    :class:`_SupportP` / number of sentences; an uncited sentence counts 0, a sentence whose counted citations
    are all unjudged (-1) leaves the denominator. ``cite='all_pairs'``: the best citation of each sentence.
    Parameters as SupportP (``weighted_recall_first_citation``, ``weighted_recall_all_judged_citations``,
    ``hard_recall``)."""

    __name__ = "SupportR"
    NAME = "SupportR"
    PRETTY_NAME = "Support recall"
    SHORT_DESC = "Share of the answer's sentences supported by their citations (TREC RAG 2024 / 2026 support)."


class _AnswerWords(_NuggetMeasure):
    """Answer length L: words of the answer after NFKC normalisation, split on whitespace, as the TREC RAG
    validator counts (the x-axis of [autonuggetizer Figure 7]). Mean over the answered topics when aggregated."""

    FAMILY = ANSWERED_TOPICS
    __name__ = "AnswerWords"
    NAME = "AnswerWords"
    PRETTY_NAME = "Answer length (words)"
    SHORT_DESC = "Words in the answer (NFKC, whitespace split), as the TREC RAG validator counts."


class _AnswerLabel(_NuggetMeasure):
    """The label a step that judges whole answers gave each answer, as a number: a yes/no judge's 1 (yes) or 0 (no),
    so that its run mean is the share of answers judged yes. ``step`` names the step (e.g. ``'conciseness'``); the
    measure reads the ``{qid}:label:{step}`` rows of the evaluation run (:func:`ir_measures_ext.ids.label_id`). One
    measure family for every such step, so that a new step needs no measure of its own and the plain ``ir_measures``
    command line scores it. Mean over the answered topics; a topic the run answered without a row of the step is an
    error (the step did not judge it), never 0."""

    FAMILY = ANSWERED_TOPICS
    __name__ = "AnswerLabel"
    NAME = "AnswerLabel"
    PRETTY_NAME = "Label of the whole answer"
    SHORT_DESC = "The label a step judging whole answers gave the answer (a yes/no judge: 1 yes, 0 no)."
    SUPPORTED_PARAMS = {"step": measures.ParamInfo(
        dtype=str, required=True, desc="the step whose label it reads: its name, as its rows '{qid}:label:{step}' "
                                       "have it, e.g. 'conciseness'")}

    def __call__(self, **params):
        if "step" in params:
            check_step_name(params["step"])
        return super().__call__(**params)

    def validate_params(self):
        if "step" not in self.params:
            raise InvalidInput("AnswerLabel needs the step whose labels it reads, e.g. AnswerLabel(step='conciseness')")
        super().validate_params()


class _ArgueP(_NuggetMeasure):
    """ARGUE sentence precision ([nugget-annotation §3.4 Table 1]): valid / (valid + hallucinated) answer sentences.

    A sentence is valid when it conveys at least one nugget and one of its citations fully supports it;
    hallucinated when it conveys information (a nugget or irrelevant information) that no citation supports
    or that it does not cite; ignored otherwise. ``repeats='forgive'`` (default, [nugget-annotation §3.4]): an uncited
    sentence whose nuggets were all conveyed by an earlier valid sentence is ignored, not hallucinated;
    ``repeats='penalize'``: Table 1 as printed. Needs the sentence content rows ``{qid}:s{j}:n{i}`` /
    ``:irrelevant`` / ``:noinfo`` (stage 4 of the annotation protocol) besides the support rows. 0 when no
    sentence is valid or hallucinated."""

    __name__ = "ArgueP"
    NAME = "ArgueP"
    SUPPORTED_PARAMS = {"repeats": _REPEATS}
    PRETTY_NAME = "ARGUE sentence precision"
    SHORT_DESC = "Valid / (valid + hallucinated) answer sentences (ARGUE, [nugget-annotation Table 1])."


class _ArgueR(_NuggetMeasure):
    """ARGUE nugget recall ([nugget-annotation §3.4 Table 1]): nuggets of the topic conveyed by at least one valid
    sentence / all nuggets of the topic (the nugget qrels; vital and okay count alike)."""

    __name__ = "ArgueR"
    NAME = "ArgueR"
    PRETTY_NAME = "ARGUE nugget recall"
    SHORT_DESC = "Nuggets conveyed by a valid (cited and supported) sentence / all nuggets (ARGUE, [nugget-annotation])."


class _Recall_NtR(_NuggetMeasure):
    """CONE-RAG nugget recall, nugget-to-response matching ([cone-rag §5.3 eq. 6]): gold nuggets of the turn
    that the response covers, NtR(R, n_g) = 1 (eq. 3) / all gold nuggets of the turn (the nugget qrels).

    Reads the ``{qid}:ntr:n{i}`` rows (1 covered, 0 not). A topic with rows but none of this kind is an
    error (the run was made with another matching), not 0."""

    __name__ = "Recall_NtR"
    NAME = "Recall_NtR"
    PRETTY_NAME = "CONE-RAG nugget recall (NtR)"
    SHORT_DESC = "Gold nuggets covered by the response (NtR matching) / gold nuggets (CONE-RAG, iKAT 2024)."


class _Recall_NtN(_NuggetMeasure):
    """CONE-RAG nugget recall, nugget-to-nugget matching ([cone-rag §5.3 eq. 4]): gold nuggets entailed by at
    least one nugget extracted from the response, NtN(n_p, n_g) = 1 (eq. 2) / all gold nuggets of the turn.

    Reads the ``{qid}:ntn:n{i}`` rows (1 entailed, 0 not)."""

    __name__ = "Recall_NtN"
    NAME = "Recall_NtN"
    PRETTY_NAME = "CONE-RAG nugget recall (NtN)"
    SHORT_DESC = "Gold nuggets entailed by some extracted nugget (NtN) / gold nuggets (CONE-RAG, iKAT 2024)."


class _Precision_NtN(_NuggetMeasure):
    """CONE-RAG nugget precision, nugget-to-nugget matching ([cone-rag §5.3 eq. 5]): nuggets extracted from
    the response that entail at least one gold nugget / all extracted nuggets.

    Reads the ``{qid}:ntn:x{j}`` rows (1 entails some gold nugget, 0 not). 0 when no nugget was extracted
    (the ``{qid}:ntn:n{i}`` rows show that the response was matched)."""

    __name__ = "Precision_NtN"
    NAME = "Precision_NtN"
    PRETTY_NAME = "CONE-RAG nugget precision (NtN)"
    SHORT_DESC = "Extracted nuggets that entail some gold nugget (NtN) / extracted nuggets (CONE-RAG, iKAT 2024)."


_GRADING = measures.ParamInfo(dtype=str, choices=("ternary", "binary"), default="ternary",
                              desc="'ternary': satisfied 1, partially satisfied 0.5, not satisfied 0; 'binary': "
                              "partially satisfied counts as not satisfied")


class _RubricMeasure(_NuggetMeasure):
    SUPPORTED_PARAMS = {"grading": _GRADING}
    FAMILY = RUBRIC_TOPICS


class _RubricScore(_RubricMeasure):
    """Rubric score (TREC RAG 2026; ResearchRubrics): Σ w·v / Σ_{w > 0} w over the topic's rubric criteria, w
    the criterion's weight (negative for a criterion that describes a flaw), v its verdict: 1 satisfied, 0.5
    partially satisfied, 0 not satisfied (``grading='ternary'``, default) or 1 / 0 / 0
    (``grading='binary'``). Reads rubric qrels ``qid 0 {qid}:r{i} WEIGHT`` and verdict rows ``{qid}:r{i}``
    scored 1 / 0.5 / 0. At most 1; below 0 when satisfied flaws outweigh the rest. Not defined for a topic without
    a positive weight: such a rubric is refused. A topic of the qrels missing from the run is an empty answer
    (nothing satisfied: 0)."""

    __name__ = "RubricScore"
    NAME = "RubricScore"
    PRETTY_NAME = "Rubric score"
    SHORT_DESC = "Weighted share of the rubric criteria the answer satisfies (TREC RAG 2026)."


class _RubricFailedMandatory(_RubricMeasure):
    """Mandatory rubric criteria the answer fails (TREC RAG 2026): criteria of tier ``mandatory`` (nugget
    rubrics: the vital nuggets) with verdict not satisfied; with ``grading='binary'`` partially satisfied ones
    too. Reads the tier rows ``qid 0 {qid}:r{i}:mandatory 1`` of the rubric qrels: a rubric without tiers
    (ResearchRubrics criteria have weights and axes only) is an error, not 0. A topic missing from the run
    fails all its mandatory criteria. Mean over the topics with a rubric when aggregated."""

    __name__ = "RubricFailedMandatory"
    NAME = "RubricFailedMandatory"
    PRETTY_NAME = "Failed mandatory rubric criteria"
    SHORT_DESC = "Mandatory rubric criteria the answer does not satisfy (TREC RAG 2026)."


class _Segments(_Measure):
    """Any ir_measures measure computed on the retrieved *segments* only (decisions.md, decision 8): the rows
    and qrels of nugget evaluation (ids of :mod:`ir_measures_ext.ids`: ``{qid}:n{i}``, ``{qid}:s{j}:...``,
    ``{qid}:words``) are removed from the run and the qrels before the wrapped measure's own provider (e.g.
    pytrec_eval) sees them. So one run and one qrels file can hold a RAG system's retrieved segments and
    its answer's evaluation rows (as ``RAGEvaluation`` gives them in pt.Experiment) and still give the
    exact retrieval score: ``Segments(measure='nDCG@10')`` equals ``nDCG@10`` of the retrieval run alone.

    Named on the command line as ``"Segments(measure='nDCG@10')"`` (or ``"Segments(measure='nDCG')@10"``);
    in Python ``Segments(nDCG@10)`` or ``Segments("nDCG@10")``. Shown as ``Segments(nDCG@10)``. Its mean
    averages over the topics with segment qrels (a topic with nugget qrels only is not a retrieval topic).
    """

    FAMILY = SEGMENT_TOPICS

    __name__ = "Segments"
    NAME = "Segments"
    PRETTY_NAME = "Measure on the retrieved segments"
    SHORT_DESC = "A retrieval measure computed on the segment rows only (evaluation rows and nugget ids removed)."
    SUPPORTED_PARAMS = {
        "measure": measures.ParamInfo(dtype=str, required=True, desc="the wrapped measure, e.g. 'nDCG@10'"),
        "cutoff": measures.ParamInfo(dtype=int, required=False, desc="cutoff of the wrapped measure"),
    }

    def __call__(self, measure=None, **params):
        if measure is not None:
            params["measure"] = str(measure)
        out = super().__call__(**params)
        out.inner()  # fail now, not at scoring time
        return out

    def inner(self) -> measures.Measure:
        """The wrapped measure (with the cutoff, when one was given as ``Segments(measure='nDCG')@10``)."""
        from ir_measures import parse_measure
        name = self.params.get("measure")
        if not isinstance(name, str):
            raise InvalidInput("Segments needs the measure to wrap, e.g. Segments(measure='nDCG@10')")
        inner = parse_measure(name)
        if inner.NAME == self.NAME:
            raise InvalidInput(f"Segments cannot wrap Segments ({name!r})")
        if self.params.get("cutoff") is not None:
            inner = inner @ self.params["cutoff"]
        return inner

    def __repr__(self):
        if "measure" not in self.params:
            return self.NAME
        return f"{self.NAME}({self.inner()})"


V_strict = _V_strict()
V = _V()
W_strict = _W_strict()
W = _W()
A_strict = _A_strict()
A = _A()
SupportP = _SupportP()
SupportR = _SupportR()
AnswerWords = _AnswerWords()
AnswerLabel = _AnswerLabel()
Segments = _Segments()
ArgueP = _ArgueP()
ArgueR = _ArgueR()
Recall_NtR = _Recall_NtR()
Recall_NtN = _Recall_NtN()
Precision_NtN = _Precision_NtN()
SubNarrativeCoverage = _SubNarrativeCoverage()
RubricScore = _RubricScore()
RubricFailedMandatory = _RubricFailedMandatory()

NUGGET_MEASURES = (V_strict, V, W_strict, W, A_strict, A)
SUPPORT_MEASURES = (SupportP, SupportR)
ALL_MEASURES = NUGGET_MEASURES + SUPPORT_MEASURES + (AnswerWords,)
ARGUE_MEASURES = (ArgueP, ArgueR)  # need sentence content rows: not in ALL_MEASURES (LLM runs have none)
CONE_MEASURES = (Recall_NtR, Recall_NtN, Precision_NtN)  # CONE-RAG ([cone-rag]): need gold nugget rows
RUBRIC_MEASURES = (RubricScore, RubricFailedMandatory)  # TREC RAG 2026: need rubric qrels and verdict rows
SUB_NARRATIVE_MEASURES = (SubNarrativeCoverage,)  # TREC RAG 2025: need sub-narrative rows in the nugget qrels
LABEL_MEASURES = (AnswerLabel,)  # the labels of steps that judge whole answers: need '{qid}:label:{step}' rows
REGISTERED = (ALL_MEASURES + (Segments,) + ARGUE_MEASURES + CONE_MEASURES + RUBRIC_MEASURES
              + SUB_NARRATIVE_MEASURES + LABEL_MEASURES)  # every name this package adds
