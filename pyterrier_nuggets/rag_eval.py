"""One ``pt.Experiment`` for retrieval-augmented generation: nDCG on the retrieved segments next to the
nugget scores (seed 001 §3.5), support precision/recall (seed 004 §3.4) and the length of the answers.

How it fits in one experiment:

- :class:`RAGEvaluation` is the last stage of each pipeline, ``retriever >> RAGEvaluation(CitedGenerator(llm),
  nuggets, llm)``. It generates the answer from the retrieved segments and returns the retrieved segment
  rows unchanged, followed by the rows of the answer's *evaluation run* (design.md decision 1; ids in
  :mod:`ir_measures_ext.ids`): one per nugget (``{qid}:n{i}``, scored by ``NuggetAssigner``), one per
  judged citation or uncited sentence (``{qid}:s{j}:c{k}:{docno}`` / ``{qid}:s{j}:uncited``, by
  ``SupportJudge``) and the length row ``{qid}:words``. Evaluation ids start with ``{qid}:``; a segment
  docno of that form is refused, so the two kinds of rows never collide. Column ``eval_row`` says which
  kind a row is and every row carries the topic's ``qanswer``.
- The qrels are the segment qrels and the nugget qrels concatenated (:func:`rag_qrels`).
- The nugget, support and length measures (``V_strict``, ``A_strict``, ``SupportP``, ``SupportR``,
  ``AnswerWords``...) read only evaluation rows and nugget qrels, as they always do.
- Retrieval measures must not see the evaluation rows or the nugget qrels: a nugget id is relevant in the
  combined qrels (grade 2 or 1), which would inflate the ideal DCG, and evaluation rows could outrank the
  segments. :func:`Segments` wraps any ir_measures measure so that it is computed on the segment rows
  and segment qrels only: ``Segments(nDCG@10)`` equals ``nDCG@10`` of the retriever alone.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ir_measures
import pandas as pd
import pyterrier as pt

import ir_measures_ext
from ir_measures_ext import ids
from pyterrier_nuggets.formats import NuggetSet, frame_to_answers, frame_to_nuggets, support_rows, words_rows
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.nuggetize import NuggetAssigner, nugget_qrels_frame
from pyterrier_nuggets.support import SupportJudge, frame_to_judgments

RAG_MEASURES = (ir_measures_ext.V_strict, ir_measures_ext.A_strict, ir_measures_ext.SupportP,
                ir_measures_ext.SupportR, ir_measures_ext.AnswerWords)
SEGMENT = "segment"


def _is_segment(qids: Sequence, docnos: Sequence) -> list[bool]:
    return [ids.parse_row_id(str(q), str(d)).kind == "other" for q, d in zip(qids, docnos)]


def Segments(measure) -> ir_measures.Measure:  # noqa: N802 - named like a measure
    """``measure`` (an ir_measures measure or its name, e.g. ``"nDCG@10"``) computed on the retrieved
    segments only: evaluation rows are removed from the run, and nugget ids from the qrels, before the
    measure's own provider (e.g. pytrec_eval) sees them. Topics of the qrels without segment qrels get
    the measure's default (0), as ir_measures gives any topic missing from a run."""
    inner = ir_measures.parse_measure(measure) if isinstance(measure, str) else measure

    def impl(qrels: pd.DataFrame, run: pd.DataFrame):
        qrels = qrels[_is_segment(qrels["query_id"], qrels["doc_id"])]
        run = run[_is_segment(run["query_id"], run["doc_id"])]
        for metric in ir_measures.iter_calc([inner], qrels, run):
            yield metric.query_id, metric.value

    return ir_measures.define(impl, name=f"Segments({inner})", support_cutoff=False,
                              short_desc=f"{inner} on the retrieved segments (evaluation rows and nugget ids removed)")


def rag_qrels(segment_qrels: pd.DataFrame, nuggets: Any) -> pd.DataFrame:
    """Segment qrels (``qid, docno, label``) followed by the nugget qrels of ``nuggets`` (a nugget frame with
    importance, a NuggetSet or a list of Nugget), as one PyTerrier qrels frame for ``pt.Experiment``."""
    nugget_qrels = nugget_qrels_frame(_nugget_frame(nuggets))
    segments = segment_qrels[["qid", "docno", "label"]].astype({"qid": str, "docno": str})
    clash = [d for d, ok in zip(segments["docno"], _is_segment(segments["qid"], segments["docno"])) if not ok]
    if clash:
        raise ValueError(f"segment qrels contain evaluation-run ids, e.g. {clash[0]!r}; segment docnos must not "
                         "have the form '{qid}:n{i}', '{qid}:s{j}:...' or '{qid}:words'")
    return pd.concat([segments, nugget_qrels], ignore_index=True)


def _nugget_frame(nuggets: Any) -> pd.DataFrame:
    if isinstance(nuggets, pd.DataFrame):
        return nuggets
    from pyterrier_nuggets.formats import nuggets_to_frame
    return nuggets_to_frame(nuggets if isinstance(nuggets, NuggetSet) else NuggetSet(list(nuggets)))


class RAGEvaluation(pt.Transformer):
    """Retrieved segments -> the same segment rows plus the evaluation-run rows of the generated answer.

    ``generator`` makes the answers (a :class:`~pyterrier_nuggets.generate.CitedGenerator` or any
    transformer with its output columns). ``nuggets`` (nugget frame with importance, NuggetSet or Nugget
    list; ``None`` for support and length only) are assigned by ``assigner`` (default
    ``NuggetAssigner(nuggets, llm)``); citations are judged by ``support`` (default ``SupportJudge(llm)``,
    segment texts from the generator's ``reference_texts``). Their failure policies apply unchanged: by
    default any failed LLM step raises, so no score is computed from missing judgments.

    Output columns: the input's, plus ``eval_row`` (``segment``, ``nugget``, ``support``, ``uncited``,
    ``words``) and ``qanswer``. Evaluation rows come after the topic's segments, ranked after them.
    Score with :func:`rag_qrels` and ``[Segments(nDCG@10), *RAG_MEASURES]``.
    """

    def __init__(self, generator: pt.Transformer, nuggets: Any = None, llm: LLMClient | None = None, *,
                 assigner: pt.Transformer | None = None, support: pt.Transformer | None = None):
        self.generator = generator
        self.nuggets = nuggets
        self.llm = llm
        if assigner is None and nuggets is not None:
            assigner = NuggetAssigner(frame_to_nuggets(nuggets) if isinstance(nuggets, pd.DataFrame) else nuggets, llm)
        self.assigner = assigner
        self.support = support if support is not None else SupportJudge(llm)

    def __repr__(self) -> str:
        return f"RAGEvaluation({self.generator!r}, assigner={self.assigner!r}, support={self.support!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query", "docno"], context=self)
        columns = list(inp.columns) + [c for c in ("score", "rank", "eval_row", "qanswer") if c not in inp.columns]
        if inp.empty:
            return pd.DataFrame(columns=columns)
        segments = inp.reset_index(drop=True).astype({"qid": str, "docno": str})
        ok = _is_segment(segments["qid"], segments["docno"])
        if not all(ok):
            bad = segments["docno"][[not x for x in ok]].iloc[0]
            raise ValueError(f"retrieved docno {bad!r} has the form of an evaluation-run id; it would be scored as "
                             "one. Rename such segments before evaluation.")
        answers = self.generator(segments)
        rows: list[tuple[str, str, float, str]] = []
        if self.assigner is not None:
            assigned = self.assigner(answers)
            rows += [(str(q), str(d), float(s), "nugget") for q, d, s in
                     zip(assigned["qid"], assigned["docno"], assigned["score"])]
        judgments = frame_to_judgments(self.support(answers))
        rows += [(q, d, s, "support" if ":c" in d[len(q):] else "uncited") for q, d, s in support_rows(judgments)]
        rows += [(q, d, s, "words") for q, d, s in words_rows(frame_to_answers(answers))]
        evaluation = pd.DataFrame(rows, columns=["qid", "docno", "score", "eval_row"])
        queries = dict(zip(segments["qid"], segments["query"]))
        qanswers = dict(zip(answers["qid"].astype(str), answers["qanswer"]))
        evaluation["query"] = evaluation["qid"].map(queries)
        if "rank" not in segments.columns:  # input order is the ranking
            segments["rank"] = segments.groupby("qid").cumcount()
        if "score" not in segments.columns:
            segments["score"] = -segments["rank"].astype(float)
        last_rank = segments.groupby("qid")["rank"].max()
        evaluation["rank"] = evaluation["qid"].map(last_rank) + 1 + evaluation.groupby("qid").cumcount()
        segments = segments.assign(eval_row=SEGMENT)
        out = pd.concat([segments, evaluation], ignore_index=True)
        out["qanswer"] = out["qid"].map(qanswers).fillna("")
        order = {q: i for i, q in enumerate(dict.fromkeys(segments["qid"]))}
        out = out.assign(_topic=out["qid"].map(order), _eval=out["eval_row"] != SEGMENT)
        out = out.sort_values(["_topic", "_eval"], kind="stable").drop(columns=["_topic", "_eval"])
        return out[columns].reset_index(drop=True)
