"""Scores that agree when combined (decisions.md, decision 13): a run's mean of a measure averages over the topics
where the measure is defined (nugget measures: topics with nuggets; rubric measures: topics with a rubric; support
and length: the topics the run answered), whichever route computes it and whatever else is scored with it.

Metamorphic tests: a mixed nugget + rubric submission scored together equals its parts scored alone; a run split in
two equals the whole; the order of the input files changes no number. The LLM judges are the fake
OpenAI-compatible server's (its replies decide by word overlap)."""
import subprocess
import sys

import ir_measures
import pandas as pd
import pytest
from ir_measures import Qrel, ScoredDoc

from ir_measures_ext import AnswerWords, RubricFailedMandatory, RubricScore, SupportP, SupportR, V, V_strict
from pyterrier_nuggets import cli
from tests.test_trec_rag_cli import _jsonl, private_cache  # noqa: F401  (the autouse fixture: a private LLM cache)

DOCS = {"d1": "Paris is the capital of France.", "d2": "Lyon is a large city.", "d3": "Bananas are yellow fruit.",
        "d4": "Apples grow on trees in orchards.", "d5": "Tea is a popular drink in England."}
# t1, t2: nugget topics (the development nuggets); t3, t4: rubric topics (ResearchRubrics): disjoint, as in 2026
NUGGETS = [
    {"qid": "t1", "query": "French cities", "nuggets": [
        {"text": "Paris capital", "importance": "vital"}, {"text": "Lyon large city", "importance": "okay"}]},
    {"qid": "t2", "query": "fruit", "nuggets": [
        {"text": "Bananas yellow", "importance": "vital"}, {"text": "Apples grow trees", "importance": "vital"}]}]
RUBRICS = [
    {"qid": "t3", "criteria": [{"text": "Apples orchards", "weight": 4, "tier": "mandatory"},
                               {"text": "Bananas yellow", "weight": 2, "tier": "optional"}]},
    {"qid": "t4", "criteria": [{"text": "Tea drink England", "weight": 3, "tier": "mandatory"},
                               {"text": "Paris capital", "weight": -2, "tier": "optional"}]}]
TOPICS = {"t1": "French cities", "t2": "fruit", "t3": "orchards", "t4": "drinks"}


def _answer(run: str, qid: str, sentences: list[tuple[str, list[int]]], refs: list[str]) -> dict:
    return {"metadata": {"team_id": "us", "run_id": run, "type": "automatic", "narrative_id": qid,
                         "narrative": TOPICS[qid]},
            "references": refs, "answer": [{"text": t, "citations": c} for t, c in sentences]}


ANSWERS = {
    "A": [_answer("A", "t1", [("Paris is the capital.", [0]), ("Lyon is large.", [1])], ["d1", "d2"]),
          _answer("A", "t2", [("Bananas are yellow.", [0]), ("Nothing else.", [])], ["d3"]),
          _answer("A", "t3", [("Apples grow in orchards.", [0, 1])], ["d4", "d3"]),
          _answer("A", "t4", [("Tea is a drink in England.", [0]), ("Paris is the capital.", [1])], ["d5", "d1"])],
    "B": [_answer("B", "t1", [("Lyon is a large city.", [0])], ["d2"]),
          _answer("B", "t3", [("Bananas are yellow.", [0])], ["d3"]),
          _answer("B", "t4", [("Tea is popular.", [])], ["d5"])],
}


@pytest.fixture
def files(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    return {"nuggets": _jsonl(d / "nuggets.jsonl", NUGGETS), "rubrics": _jsonl(d / "rubrics.jsonl", RUBRICS),
            "docs": _jsonl(d / "docs.jsonl", [{"docno": k, "text": v} for k, v in DOCS.items()]),
            "d": d}


def trec_rag(server, out, answers: list[str], *, nuggets=None, rubrics=None, docs=None, extra=()) -> dict:
    """``trec-rag`` with support judged on every citation; its scores.tsv as {(run, qid, measure): value}."""
    argv = ["trec-rag", *[x for a in answers for x in ("--answers", a)], "--support", "--docs", docs,
            "--base-url", server.base_url, "--model", "fake", "--out", str(out), *extra]
    argv += ["--nuggets", nuggets] if nuggets else []
    argv += ["--rubrics", rubrics] if rubrics else []
    assert cli.main(argv) == 0
    df = pd.read_csv(out / "scores.tsv", sep="\t", dtype={"qid": str})
    return {(r.run, r.qid, r.measure): r.value for r in df.itertuples()}


def _family(scores: dict, names: tuple[str, ...]) -> dict:
    return {k: v for k, v in scores.items() if k[2].split("(")[0] in names}


NUGGET_NAMES = ("V_strict", "V", "W_strict", "W", "A_strict", "A")
RUBRIC_NAMES = ("RubricScore", "RubricFailedMandatory")
ANSWERED_NAMES = ("SupportP", "SupportR", "AnswerWords")


def test_a_mixed_submission_scored_together_equals_its_parts_scored_alone(server, files, tmp_path, capsys):
    d = files["d"]
    together_answers = [_jsonl(d / f"{r}.jsonl", rows) for r, rows in ANSWERS.items()]
    together = trec_rag(server, tmp_path / "together", together_answers, nuggets=files["nuggets"],
                        rubrics=files["rubrics"], docs=files["docs"])
    printed = capsys.readouterr().out
    nugget_part = [_jsonl(d / f"{r}-nuggets.jsonl", [a for a in rows if a["metadata"]["narrative_id"] in ("t1", "t2")])
                   for r, rows in ANSWERS.items()]
    rubric_part = [_jsonl(d / f"{r}-rubrics.jsonl", [a for a in rows if a["metadata"]["narrative_id"] in ("t3", "t4")])
                   for r, rows in ANSWERS.items()]
    alone_nuggets = trec_rag(server, tmp_path / "nuggets", nugget_part, nuggets=files["nuggets"], docs=files["docs"])
    alone_rubrics = trec_rag(server, tmp_path / "rubrics", rubric_part, rubrics=files["rubrics"], docs=files["docs"])

    # nugget measures: the same per topic and the same mean, the rubric topics added or not
    assert _family(together, NUGGET_NAMES) == pytest.approx(_family(alone_nuggets, NUGGET_NAMES))
    # B supports t1's okay nugget only and did not answer t2 (0 there): W_strict (0 + 0.5) / 1.5, then / 2 topics
    assert together["B", "all", "W_strict"] == pytest.approx((1 / 3 + 0) / 2)
    # rubric measures: the same, the nugget topics added or not (the nugget topics used to count 0)
    assert _family(together, RUBRIC_NAMES) == pytest.approx(_family(alone_rubrics, RUBRIC_NAMES))
    # A: t3 4 of 6 (the orchards, not the bananas); t4 (3 - 2) / 3 (the tea, and the flaw Paris); not / 4 topics
    assert together["A", "all", "RubricScore"] == pytest.approx((4 / 6 + 1 / 3) / 2)
    # support and length: each answered topic's value is the same; the mean is over every answered topic
    per_topic = {k: v for k, v in _family(together, ANSWERED_NAMES).items() if k[1] != "all"}
    parts = {k: v for s in (alone_nuggets, alone_rubrics) for k, v in _family(s, ANSWERED_NAMES).items()
             if k[1] != "all"}
    assert per_topic == pytest.approx(parts) and len(per_topic) == 7 * 7
    for run, rows in ANSWERS.items():
        topics = [a["metadata"]["narrative_id"] for a in rows]
        for measure in ("SupportP", "SupportR(cite='all_judged')", "AnswerWords"):
            values = [together[run, q, measure] for q in topics]
            assert together[run, "all", measure] == pytest.approx(sum(values) / len(values))
    assert together["A", "all", "AnswerWords"] == pytest.approx((7 + 5 + 4 + 10) / 4)
    # the printed table says over how many topics each mean runs, per family
    assert "Means over the topics each measure is defined on:" in printed
    assert "V_strict, V, W_strict, W, A_strict, A: 2 topics with nuggets" in printed
    assert "RubricScore, RubricScore(grading='binary'), RubricFailedMandatory: 2 topics with a rubric" in printed
    assert "AnswerWords, SupportP" in printed and "3 to 4 topics answered" in printed

    # the plain ir_measures command line gives the same means on the written files
    out = tmp_path / "together"
    for run in ANSWERS:
        names = ["V_strict", "W", "RubricScore", "RubricFailedMandatory", "SupportP", "SupportR(cite='all_judged')",
                 "AnswerWords"]
        proc = subprocess.run([sys.executable, "-m", "ir_measures", str(out / "qrels.txt"), str(out / f"{run}.eval.run"),
                               *names, "-p", "10"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        means = dict(line.split("\t") for line in proc.stdout.splitlines())
        for name in names:
            assert float(means[name]) == pytest.approx(together[run, "all", name], abs=1e-9), (run, name)


def test_a_run_split_in_two_and_files_in_any_order_give_the_same_numbers(server, files, tmp_path):
    d = files["d"]
    whole = trec_rag(server, tmp_path / "whole", [_jsonl(d / "A.jsonl", ANSWERS["A"])], nuggets=files["nuggets"],
                     rubrics=files["rubrics"], docs=files["docs"])
    # split in two (one topic of each family in each half), each half scored on its own
    halves = [trec_rag(server, tmp_path / f"half{k}", [_jsonl(d / f"A{k}.jsonl", ANSWERS["A"][k::2])],
                       nuggets=files["nuggets"], rubrics=files["rubrics"], docs=files["docs"])
              for k in (0, 1)]
    # each half's unanswered topics of a family score 0 there; its answered cells are the whole's
    answered = {k: v for k, v in halves[0].items() if k[1] in ("t1", "t3")}
    answered |= {k: v for k, v in halves[1].items() if k[1] in ("t2", "t4")}
    assert halves[0]["A", "t2", "V_strict"] == 0
    assert answered == pytest.approx({k: v for k, v in whole.items() if k[1] != "all"})
    table = pd.DataFrame([(m, v) for (_, _, m), v in answered.items()], columns=["measure", "value"])
    means = table.groupby("measure")["value"].mean().to_dict()
    assert means == pytest.approx({m: v for (_, q, m), v in whole.items() if q == "all"})
    # every input file in reverse order: the same numbers
    reverse = lambda rows: list(reversed(rows))  # noqa: E731
    shuffled = trec_rag(server, tmp_path / "reversed", [_jsonl(d / "A-rev.jsonl", reverse(ANSWERS["A"]))],
                        nuggets=_jsonl(d / "n-rev.jsonl", reverse([{**n, "nuggets": n["nuggets"]} for n in NUGGETS])),
                        rubrics=_jsonl(d / "r-rev.jsonl", reverse(RUBRICS)),
                        docs=_jsonl(d / "d-rev.jsonl", reverse([{"docno": k, "text": v} for k, v in DOCS.items()])))
    assert shuffled == pytest.approx(whole)
    two_runs = [_jsonl(d / f"{r}.jsonl", rows) for r, rows in ANSWERS.items()]
    forward = trec_rag(server, tmp_path / "ab", two_runs, nuggets=files["nuggets"], rubrics=files["rubrics"],
                       docs=files["docs"])
    backward = trec_rag(server, tmp_path / "ba", list(reversed(two_runs)), nuggets=files["nuggets"],
                        rubrics=files["rubrics"], docs=files["docs"])
    assert forward == pytest.approx(backward)
    assert (tmp_path / "ab" / "support_metric_rows.txt").read_text() == \
        (tmp_path / "ba" / "support_metric_rows.txt").read_text()


def test_unanswered_topics_count_zero_or_are_omitted_as_the_toolkit_does(server, files, tmp_path, capsys):
    answers = [_jsonl(files["d"] / "B.jsonl", ANSWERS["B"])]  # B did not answer t2 (nuggets)
    zero = trec_rag(server, tmp_path / "zero", answers, nuggets=files["nuggets"], rubrics=files["rubrics"],
                    docs=files["docs"])
    assert "a run did not answer scores 0 there" in capsys.readouterr().out
    omit = trec_rag(server, tmp_path / "omit", answers, nuggets=files["nuggets"], rubrics=files["rubrics"],
                    docs=files["docs"], extra=["--unanswered", "omit"])
    assert "(--unanswered omit, the TREC RAG 2026 toolkit's cells; each run's qrels are RUN.qrels.txt)" in capsys.readouterr().out
    assert zero["B", "t2", "W_strict"] == 0 and ("B", "t2", "W_strict") not in omit
    assert zero["B", "all", "W_strict"] == pytest.approx(1 / 6) and omit["B", "all", "W_strict"] == pytest.approx(1 / 3)
    # support and length are over the answered topics either way; the answered cells are the same
    assert _family(zero, ANSWERED_NAMES) == _family(omit, ANSWERED_NAMES)
    # only the nugget means differ: the rubric topics were all answered
    differ = {k for k in zero if k in omit and zero[k] != pytest.approx(omit[k])}
    assert differ == {("B", "all", m) for m in ("W_strict", "W", "A_strict", "A")}  # V: 0 either way
    # every route gives the chosen convention: plain ir_measures on the files each one wrote gives its scores.tsv means
    assert _plain_means(tmp_path / "zero", "qrels.txt", "B") == _means(zero, "B")
    assert _plain_means(tmp_path / "omit", "B.qrels.txt", "B") == _means(omit, "B")
    assert not (tmp_path / "omit" / "qrels.txt").exists()  # no file that gives the other convention


def _means(scores: dict, run: str) -> dict:
    return {m: pytest.approx(v) for (r, q, m), v in scores.items() if r == run and q == "all"}


def _plain_means(folder, qrels: str, run: str) -> dict:
    """Each measure of the folder's scores.tsv computed by plain ir_measures on the written qrels and evaluation run."""
    names = sorted(set(pd.read_csv(folder / "scores.tsv", sep="\t")["measure"]))
    measures = [ir_measures.parse_measure(n) for n in names]
    got = ir_measures.calc_aggregate(measures, ir_measures.read_trec_qrels(str(folder / qrels)),
                                     ir_measures.read_trec_run(str(folder / f"{run}.eval.run")))
    return {str(m): got[m] for m in measures}


# ---- the same rule in every route, without an LLM: the plain ir_measures API and CLI, pt.Experiment, the joint table

NUGGET_QRELS = [Qrel("t1", "t1:n0", 2), Qrel("t1", "t1:n1", 1), Qrel("t2", "t2:n0", 2)]
RUBRIC_QRELS = [Qrel("t3", "t3:r0", 4), Qrel("t3", "t3:r1", 2), Qrel("t4", "t4:r0", 3), Qrel("t4", "t4:r1", -2)]
RUN = [  # t1, t2 assigned; t3, t4 graded; t9 answered, in no qrels
    ScoredDoc("t1", "t1:n0", 1.0), ScoredDoc("t1", "t1:n1", 0.5), ScoredDoc("t1", "t1:s0:c0:d1", 1.0),
    ScoredDoc("t1", "t1:words", 6), ScoredDoc("t2", "t2:n0", 0.0), ScoredDoc("t2", "t2:s0:uncited", 0.0),
    ScoredDoc("t2", "t2:words", 4), ScoredDoc("t3", "t3:r0", 1.0), ScoredDoc("t3", "t3:r1", 0.5),
    ScoredDoc("t3", "t3:s0:c0:d4", 0.5), ScoredDoc("t3", "t3:words", 10), ScoredDoc("t4", "t4:r0", 0.0),
    ScoredDoc("t4", "t4:r1", 1.0), ScoredDoc("t4", "t4:s0:c0:d5", 0.0), ScoredDoc("t4", "t4:words", 3),
    ScoredDoc("t9", "t9:s0:c0:d1", 1.0), ScoredDoc("t9", "t9:words", 5)]
# by hand: V_strict and V t1 1 (n0, vital, supported), t2 0; RubricScore t3 (4 + 0.5 * 2) / 6, t4 -2 / 3;
# SupportP = SupportR (one cited or uncited sentence each): t1 1, t2 0, t3 .5, t4 0, t9 1; words 6, 4, 10, 3, 5
EXPECTED = {V_strict: 0.5, V: 0.5, RubricScore: (5 / 6 - 2 / 3) / 2, SupportP: 2.5 / 5, SupportR: 2.5 / 5,
            AnswerWords: 28 / 5}
MEASURES = list(EXPECTED)
FAMILIES = {"nuggets": [V_strict, V], "rubrics": [RubricScore], "answered": [SupportP, SupportR, AnswerWords]}


def _cells(run, qrels=NUGGET_QRELS + RUBRIC_QRELS, measures=MEASURES) -> dict:
    """The defined per-topic values (NaN: not defined on that topic)."""
    return {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)
            if m.value == m.value}


def test_every_route_averages_each_family_over_its_topics(tmp_path):
    qrels = NUGGET_QRELS + RUBRIC_QRELS
    assert ir_measures.calc_aggregate(MEASURES, qrels, RUN) == pytest.approx(EXPECTED)
    # each family alone: the nugget measures with the nugget qrels, the rubric measures with the rubric qrels
    assert ir_measures.calc_aggregate([V_strict, V], NUGGET_QRELS, RUN) == pytest.approx({V_strict: 0.5, V: 0.5})
    assert ir_measures.calc_aggregate([RubricScore], RUBRIC_QRELS, RUN) == pytest.approx(
        {RubricScore: EXPECTED[RubricScore]})
    # adding the rubric-only topics (or the nugget-only ones) to the qrels and the run changes no mean of the other
    nugget_run = [r for r in RUN if r.query_id in ("t1", "t2")]
    together = ir_measures.calc_aggregate(MEASURES, qrels, RUN)
    assert {m: together[m] for m in (V_strict, V)} == ir_measures.calc_aggregate([V_strict, V], NUGGET_QRELS, nugget_run)
    rubric_run = [r for r in RUN if r.query_id in ("t3", "t4")]
    assert together[RubricScore] == ir_measures.calc_aggregate([RubricScore], RUBRIC_QRELS, rubric_run)[RubricScore]
    # the run in two halves: the cells of the halves are the cells of the whole; any row order gives the same
    first = [r for r in RUN if r.query_id in ("t1", "t3", "t9")]
    second = [r for r in RUN if r.query_id not in ("t1", "t3", "t9")]
    answered = {k: v for k, v in _cells(first).items() if k[0] in ("t1", "t3", "t9")}
    answered |= {k: v for k, v in _cells(second).items() if k[0] not in ("t1", "t3", "t9")}
    assert answered == _cells(RUN) and _cells(list(reversed(RUN))) == _cells(RUN)
    assert ("t2", "SupportP") in _cells(RUN) and ("t3", "V_strict") not in _cells(RUN)

    # the plain ir_measures command line
    qrels_file, run_file = tmp_path / "qrels.txt", tmp_path / "a.run"
    qrels_file.write_text("".join(f"{q.query_id} 0 {q.doc_id} {q.relevance}\n" for q in qrels))
    run_file.write_text("".join(f"{r.query_id} Q0 {r.doc_id} {k} {r.score} a\n" for k, r in enumerate(RUN, 1)))
    proc = subprocess.run([sys.executable, "-m", "ir_measures", str(qrels_file), str(run_file),
                           *map(str, MEASURES), "-p", "10"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert {m: float(v) for m, v in (line.split("\t") for line in proc.stdout.splitlines())} == \
        pytest.approx({str(m): v for m, v in EXPECTED.items()})

    # the joint table: the same means, and over how many topics each runs
    from pyterrier_nuggets.evaluation import System, joint_table
    table = joint_table([System("a", str(run_file))], str(qrels_file), answer_measures=MEASURES)
    assert table.means.loc["a"].to_dict() == pytest.approx({str(m): v for m, v in EXPECTED.items()})
    assert ("V_strict, V: 2 topics with nuggets; RubricScore: 2 topics with a rubric; SupportP, SupportR, AnswerWords: "
            "5 topics answered.") in table.to_text()


def test_pt_experiment_gives_each_family_its_mean_or_nan_never_another_mean():
    import pyterrier as pt
    frame = pd.DataFrame([(r.query_id, r.doc_id, r.score) for r in RUN if r.query_id != "t9"],
                         columns=["qid", "docno", "score"])
    qrels = pd.DataFrame([(q.query_id, q.doc_id, q.relevance) for q in NUGGET_QRELS + RUBRIC_QRELS],
                         columns=["qid", "docno", "label"])
    topics = pd.DataFrame({"qid": ["t1", "t2", "t3", "t4"], "query": "q"})
    system = pt.Transformer.from_df(frame)
    expected = {**EXPECTED, SupportP: 1.5 / 4, SupportR: 1.5 / 4, AnswerWords: 23 / 4}  # without t9
    # one family per experiment: pyterrier's mean over the experiment's topics is the family's mean
    for measures in FAMILIES.values():
        result = pt.Experiment([system], topics, qrels, measures, names=["a"])
        assert {m: result.iloc[0][str(m)] for m in measures} == pytest.approx({m: expected[m] for m in measures})
    # families together: pyterrier averages each measure over every topic of its table: NaN where the families' topics
    # differ (not the mean over the other family's topics); its per-topic table, averaged per measure, gives the means
    result = pt.Experiment([system], topics, qrels, MEASURES, names=["a"])
    assert result.iloc[0][["V_strict", "RubricScore"]].isna().all()
    assert result.iloc[0][["SupportP", "AnswerWords"]].tolist() == pytest.approx([1.5 / 4, 23 / 4])
    per_topic = pt.Experiment([system], topics, qrels, MEASURES, names=["a"], perquery=True)
    assert per_topic.groupby("measure")["value"].mean().to_dict() == pytest.approx(
        {str(m): v for m, v in expected.items()})


RUBRIC_WITHOUT_POSITIVE_WEIGHT = {"qid": "t5", "criteria": [{"text": "Paris capital", "weight": -2},
                                                            {"text": "Lyon", "weight": 0}]}


def test_a_rubric_without_a_positive_weight_is_refused_in_every_route(server, tmp_path, capsys):
    qrels = RUBRIC_QRELS + [Qrel("t5", "t5:r0", -2), Qrel("t5", "t5:r1", 0)]
    with pytest.raises(ValueError, match=r"topic\(s\) t5: no criterion has a positive weight \(topic t5: t5:r0 -2, "
                                         r"t5:r1 0\).*Leave the topic out"):
        ir_measures.calc_aggregate([RubricScore], qrels, RUN)
    assert ir_measures.calc_aggregate([RubricFailedMandatory(grading="binary")], [
        q for q in qrels if q.query_id == "t5"] + [Qrel("t5", "t5:r0:mandatory", 1), Qrel("t5", "t5:r1:optional", 1)],
        RUN) == {RubricFailedMandatory(grading="binary"): 1.0}  # defined without a positive weight: the one mandatory
    from pyterrier_nuggets import formats
    path = _jsonl(tmp_path / "rubrics.jsonl", RUBRICS + [RUBRIC_WITHOUT_POSITIVE_WEIGHT])
    with pytest.raises(ValueError, match=r"rubrics.jsonl:3: field 'criteria': no criterion of topic t5 has a positive "
                                         r"weight \(weights \[-2, 0\]\)"):
        formats.read_rubrics(path)
    answers = _jsonl(tmp_path / "A.jsonl", ANSWERS["A"][2:])
    code = cli.main(["trec-rag", "--answers", answers, "--rubrics", path, "--base-url", server.base_url, "--model",
                     "fake", "--out", str(tmp_path / "out")])
    assert code == 2 and not (tmp_path / "out").exists() and server.count == 0
    assert "rubrics.jsonl:3: field 'criteria': no criterion of topic t5" in capsys.readouterr().err
