"""The iKAT joint table ([cone-rag §5.3-5.4 Tables 9-11 Figure 1]): per system, the passage ranking measures
(nDCG@5 primary, P@20, R@20, R@1000, mAP; averaged over turns with equal weight) next to the CONE-RAG
measures Recall_NtR and, when extracted nuggets are given, Recall_NtN / Precision_NtN, with the paired tests
of :func:`.table.joint_table`; per-turn values with turn depth and personal flag; breakdowns by turn depth
and by personal vs non-personal turns (a turn is personal when its ``ptkb_provenance`` in the topics is
non-empty, [cone-rag Table 10]); the nDCG@5 vs nugget recall scatter ([cone-rag Figure 1]).

Every output names the gold nuggets and the matchers that produced the nugget measures, with each matcher's
measured agreement with people (``Matcher.agreement``: the embedding baseline's κ on the crowd labels of [cone-rag]
§5.2 at its calibrated thresholds, else "not measured"). Turns are checked before scoring: gold nugget turns that
no system answered are refused (or left out, ``unanswered="leave-out"``), and the header says how many turns were
evaluated, which systems miss responses (scored 0 there) and which response turns have no gold nuggets (not
evaluated): nothing scores 0 without a word.

:func:`ptkb_table`: the PTKB statement ranking task (iKAT 2023): per system, nDCG@3, P@3, R@3 and AP of a
per-turn ranking of the user's PTKB statements against the PTKB qrels (``trec-ikat/2023/ptkb``), with the
same paired tests.
"""
from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.evaluation.cone import NuggetToNugget, NuggetToResponse
from pyterrier_nuggets.evaluation.table import JointTable, System, joint_table
from pyterrier_nuggets.formats import (
    Decision,
    NuggetSet,
    TurnMatches,
    as_nugget_set,
    atomic_write,
    counted,
    nugget_qrels,
    shown_label,
    write_all,
    write_ikat_matches,
)
from pyterrier_nuggets.matchers import NTN_THRESHOLD, EmbeddingMatcher, as_matcher

RETRIEVAL = ["nDCG@5", "P@20", "R@20", "R@1000", "AP"]  # [cone-rag §5.4] / Table 11 (AP = mAP over turns)
PTKB = ["nDCG@3", "P@3", "R@3", "AP"]  # PTKB statement ranking: cut-off 3, as the iKAT 2023 task (docs/ikat.md)
NTR = ["Recall_NtR"]
NTN = ["Recall_NtN", "Precision_NtN"]


@dataclass
class IkatSystem:
    """One system: ``responses`` (``qid`` = turn id, ``qanswer``), optionally its passage ``ranking``
    (``qid, docno, score``) and the ``nuggets`` extracted from its responses (``qid``, ``nuggets``: list of
    strings) for NtN."""

    name: str
    responses: pd.DataFrame | None = None
    ranking: pd.DataFrame | None = None
    nuggets: pd.DataFrame | None = None


@dataclass
class IkatTable:
    table: JointTable
    per_turn: pd.DataFrame
    breakdowns: pd.DataFrame
    labels: dict[str, str] = field(default_factory=dict)
    prefix: str = "ikat"
    notes: list[str] = field(default_factory=list)
    matches: list[TurnMatches] = field(default_factory=list)  # the decisions behind the nugget measures

    def header(self) -> str:
        """The labels (nuggets, matchers and their agreement with people), then the notes, one a line."""
        return "\n".join(["; ".join(f"{k}: {shown_label(v)}" for k, v in self.labels.items()), *self.notes])

    def __str__(self) -> str:
        return self.header() + "\n" + self.table.to_text()

    def write(self, out_dir: str, plot: bool = True, extra: Mapping[str, Callable[[str], object]] | None = None
              ) -> list[str]:
        """``PREFIX.csv``, ``.md``, ``.tex``, ``.perquery.csv``, ``.perturn.csv``, ``.breakdowns.csv`` and (when
        there are nDCG@5 and a nugget recall) the scatter plot ``PREFIX.scatter.png``, ``.pdf``, ``.svg``
        (:func:`~pyterrier_nuggets.evaluation.plots.joint_figure`) in ``out_dir`` (:func:`output_paths`), with the
        ``extra`` writers (path -> writer of a temporary path), all or none."""
        os.makedirs(out_dir, exist_ok=True)
        return write_all({**self.writers(out_dir, plot), **(extra or {})})

    def writers(self, out_dir: str, plot: bool = True) -> dict[str, Callable[[str], object]]:
        """The writers of :meth:`write` (path in ``out_dir`` -> writer of a temporary path), for a caller that writes
        them with others."""
        paths = output_paths(out_dir, self.prefix)
        t = self.table
        note = "".join(f"% {line}\n" for line in self.header().split("\n"))
        labelled = replace(t, provenance={**t.provenance, **self.labels})  # the CSV carries who made it, as a column each
        texts = {".csv": labelled.to_csv(), ".md": self.header() + "\n\n" + t.to_markdown(),
                 ".tex": note + t.to_latex(self.prefix),
                 ".perquery.csv": t.per_query.to_csv(index=False), ".perturn.csv": self.per_turn.to_csv(index=False),
                 ".breakdowns.csv": self.breakdowns.to_csv(index=False)}

        def text_writer(text: str):
            def write(path: str) -> None:
                with atomic_write(path) as f:
                    f.write(text)
            return write
        writers = {paths[s]: text_writer(x) for s, x in texts.items()}
        if self.matches:
            writers[paths[".matches.jsonl"]] = lambda path: write_ikat_matches(path, self.matches)
        recall = next((m for m in ("Recall_NtN", "Recall_NtR") if m in t.means.columns), None)
        if plot and "nDCG@5" in t.means.columns and recall and len(t.means) > 1:  # no plot of a single system
            from pyterrier_nuggets.evaluation.plots import figure_writers, joint_figure
            turns = t.per_query["qid"].nunique()
            matcher = self.labels.get(f"{recall[-3:]} matcher", self.labels.get("matcher", "not named"))
            title = f"iKAT: {counted(len(t.means), 'system')} (means), {counted(turns, 'turn')}\nmatcher: {matcher}"
            writers.update(figure_writers(lambda: joint_figure(t, "nDCG@5", recall, title=title),
                                          paths[".scatter.png"]))
        return writers


OUTPUT_SUFFIXES = (".csv", ".md", ".tex", ".perquery.csv", ".perturn.csv", ".breakdowns.csv", ".matches.jsonl",
                   ".scatter.png", ".scatter.pdf", ".scatter.svg")


def output_paths(out_dir: str, prefix: str = "ikat") -> dict[str, str]:
    """Suffix -> path of every file :meth:`IkatTable.write` may write (for ``formats.check_outputs`` before
    any work)."""
    return {suffix: os.path.join(out_dir, prefix + suffix) for suffix in OUTPUT_SUFFIXES}


def turn_facts(topics: Sequence[Any]) -> pd.DataFrame:
    """``qid, depth, personal`` per turn from iKAT queries (``datasets_ext.ikat_parser.IkatQuery``)."""
    return pd.DataFrame([{"qid": q.query_id, "depth": int(q.turn_id), "personal": bool(q.ptkb_provenance)}
                         for q in topics], columns=["qid", "depth", "personal"])


BREAKDOWN_COLUMNS = ["system", "breakdown", "group", "measure", "mean", "turns"]


def breakdown(per_query: pd.DataFrame, topics: Sequence[Any]) -> pd.DataFrame:
    """Means per system and measure by turn depth and by personal / non-personal turn ([cone-rag Table 10])."""
    long = per_query.merge(turn_facts(topics), on="qid", how="left")
    long["personal"] = long["personal"].map({True: "personal", False: "non-personal"})
    parts = []
    for by in ("depth", "personal"):
        g = long.groupby(["system", by, "measure"])["value"].agg(["mean", "count"]).reset_index()
        parts.append(pd.DataFrame({"system": g["system"], "breakdown": by, "group": g[by], "measure": g["measure"],
                                   "mean": g["mean"], "turns": g["count"]}))
    return pd.concat(parts, ignore_index=True)


def _per_turn(table: JointTable, topics: Sequence[Any] | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per system and turn (with ``depth`` and ``personal`` when ``topics`` are given), and the
    breakdowns."""
    per_turn = table.per_query.pivot_table(index=["system", "qid"], columns="measure", values="value").reset_index()
    per_turn.columns.name = None
    if topics is None:
        return per_turn, pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    return per_turn.merge(turn_facts(topics), on="qid", how="left"), breakdown(table.per_query, topics)


UNANSWERED = ("refuse", "leave-out")


def _turn_key(turn: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", turn)


def check_turns(gold_turns: set[str], systems: Sequence[IkatSystem], unanswered: str = "refuse"
                ) -> tuple[set[str], list[str]]:
    """The gold nugget turns to evaluate and the notes for the header: how many gold turns the responses match;
    gold turns no system answered are refused (a turn id form that differs, e.g. ``0-2`` for ``0_2``; or gold
    nuggets of turns not run) or, with ``unanswered="leave-out"``, left out and noted; a system without a response to
    an evaluated turn scores 0 there (noted, and warned); response turns without gold nuggets are not evaluated
    (noted)."""
    if unanswered not in UNANSWERED:
        raise InvalidInput(f"unanswered must be one of {UNANSWERED}, got {unanswered!r}")
    answered = {str(q) for s in systems for q in s.responses["qid"]}
    evaluated = gold_turns & answered
    if not evaluated:
        raise InvalidInput(f"no turn of the gold nuggets has a response: gold turns e.g. {sorted(gold_turns)[:3]}, "
                         f"response turns e.g. {sorted(answered)[:3]} (turn ids are {{topic}}_{{turn}}, e.g. 0_2)")
    notes = []
    missing = sorted(gold_turns - answered)
    if missing:
        near = {_turn_key(t): t for t in answered}
        shown = ", ".join(t + (f" (a response turn is {near[_turn_key(t)]})" if _turn_key(t) in near else "")
                          for t in missing[:5]) + (", ..." if len(missing) > 5 else "")
        if unanswered == "refuse":
            raise InvalidInput(f"{len(missing)} of {len(gold_turns)} gold nugget turns have no response of any system "
                             f"({shown}); only {len(evaluated)} match. Check the turn ids, or evaluate only the "
                             "answered turns (unanswered='leave-out', --unanswered-turns leave-out)")
        notes.append(f"gold nugget turns without any response, left out: {len(missing)} ({shown})")
    notes.insert(0, f"turns evaluated: {len(evaluated)} of {len(gold_turns)} with gold nuggets")
    for s in systems:
        gaps = sorted(evaluated - {str(q) for q in s.responses["qid"]})
        if gaps:
            text = (f"{s.name}: no response to {len(gaps)} of {len(evaluated)} evaluated turns, scored 0 there "
                    f"({', '.join(gaps[:5])}{', ...' if len(gaps) > 5 else ''})")
            notes.append(text)
            warnings.warn(text, stacklevel=3)
    no_gold = sorted(answered - gold_turns)
    if no_gold:
        notes.append(f"response turns without gold nuggets, not evaluated: {len(no_gold)} "
                     f"({', '.join(no_gold[:5])}{', ...' if len(no_gold) > 5 else ''})")
    return evaluated, notes


def ikat_table(systems: Sequence[IkatSystem], gold_nuggets: Any, passage_qrels: Any = None, matcher: Any = None,
               topics: Sequence[Any] | None = None, baseline: str | None = None, test: str = "t",
               correction: str | None = None, alpha: float = 0.05, gold_label: str = "gold nuggets",
               retrieval_measures: Sequence[str] = RETRIEVAL, ntn_matcher: Any = None,
               unanswered: str = "refuse") -> IkatTable:
    """Score every system (module docstring). ``gold_nuggets``: any nugget form (e.g.
    ``formats.read_cone_gold_nuggets(path)``); ``passage_qrels``: the NIST passage qrels (path, frame, ir_datasets
    id), needed when a system has a ranking; ``matcher``: the NtR matcher, and the NtN one unless ``ntn_matcher``
    is given (default: the embedding baseline at the threshold calibrated for each task); ``topics``: the iKAT
    queries, for depth and personal breakdowns; ``unanswered``: gold nugget turns no system answered are refused
    (``"refuse"``) or left out (``"leave-out"``), see :func:`check_turns`."""
    if not systems:
        raise InvalidInput("ikat_table needs at least one system")
    gold = as_nugget_set(gold_nuggets)
    ntr_matcher = as_matcher(matcher, "ntr")
    if ntn_matcher is not None:
        ntn_matcher = as_matcher(ntn_matcher, "ntn")
    elif matcher is None and isinstance(ntr_matcher, EmbeddingMatcher):
        ntn_matcher = ntr_matcher.at_threshold(NTN_THRESHOLD)  # the calibrated NtN threshold, the same vectors
    else:
        ntn_matcher = ntr_matcher
    ranked = [s.ranking is not None for s in systems]
    if any(ranked) and not all(ranked):
        missing = [s.name for s in systems if s.ranking is None]
        raise InvalidInput(f"systems {missing} have no passage ranking while others have: give every system one, or "
                         "none (then the table has only the nugget measures)")
    if all(ranked) and passage_qrels is None:
        raise InvalidInput("the systems have passage rankings but no passage qrels were given")
    with_nuggets = [s.nuggets is not None for s in systems]
    if any(with_nuggets) and not all(with_nuggets):
        raise InvalidInput("extracted nuggets were given for some systems only: NtN needs them for every system")
    if any(s.responses is None for s in systems):
        raise InvalidInput("every system needs its responses (Recall_NtR)")
    evaluated, notes = check_turns(set(gold.by_topic()), systems, unanswered)
    gold = NuggetSet([n for n in gold.nuggets if n.qid in evaluated], dict(gold.queries))
    measures = NTR + (NTN if all(with_nuggets) else [])
    rows = []
    ntr, ntn = NuggetToResponse(gold, ntr_matcher), NuggetToNugget(gold, ntn_matcher)
    responses = [s.responses.assign(run_id=s.name) for s in systems]
    rows.append(ntr(pd.concat(responses, ignore_index=True)[["qid", "qanswer", "run_id"]]))
    if all(with_nuggets):
        frames = [s.nuggets.assign(run_id=s.name)[["qid", "nuggets", "run_id"]] for s in systems]
        rows.append(ntn(pd.concat(frames, ignore_index=True)))
    evaluation = pd.concat(rows, ignore_index=True)
    table_systems = [System(s.name, evaluation[evaluation["run_id"] == s.name][["qid", "docno", "score"]],
                            s.ranking[["qid", "docno", "score"]] if s.ranking is not None else None) for s in systems]
    table = joint_table(table_systems, nugget_qrels(gold), passage_qrels if all(ranked) else None,
                        answer_measures=measures, retrieval_measures=list(retrieval_measures), baseline=baseline,
                        alpha=alpha, test=test, correction=correction)
    table.unit = "turn"  # iKAT's queries are conversation turns
    per_turn, breakdowns = _per_turn(table, topics)
    labels = {"gold nuggets": f"{gold_label} ({len(gold)} nuggets)"}
    if all(with_nuggets) and ntn_matcher is not ntr_matcher:
        labels.update({"NtR matcher": ntr_matcher.describe(), "NtN matcher": ntn_matcher.describe()})
    else:
        labels["matcher"] = ntr_matcher.describe()
    agreement = [ntr_matcher.agreement("ntr")] + ([ntn_matcher.agreement("ntn")] if all(with_nuggets) else [])
    labels["matcher agreement with people"] = "; ".join(agreement)
    if not all(with_nuggets):
        labels["NtN"] = "not computed (no extracted nuggets)"
    return IkatTable(table, per_turn, breakdowns, labels, notes=notes,
                     matches=turn_matches(evaluation, systems, topics))


def turn_matches(evaluation: pd.DataFrame, systems: Sequence[IkatSystem], topics: Sequence[Any] | None = None
                 ) -> list[TurnMatches]:
    """The matcher's decisions of an iKAT table per (system, turn), with the response and the texts they were made
    on (``ikat.matches.jsonl``): the rows of :class:`~.cone.NuggetToResponse` and :class:`~.cone.NuggetToNugget`."""
    resolved = {q.query_id: q.resolved_utterance for q in topics or ()}
    decisions: dict[tuple[str, str], dict[str, list[Decision]]] = {}
    for qid, docno, matched, text, score, run_id in zip(evaluation["qid"], evaluation["docno"], evaluation["matched"],
                                                        evaluation["nugget"], evaluation["match_score"],
                                                        evaluation["run_id"]):
        kind = ids.parse_row_id(str(qid), str(docno))
        key = {"ntr_gold": "ntr", "ntn_gold": "ntn_recall", "ntn_extracted": "ntn_precision"}.get(kind.kind)
        if key is None or not isinstance(matched, bool):  # a failed decision (kept with matched "failed") is none
            continue
        gold_id = ids.nugget_id(str(qid), kind.nugget) if key != "ntn_precision" else None
        decisions.setdefault((str(run_id), str(qid)), {}).setdefault(key, []).append(
            Decision(str(text), matched, float(score), gold_id))
    out = []
    for s in systems:
        for qid, response in zip(s.responses["qid"].astype(str), s.responses["qanswer"]):
            lists = decisions.get((s.name, qid))
            if lists is not None:
                out.append(TurnMatches(qid, s.name, str(response), query=resolved.get(qid),
                                       **{k: tuple(v) for k, v in lists.items()}))
    return out


def span_rate(items: Sequence[Any]) -> pd.DataFrame:
    """Per run, the mean over its responses of |matched| / (|matched| + |not matched|) of a CONE-RAG response
    nugget file (``formats.ResponseNuggets``): the share of extracted lines that are spans of the response
    (docs/cone-rag.md). **Not** Precision_NtN; reported for reference only."""
    rows = [{"run": r.run_id, "qid": r.qid,
             "span_rate": len(r.matched) / (len(r.matched) + len(r.not_matched))
             if (r.matched or r.not_matched) else 0.0} for r in items]
    frame = pd.DataFrame(rows, columns=["run", "qid", "span_rate"])
    return frame.groupby("run")["span_rate"].agg(["mean", "count"]).reset_index().rename(
        columns={"mean": "span_rate", "count": "responses"}).sort_values("span_rate", ascending=False)


def systems_from_cone(responses: Mapping[tuple[str, str], str], response_nuggets: Sequence[Any] | None = None,
                      runs: Sequence[str] | None = None) -> list[IkatSystem]:
    """Systems from CONE-RAG participant responses (``formats.read_cone_responses``) and optionally their
    response nugget file: the ``matched`` lists (the extractor's lines found as spans of the response) are the
    extracted nuggets for NtN, as the reference NtN.py takes them."""
    names = runs or sorted({run for _, run in responses})
    nuggets: dict[tuple[str, str], list[str]] = {}
    if response_nuggets is not None:
        nuggets = {(r.qid, r.run_id): [m for m in r.matched if m.strip()] for r in response_nuggets}
        missing = [(t, run) for (t, run) in responses if (runs is None or run in runs) and (t, run) not in nuggets]
        if missing:
            raise InvalidInput(f"the response nuggets have no entry for {len(missing)} responses (turn, run: "
                             f"{missing[:3]}): their Recall_NtN and Precision_NtN would be 0 without a word; give "
                             "the response nuggets of the same responses (formats.check_response_nuggets)")
    out = []
    for name in names:
        resp = pd.DataFrame([{"qid": t, "qanswer": text} for (t, run), text in responses.items() if run == name],
                            columns=["qid", "qanswer"])
        if resp.empty:
            raise InvalidInput(f"run {name!r} has no response in the responses file")
        extracted = None
        if response_nuggets is not None:
            extracted = pd.DataFrame([{"qid": q, "nuggets": nuggets[q, name]} for q in resp["qid"]],
                                     columns=["qid", "nuggets"])
        out.append(IkatSystem(name, resp, None, extracted))
    return out


def ptkb_statements(topics: Sequence[Any]) -> dict[str, set[str]]:
    """Turn id -> the statement ids of its conversation's PTKB, from iKAT queries (``IkatQuery.ptkb``)."""
    return {q.query_id: {sid for sid, _ in q.ptkb} for q in topics}


def ptkb_table(runs: Mapping[str, pd.DataFrame], qrels: Any, topics: Sequence[Any] | None = None,
               measures: Sequence[str] = PTKB, baseline: str | None = None, test: str = "t",
               correction: str | None = None, alpha: float = 0.05, qrels_label: str = "PTKB qrels") -> IkatTable:
    """The PTKB statement ranking table: ``runs`` name -> ranking (``qid`` = turn, ``docno`` = statement id,
    ``score``; e.g. ``formats.read_ptkb_run``), ``qrels``: the PTKB qrels (path, frame or ir_datasets id such as
    ``trec-ikat/2023/ptkb``). Means are over the turns of the qrels (a turn the run leaves out scores 0, as
    ir_measures does). With ``topics``, every statement id of the runs and of the qrels must be one of the turn's
    PTKB (a ValueError names the first that is not); the per-turn values get ``depth`` and ``personal``."""
    if not runs:
        raise InvalidInput("ptkb_table needs at least one run")
    if topics is not None:
        statements = ptkb_statements(topics)
        judged = qrels if isinstance(qrels, pd.DataFrame) else None
        checked = [(f"run {n}", r) for n, r in runs.items()] + ([(qrels_label, judged)] if judged is not None else [])
        for what, frame in checked:
            for qid, docno in zip(frame["qid"].astype(str), frame["docno"].astype(str)):
                if docno not in statements.get(qid, ()):
                    raise InvalidInput(f"{what}: turn {qid}, statement {docno!r} is not a PTKB statement of the turn "
                                     "in the topics (wrong topics year, or ids that are not the topics' ptkb keys)")
    systems = [System(name, None, run[["qid", "docno", "score"]]) for name, run in runs.items()]
    table = joint_table(systems, qrels, qrels, answer_measures=[], retrieval_measures=list(measures),
                        baseline=baseline, alpha=alpha, test=test, correction=correction)
    table.unit = "turn"
    per_turn, breakdowns = _per_turn(table, topics)
    labels = {"task": "PTKB statement ranking", "qrels": f"{qrels_label} ({counted(table.per_query['qid'].nunique(), 'turn')})"}
    return IkatTable(table, per_turn, breakdowns, labels, prefix="ptkb")
