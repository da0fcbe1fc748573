"""Property-based tests: every format round-trips (write -> read -> equal), and a randomly
corrupted nugget qrels + evaluation run is either refused or scored exactly as an independent hand
computation of the file's rows, never anything else."""
from __future__ import annotations

import math
import re
import string
import tempfile
import warnings
from pathlib import Path

import ir_measures
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ir_measures_ext
from pyterrier_nuggets import formats
from pyterrier_nuggets.records import Answer, Assignment, Nugget, Sentence, SupportJudgment

ir_measures_ext.register()
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
qids = st.text(string.ascii_letters + string.digits + "-_.", min_size=1, max_size=8)
texts = st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and "\x00" not in t)
docnos = st.text(string.ascii_letters + string.digits + "-_#", min_size=1, max_size=12)


def _tmp() -> Path:
    return Path(tempfile.mkdtemp()) / "f"


@st.composite
def nugget_sets(draw, with_assignment=False):
    topics = draw(st.lists(qids, min_size=1, max_size=4, unique=True))
    nuggets, assignments = [], []
    for q in topics:
        for i in range(draw(st.integers(1, 5))):
            nuggets.append(Nugget(q, i, draw(texts).strip(), draw(st.sampled_from(["vital", "okay"]))))
            assignments.append(Assignment(q, i, draw(st.sampled_from(["support", "partial_support", "not_support"]))))
    return (nuggets, assignments) if with_assignment else nuggets


@SETTINGS
@given(nugget_sets())
def test_nugget_files_round_trip(nuggets):
    path = _tmp()
    formats.write_nuggets(str(path), nuggets)
    back = formats.read_nuggets(str(path)).nuggets
    assert [(n.qid, n.index, n.text, n.importance) for n in back] == \
           [(n.qid, n.index, n.text, n.importance) for n in nuggets]
    formats.write_nugget_qrels(str(path), nuggets)
    assert [(n.qid, n.index, n.importance) for n in formats.read_nugget_qrels(str(path)).nuggets] == \
           [(n.qid, n.index, n.importance) for n in nuggets]


@SETTINGS
@given(nugget_sets(with_assignment=True), st.one_of(st.none(), texts))
def test_assignment_files_round_trip(data, answer_text):
    nuggets, assignments = data
    answers = [formats.AssignedAnswer(q, "run-1", answer_text, [n for n in nuggets if n.qid == q],
                                      [a for a in assignments if a.qid == q], f"query {q}")
               for q in dict.fromkeys(n.qid for n in nuggets)]
    path = _tmp()
    formats.write_assignments(str(path), answers)
    back = formats.read_assignments(str(path)).answers
    assert [(a.qid, a.run_id, a.answer_text, a.query, [(n.index, n.text, n.importance) for n in a.nuggets],
             a.assignments) for a in back] == \
           [(a.qid, a.run_id, a.answer_text, a.query, [(n.index, n.text, n.importance) for n in a.nuggets],
             a.assignments) for a in answers]


@st.composite
def answer_lists(draw):
    out = []
    for q in draw(st.lists(qids, min_size=1, max_size=3, unique=True)):
        refs = draw(st.lists(docnos, max_size=4, unique=True))
        sentences = tuple(Sentence(draw(texts), tuple(draw(st.lists(st.integers(0, len(refs) - 1), max_size=3)))
                                   if refs else ()) for _ in range(draw(st.integers(0, 4))))
        out.append(Answer(q, "run-1", sentences, tuple(refs), draw(st.one_of(st.none(), texts))))
    return out


@SETTINGS
@given(answer_lists(), st.booleans())
def test_answer_files_round_trip(answers, as_docids):
    path = _tmp()
    # a reference cited twice in one sentence is read once (and reported): the rest round-trips as written
    once = [tuple(Sentence(s.text, tuple(dict.fromkeys(s.citations))) for s in a.sentences) for a in answers]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", formats.RepeatedCitationWarning)
        formats.write_answers_2024(str(path), answers)
        back = formats.read_answers(str(path))
        assert [(a.qid, a.run_id, a.sentences, a.references, a.query or "") for a in back] == \
               [(a.qid, a.run_id, s, a.references, a.query or "") for a, s in zip(answers, once)]
        formats.write_answers_2025(str(path), answers, citations_as_docids=as_docids)
        back = formats.read_answers(str(path))
    assert [(a.qid, a.sentences, a.references) for a in back] == [(a.qid, s, a.references) for a, s in
                                                                    zip(answers, once)]


@SETTINGS
@given(answer_lists(), st.data())
def test_support_files_round_trip_and_match_their_answers(answers, data):
    judgments = []
    for a in answers:
        for j in range(len(a.sentences)):
            cited = a.cited_docnos(j)
            if not cited:
                judgments.append(SupportJudgment(a.qid, j, None, None, "none"))
            for k, docno in enumerate(cited):
                judgments.append(SupportJudgment(a.qid, j, k, docno, data.draw(st.sampled_from(["full", "partial",
                                                                                                "none"]))))
    path = _tmp()
    formats.write_support(str(path), judgments, "run-1")
    back = formats.read_support(str(path))
    assert back == judgments and {j.run_id for j in back} <= {"run-1"}
    formats.check_support(str(path), back, answers)  # consistent by construction: accepted


# ------------------------------------------------------------------------------- corruption

SCORES = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}


def _valid_files(nuggets, assignments, words) -> tuple[str, str]:
    qrels = "".join(f"{n.qid} 0 {n.id} {n.grade}\n" for n in nuggets)
    rows = [(a.qid, f"{a.qid}:n{a.nugget_index}", SCORES[a.assignment]) for a in assignments]
    rows += [(q, f"{q}:words", float(w)) for q, w in words.items()]
    run = "".join(f"{q} Q0 {d} {k + 1} {s:g} r\n" for k, (q, d, s) in enumerate(rows))
    return qrels, run


def _oracle(qrels: str, run: str) -> dict[str, dict[str, float]] | None:
    """The measures by hand from the text of the files ([autonuggetizer §3.5]), or None where a file is invalid."""
    grades: dict[str, dict[str, int]] = {}
    for line in qrels.splitlines():
        f = line.split()
        if not f:
            continue
        if len(f) != 4 or not re.fullmatch(r"-?\d+", f[3]):
            return None
        q, d, g = f[0], f[2], int(f[3])
        if not re.fullmatch(re.escape(q) + r":n\d+", d):
            continue
        if g not in (1, 2) or d in grades.get(q, {}):
            return None
        grades.setdefault(q, {})[d] = g
    if not grades:
        return None
    assigned: dict[str, dict[str, float]] = {}
    words: dict[str, float] = {}
    seen = set()
    for line in run.splitlines():
        f = line.split()
        if not f:
            continue
        if len(f) != 6:
            return None
        q, d = f[0], f[2]
        try:
            s = float(f[4])
        except ValueError:
            return None
        if not math.isfinite(s) or (q, d) in seen:
            return None
        seen.add((q, d))
        if q not in grades:  # a topic without nuggets: its nugget rows are not scored, its length is (decision 13)
            if d == f"{q}:words":
                if s < 0 or s != int(s):
                    return None
                words[q] = s
            continue
        if re.fullmatch(re.escape(q) + r":n\d+", d):
            if d not in grades[q] or s not in (0.0, 0.5, 1.0):
                return None
            assigned.setdefault(q, {})[d] = s
        elif d == f"{q}:words":
            if s < 0 or s != int(s):
                return None
            words[q] = s
    out = {}
    for q, gs in grades.items():
        if q not in assigned and q not in words:  # not answered: 0 on the nugget measures, no length (decision 13)
            out[q] = dict.fromkeys(("V_strict", "A_strict", "W"), 0.0)
            continue
        a = assigned.get(q, {})
        vital = [d for d, g in gs.items() if g == 2]
        weight = {2: 1.0, 1: 0.5}
        out[q] = {
            "V_strict": sum(a.get(d, 0) == 1.0 for d in vital) / len(vital) if vital else 0.0,
            "A_strict": sum(a.get(d, 0) == 1.0 for d in gs) / len(gs),
            "W": sum(weight[g] * a.get(d, 0) for d, g in gs.items()) / sum(weight[g] for g in gs.values()),
        }
        if q not in words:
            return None  # AnswerWords needs a length row
        out[q]["AnswerWords"] = words[q]
    for q in words.keys() - grades.keys():
        out[q] = {"AnswerWords": words[q]}
    return out


def _package(qrels: str, run: str) -> dict[str, dict[str, float]] | None:
    d = Path(tempfile.mkdtemp())
    (d / "q").write_text(qrels)
    (d / "r").write_text(run)
    measures = [ir_measures.parse_measure(m) for m in ("V_strict", "A_strict", "W", "AnswerWords")]
    try:
        q = [ir_measures.Qrel(*row) for row in formats.read_qrels_rows(str(d / "q"))]
        r = [ir_measures.ScoredDoc(*row) for row in formats.read_run_rows(str(d / "r"))]
        out: dict[str, dict[str, float]] = {}
        for m in ir_measures.iter_calc(measures, q, r):
            if not math.isnan(m.value):  # NaN: not defined on that topic
                out.setdefault(m.query_id, {})[str(m.measure)] = m.value
        return out
    except (ValueError, formats.InputError):
        return None


TOKENS = ["0", "1", "2", "3", "-1", "0.5", "0.7", "1e9", "nan", "inf", "x", "t0:n0", "t0:n9", "t1:n1", "t0:words", "Q0",
          "t0", "t1", "t0_n0", ""]


@st.composite
def corrupted(draw):
    nuggets, assignments = draw(nugget_sets(with_assignment=True))
    topics = list(dict.fromkeys(n.qid for n in nuggets))
    nuggets = [Nugget(f"t{topics.index(n.qid)}", n.index, n.text, n.importance) for n in nuggets]
    assignments = [Assignment(f"t{topics.index(a.qid)}", a.nugget_index, a.assignment) for a in assignments]
    words = {f"t{i}": draw(st.integers(0, 300)) for i in range(len(topics))}
    files = list(_valid_files(nuggets, assignments, words))
    for _ in range(draw(st.integers(1, 3))):
        which = draw(st.integers(0, 1))
        lines = files[which].splitlines(True)
        if not lines:
            continue
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["drop", "duplicate", "field", "swap"]))
        if how == "drop":
            del lines[i]
        elif how == "duplicate":
            lines.insert(draw(st.integers(0, len(lines))), lines[i])
        else:
            fields = lines[i].split()
            k = draw(st.integers(0, len(fields) - 1))
            if how == "field":
                fields[k] = draw(st.sampled_from(TOKENS))
            else:
                m = draw(st.integers(0, len(fields) - 1))
                fields[k], fields[m] = fields[m], fields[k]
            lines[i] = " ".join(fields) + "\n"
        files[which] = "".join(lines)
    return files


@settings(max_examples=300, deadline=None)
@given(corrupted())
def test_corrupted_files_are_refused_or_scored_as_by_hand(files):
    qrels, run = files
    got = _package(qrels, run)
    expected = _oracle(qrels, run)
    if got is None:
        return  # refused: always allowed
    assert expected is not None, "the package scored files that are invalid by the format's rules"
    assert set(got) == set(expected)
    for q, values in expected.items():
        assert set(got[q]) == set(values), q
        for measure, value in values.items():
            assert got[q][measure] == pytest.approx(value), (q, measure)
