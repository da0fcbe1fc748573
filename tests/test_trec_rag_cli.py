"""``pyterrier-nuggets trec-rag``: TREC RAG 2026 answer files to the track's scores with the LLM judges on the fake
OpenAI-compatible server (its default replies decide by word overlap, so every score here is worked out by hand)."""
import contextlib
import json

import pandas as pd
import pytest

from pyterrier_nuggets import cli, formats

DOCS = {"d1": "Paris is the capital of France.", "d2": "Lyon is a large city.", "d3": "Bananas are yellow fruit."}
ANSWERS = [
    {"metadata": {"team_id": "us", "run_id": "A", "type": "automatic", "narrative_id": "t1"},
     "references": ["d1", "d2", "d3"],
     "answer": [{"text": "Paris is the capital.", "citations": [0, 1]}, {"text": "## Summary", "citations": []},
                {"text": "Bananas are yellow.", "citations": ["d3"]}]},
    {"metadata": {"team_id": "us", "run_id": "B", "type": "automatic", "narrative_id": "t1"},
     "references": ["d1"],
     "answer": [{"text": "Lyon is large.", "citations": [0]}, {"text": "Nothing else.", "citations": []}]},
]
NUGGETS = {"qid": "t1", "query": "tell me about French cities", "nuggets": [
    {"text": "Paris capital", "importance": "vital", "mapped_sub_narrative": "Capital city"},
    {"text": "Bananas yellow", "importance": "okay", "mapped_sub_narrative": "Fruit"},
    {"text": "Lyon large city", "importance": "vital", "mapped_sub_narrative": "Other cities"}]}
RUBRIC = {"qid": "t1", "criteria": [
    {"text": "Paris capital", "weight": 5, "tier": "mandatory"},
    {"text": "Bananas", "weight": 2, "tier": "optional"},
    {"text": "Lyon", "weight": -3, "tier": "optional"}]}


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """The command's LLM client caches in the default place: a private one per test (counts of calls are exact)."""
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path / "llm-cache.sqlite"))


@pytest.fixture
def files(tmp_path):
    return {"answers": _jsonl(tmp_path / "answers.jsonl", ANSWERS),
            "nuggets": _jsonl(tmp_path / "nuggets.jsonl", [NUGGETS]),
            "rubrics": _jsonl(tmp_path / "rubrics.jsonl", [RUBRIC]),
            "docs": _jsonl(tmp_path / "docs.jsonl", [{"docno": d, "text": t} for d, t in DOCS.items()])}


def _scores(out):
    df = pd.read_csv(out / "scores.tsv", sep="\t", dtype={"qid": str})
    return {(r.run, r.qid, r.measure): r.value for r in df.itertuples()}


def test_answers_to_the_track_scores(server, files, tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--rubrics",
                     files["rubrics"], "--support", "--docs", files["docs"], "--base-url", server.base_url,
                     "--model", "fake", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    s = _scores(out)
    # support. A: s0 cites d1 (full) and d2 (none), s1 uncited, s2 d3 (full); B: s0 d1 (none), s1 uncited
    expected = {("A", "SupportP"): 1.0, ("A", "SupportR"): 2 / 3, ("A", "SupportP(cite='all_judged')"): 0.75,
                ("A", "SupportR(cite='all_judged')"): 0.5, ("A", "SupportP(credit='hard')"): 1.0,
                ("A", "SupportR(credit='hard')"): 2 / 3, ("B", "SupportP"): 0.0, ("B", "SupportR"): 0.0,
                # nuggets. A supports n0 (vital) and n1 (okay), not n2 (vital); B partially supports n2 only
                ("A", "V_strict"): 0.5, ("B", "V_strict"): 0.0, ("B", "V"): 0.25,
                # sub-narratives sn0 (n0), sn1 (n1, okay only), sn2 (n2)
                ("A", "SubNarrativeCoverage"): 1 / 3, ("B", "SubNarrativeCoverage"): 0.0,
                ("B", "SubNarrativeCoverage(credit='partial')"): 0.5 / 3,
                # rubric 5 / 2 / -3: A satisfies the first two, B only the flaw
                ("A", "RubricScore"): 1.0, ("B", "RubricScore"): -3 / 7, ("A", "RubricFailedMandatory"): 0.0,
                ("B", "RubricFailedMandatory"): 1.0, ("A", "AnswerWords"): 9.0}  # "## Summary" is two words
    for (run, measure), value in expected.items():
        assert s[run, "t1", measure] == pytest.approx(value), (run, measure)
        assert s[run, "all", measure] == pytest.approx(value)
    assert (out / "support_metric_rows.txt").read_text().splitlines()[:2] == [
        "A t1 weighted_precision_first_citation 1", "A t1 weighted_recall_first_citation 0.666667"]
    toolkit = [json.loads(line) for line in (out / "A.support_assignments.jsonl").read_text().splitlines()]
    assert [c["support"] for c in toolkit[0]["sentences"][0]["citations"]] == ["2", "0"]
    assert formats.read_rubric_verdicts(str(out / "B.verdicts.jsonl"), formats.read_rubrics(files["rubrics"]))[2].verdict \
        == "satisfied"
    assert len(formats.read_assignments(str(out / "A.assignments.jsonl")).answers) == 1
    qrels = (out / "qrels.txt").read_text().splitlines()
    assert "t1 0 t1:n2:sn2 1" in qrels and "t1 0 t1:r2 -3" in qrels and "t1 0 t1:r0:mandatory 1" in qrels
    assert "RubricScore" in capsys.readouterr().out
    calls = server.count
    cli.main(["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--rubrics", files["rubrics"],
              "--support", "--docs", files["docs"], "--base-url", server.base_url, "--model", "fake", "--out",
              str(tmp_path / "again")])
    assert server.count == calls  # a re-run costs no call (the response cache)
    assert _scores(tmp_path / "again") == s


def test_support_from_the_toolkit_files(server, files, tmp_path):
    support = _jsonl(tmp_path / "support.jsonl", [
        {"topic_id": "t1", "run_id": "A", "sentences": [
            {"sentenceID": 0, "text": "Paris is the capital.", "citations": [
                {"citationID": 0, "reference": "d1", "support": "2"}, {"citationID": 1, "reference": "d2", "support": "-1"}]},
            {"sentenceID": 1, "text": "## Summary", "citations": []},
            {"sentenceID": 2, "text": "Bananas are yellow.", "citations": [
                {"citationID": 0, "reference": "d3", "support": "1"}]}]}])
    answers = _jsonl(tmp_path / "a.jsonl", ANSWERS[:1])
    topics = tmp_path / "topics.tsv"
    topics.write_text("t1\ttell me about French cities\n")
    out = tmp_path / "out"
    args = ["trec-rag", "--answers", answers, "--rubrics", files["rubrics"], "--support-assignments", support,
            "--base-url", server.base_url, "--model", "fake", "--out", str(out)]
    assert cli.main(args) == 2 and not out.exists()  # the rubric judge needs the topic's text: no --topics, no query
    assert cli.main(args + ["--topics", str(topics)]) == 0
    assert server.count == 1  # the rubric grading only: the citations were judged already
    s = _scores(out)
    # first: s0 2 -> 1, s2 1 -> .5: P .75, R 1.5 / 3; all judged: s0 mean of the judged (c1 is -1) = 1, same;
    # hard: s0 1, s2 0: P .5, R 1/3
    assert [s["A", "t1", m] for m in ("SupportP", "SupportR", "SupportP(cite='all_judged')",
                                      "SupportR(cite='all_judged')", "SupportP(credit='hard')",
                                      "SupportR(credit='hard')")] == pytest.approx([0.75, 0.5, 0.75, 0.5, 0.5, 1 / 3])
    assert (out / "support_metric_rows.txt").read_text().splitlines() == [
        "A t1 weighted_precision_first_citation 0.75", "A t1 weighted_recall_first_citation 0.5",
        "A t1 weighted_precision_all_judged_citations 0.75", "A t1 weighted_recall_all_judged_citations 0.5",
        "A t1 hard_precision 0.5", "A t1 hard_recall 0.333333"]
    # the toolkit file is written back as it was read
    assert (out / "A.support_assignments.jsonl").read_text() == open(support).read().replace(
        '"topic_id": "t1", "run_id"', '"topic_id": "t1", "narrative_id": "t1", "run_id"')


def test_the_judging_manifest_names_who_judged_each_measure(server, files, tmp_path, capsys):
    """trec-rag wrote no file of who judged (the report said "judges: not recorded"): judging.json names per step the
    measures, the judge's model and kind, the nuggets and rubric it judged against, what failed; per run the topics
    it did not answer."""
    from pyterrier_nuggets.formats.judging_io import read_judging
    answers = _jsonl(tmp_path / "answers2.jsonl", ANSWERS + [
        {"metadata": {"team_id": "us", "run_id": "A", "type": "automatic", "narrative_id": "t2"},
         "references": ["d1"], "answer": [{"text": "Paris.", "citations": [0]}]}])
    nuggets = _jsonl(tmp_path / "nuggets2.jsonl", [NUGGETS, {**NUGGETS, "qid": "t2"}])
    out = tmp_path / "out"
    assert cli.main(["trec-rag", "--answers", answers, "--nuggets", nuggets, "--rubrics", files["rubrics"],
                     "--support", "--docs", files["docs"], "--base-url", server.base_url, "--model", "fake", "--out",
                     str(out)]) == 0
    capsys.readouterr()
    manifest = read_judging(str(out / "judging.json"))
    steps = {s.step: s for s in manifest.steps}
    assert list(steps) == ["assignment", "support", "rubric", "length"]
    assert steps["assignment"].measures[:2] == ["V_strict", "V"] and "SubNarrativeCoverage" in steps["assignment"].measures
    assert "SupportP(cite='all_judged')" in steps["support"].measures and steps["length"].measures == ["AnswerWords"]
    for step in ("assignment", "support", "rubric"):
        judge = steps[step].judge
        assert judge.kind == "test endpoint" and judge.model == "fake" and "TEST ENDPOINT" in judge.label, judge
    assert steps["length"].judge.kind == "counted"
    assert steps["assignment"].source == {"file": nuggets, "items": 6, "topics": 2}
    assert steps["assignment"].files == ["{run}.assignments.jsonl"] and steps["assignment"].failed == []
    assert manifest.runs == {"A": {"answers": 2, "unanswered": []}, "B": {"answers": 1, "unanswered": ["t2"]}}
    assert manifest.unanswered == "zero" and manifest.judge_of("RubricScore").step == "rubric"
    assert "judging.json" in json.loads((out / ".pyterrier-nuggets-outputs.json").read_text())["files"]


def test_on_invalid_drop_says_what_it_dropped(server, files, tmp_path, capsys):
    """--on-invalid drop dropped about 40 of the Mistral nuggets without a word, though its help says 'reported': it
    is said on stderr and in judging.json."""
    from pyterrier_nuggets.formats.judging_io import read_judging
    bad = {**NUGGETS, "nuggets": NUGGETS["nuggets"] + [{"text": "Marseille", "importance": "failed"}]}
    nuggets = _jsonl(tmp_path / "bad.jsonl", [bad])
    out = tmp_path / "out"
    args = ["trec-rag", "--answers", files["answers"], "--nuggets", nuggets, "--base-url", server.base_url, "--model",
            "fake", "--out", str(out)]
    assert cli.main(args) == 2 and "--on-invalid drop" in capsys.readouterr().err
    assert cli.main(args + ["--on-invalid", "drop"]) == 0
    err = capsys.readouterr().err
    assert "dropped: 1 nugget(s) with invalid labels in 1 topic(s)" in err and "importance='failed'" in err, err
    [step] = [s for s in read_judging(str(out / "judging.json")).steps if s.step == "assignment"]
    assert step.dropped == [{"file": nuggets, "line": 1, "qid": "t1", "index": 3, "field": "importance",
                             "value": "failed"}]
    assert step.source["items"] == 3


def test_support_given_as_files_is_named_as_given(server, files, tmp_path, capsys):
    from pyterrier_nuggets.formats.judging_io import read_judging
    support = _jsonl(tmp_path / "support.jsonl", [{"topic_id": "t1", "run_id": "A", "sentences": [
        {"sentenceID": 0, "text": "Paris is the capital.", "citations": [
            {"citationID": 0, "reference": "d1", "support": "2"}, {"citationID": 1, "reference": "d2", "support": "0"}]},
        {"sentenceID": 1, "text": "## Summary", "citations": []},
        {"sentenceID": 2, "text": "Bananas are yellow.", "citations": [
            {"citationID": 0, "reference": "d3", "support": "1"}]}]}])
    out = tmp_path / "out"
    assert cli.main(["trec-rag", "--answers", _jsonl(tmp_path / "a.jsonl", ANSWERS[:1]), "--nuggets", files["nuggets"],
                     "--support-assignments", support, "--base-url", server.base_url, "--model", "fake", "--out",
                     str(out)]) == 0
    capsys.readouterr()
    steps = {s.step: s for s in read_judging(str(out / "judging.json")).steps}
    assert steps["support"].judge.kind == "given" and support in steps["support"].judge.label
    assert steps["assignment"].judge.kind == "test endpoint"


def test_support_assemble_output_of_an_answer_that_repeats_a_reference(server, files, tmp_path, capsys):
    """The toolkit's ``support assemble`` writes one citation per citation of the answer object, a repeat included
    (the real 2024 GPT-4o baseline has 5 such objects); the answer file keeps the repeat once with a warning, and the
    support assignments follow the same rule: the repeat counts once (the first citation of that reference)."""
    repeated = json.loads(json.dumps(ANSWERS[0]))
    repeated["answer"][0]["citations"] = [0, 1, 0]  # d1, d2, d1 again
    answers = _jsonl(tmp_path / "a.jsonl", [repeated])
    support = _jsonl(tmp_path / "support.jsonl", [
        {"topic_id": "t1", "narrative_id": "t1", "run_id": "A", "sentences": [
            {"sentenceID": 0, "text": "Paris is the capital.", "citations": [
                {"citationID": 0, "reference": "d1", "support": "2"}, {"citationID": 1, "reference": "d2", "support": "0"},
                {"citationID": 2, "reference": "d1", "support": "2"}]},
            {"sentenceID": 1, "text": "## Summary", "citations": []},
            {"sentenceID": 2, "text": "Bananas are yellow.", "citations": [
                {"citationID": 0, "reference": "d3", "support": "1"}]}]}])
    out = tmp_path / "out"
    assert cli.main(["trec-rag", "--answers", answers, "--nuggets", files["nuggets"], "--support-assignments",
                     support, "--base-url", server.base_url, "--model", "fake", "--out", str(out)]) == 0
    said = capsys.readouterr().err
    assert f"{answers}:1" in said and f"{support}:1" in said and "sentences[0].citations[2]" in said
    s = _scores(out)
    # all judged: s0 (d1 2, d2 0) -> (1 + 0) / 2 = .5, s2 .5: P .5; the repeated d1 would have made s0 2/3
    assert s["A", "t1", "SupportP(cite='all_judged')"] == pytest.approx(0.5)
    assert s["A", "t1", "SupportP"] == pytest.approx(0.75)


def test_a_support_file_of_other_answers_names_the_run(tmp_path):
    support = _jsonl(tmp_path / "support.jsonl", [
        {"topic_id": "t1", "run_id": "A", "sentences": [
            {"sentenceID": 0, "text": "Paris is the capital.", "citations": [
                {"citationID": 0, "reference": "d1", "support": "2"}, {"citationID": 1, "reference": "d3", "support": "2"},
                {"citationID": 2, "reference": "d2", "support": "1"}]},
            {"sentenceID": 1, "text": "## Summary", "citations": []},
            {"sentenceID": 2, "text": "Bananas are yellow.", "citations": [
                {"citationID": 0, "reference": "d3", "support": "1"}]}]}])
    answers = formats.read_answers(_jsonl(tmp_path / "a.jsonl", ANSWERS[:1]))
    with pytest.raises(formats.InputError, match=r"run A, topic t1, sentence 0: judged citations \[0, 1, 2\], but "
                                                 r"the sentence has 2 citation"):
        formats.check_support(support, formats.read_support_assignments(support), answers)


def test_refusals_write_nothing(server, files, tmp_path):
    too_many = json.loads(json.dumps(ANSWERS[0]))
    too_many["answer"][0]["citations"] = [0, 1, 2, 0]
    bad = _jsonl(tmp_path / "bad.jsonl", [too_many])
    args = ["--nuggets", files["nuggets"], "--base-url", server.base_url, "--model", "fake"]
    assert cli.main(["trec-rag", "--answers", bad, "--out", str(tmp_path / "o1")] + args) == 2
    assert cli.main(["trec-rag", "--answers", bad, "--rules", "2025", "--out", str(tmp_path / "o2")] + args) == 0
    assert cli.main(["trec-rag", "--answers", files["answers"], "--out", str(tmp_path / "o3"), "--support"] + args) == 2
    assert cli.main(["trec-rag", "--answers", files["answers"], "--out", str(tmp_path / "o4")]) == 2  # no nuggets
    assert cli.main(["trec-rag", "--answers", files["answers"], "--nuggets", "no/such-id", "--out",
                     str(tmp_path / "o5")]) == 2
    assert not any((tmp_path / f"o{k}").exists() for k in (1, 3, 4, 5))
    assert server.count > 0  # only the 2025-rules run asked the judge


def _wide_job(tmp_path, runs: int = 4, topics: int = 4):
    """``runs`` x ``topics`` answers of three nuggets each: one assignment call per answer, all independent."""
    answers = [{"metadata": {"team_id": "us", "run_id": f"R{r}", "type": "automatic", "narrative_id": f"t{t}"},
                "references": ["d1"], "answer": [{"text": f"Paris run {r} topic {t}.", "citations": [0]}]}
               for r in range(runs) for t in range(topics)]
    nuggets = [{"qid": f"t{t}", "query": f"topic {t}", "nuggets": [
        {"text": "Paris capital", "importance": "vital"}, {"text": "Lyon city", "importance": "okay"},
        {"text": f"topic {t}", "importance": "okay"}]} for t in range(topics)]
    return _jsonl(tmp_path / "wide.jsonl", answers), _jsonl(tmp_path / "wide-nuggets.jsonl", nuggets)


def test_a_given_concurrency_is_in_flight_from_the_first_request(tmp_path, capsys):
    """``trec-rag --concurrency N``: N requests in flight from the start, never more. The endpoint holds every reply
    until N requests are in flight at once (a barrier, no clock): a client that began below N (slow start from 8)
    would never reach it, and its requests would be let go only after the hold's timeout (counted)."""
    from pyterrier_nuggets.testing import TestEndpoint
    n = 12
    answers, nuggets = _wide_job(tmp_path)  # 16 assignment calls, all independent: more than n
    with TestEndpoint(hold_until=n, hold_timeout=60.0) as endpoint:
        code = cli.main(["trec-rag", "--answers", answers, "--nuggets", nuggets, "--base-url", endpoint.base_url,
                         "--model", "fake", "--concurrency", str(n), "--out", str(tmp_path / "out")])
        assert code == 0, capsys.readouterr().err
        stats = dict(endpoint.stats)
        seen = list(endpoint.in_flight_seen)
    assert stats["accepted"] == 16 and stats["hold_timeouts"] == 0
    assert seen[:n] == list(range(n))  # the first n arrived before any reply left: no slow start
    assert stats["peak_in_flight"] == n  # and never more than the ceiling


def test_without_concurrency_the_limit_is_found_above_8(tmp_path, capsys):
    """Left out, ``--concurrency`` is the default ceiling (256) and the client starts slow, from 8: the endpoint
    holding the replies until 8 are in flight sees exactly 8 first; those 8 replies grow the limit to 12 (1.5 x per
    round trip while requests wait, past the old default's cap of 8), and the next wave, held until 12 are in
    flight, reaches 12 (or the hold's 60 s would run out, counted)."""
    from pyterrier_nuggets.testing import TestEndpoint
    answers, nuggets = _wide_job(tmp_path, runs=8, topics=5)  # 40 calls
    with TestEndpoint(hold_until=(8, 12), hold_timeout=60.0) as endpoint:
        code = cli.main(["trec-rag", "--answers", answers, "--nuggets", nuggets, "--base-url", endpoint.base_url,
                         "--model", "fake", "--out", str(tmp_path / "out")])
        assert code == 0, capsys.readouterr().err
        stats = dict(endpoint.stats)
        seen = list(endpoint.in_flight_seen)
    assert stats["accepted"] == 40 and stats["hold_timeouts"] == 0
    assert seen[:8] == list(range(8))
    assert 12 <= stats["peak_in_flight"] <= 18  # the 12 replies grow the limit to 18 at most (replies no longer held)


def _track(files, server, out, *more):
    """``trec-rag`` with every LLM judge on ``files`` against ``server``, into ``out``."""
    return ["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--rubrics", files["rubrics"],
            "--support", "--docs", files["docs"], "--base-url", server.base_url, "--model", "fake", "--out", str(out),
            *more]


def _same_folders(a, b):
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_workers_give_one_process_outputs_on_one_cache(server, files, tmp_path, capsys):
    """``--workers 2``: the topics over two processes, the outputs byte-identical to one process's, every answer in
    the one response cache (a serial run on it asks nothing), the tables naming the test endpoint that answered in
    the workers. Every request of topic t2 differs from t1's (its own query and sentences), so that no two requests
    race for one cache entry and the calls are exact."""
    answers = json.loads(json.dumps(ANSWERS))
    for a in json.loads(json.dumps(ANSWERS)):
        a["metadata"]["narrative_id"] = "t2"
        a["answer"] = [{**o, "text": o["text"] + " Also t2."} for o in a["answer"]]
        answers.append(a)
    files["answers"] = _jsonl(tmp_path / "two-topics.jsonl", answers)
    nuggets = [NUGGETS, {**NUGGETS, "qid": "t2", "query": "tell me about towns of France"}]
    files["nuggets"] = _jsonl(tmp_path / "two-nuggets.jsonl", nuggets)
    files["rubrics"] = _jsonl(tmp_path / "two-rubrics.jsonl", [RUBRIC, {**RUBRIC, "qid": "t2"}])
    cache = str(tmp_path / "one.sqlite")
    serial_cache = str(tmp_path / "serial.sqlite")
    assert cli.main(_track(files, server, tmp_path / "serial", "--llm-cache", serial_cache)) == 0
    calls = server.count
    capsys.readouterr()
    assert cli.main(_track(files, server, tmp_path / "spread", "--llm-cache", cache, "--workers", "2")) == 0, \
        capsys.readouterr().err
    assert server.count == 2 * calls  # the same requests, asked by the workers
    assert "TEST ENDPOINT" in capsys.readouterr().out
    _same_folders(tmp_path / "serial", tmp_path / "spread")
    assert cli.main(_track(files, server, tmp_path / "again", "--llm-cache", cache)) == 0
    assert server.count == 2 * calls  # one cache: the workers' answers are all in it
    _same_folders(tmp_path / "serial", tmp_path / "again")


def test_dry_run_prints_the_exact_plan_before_any_call(server, files, tmp_path, capsys):
    """``--dry-run`` on a whole submission: the requests of every stage, their tokens and cost, no call; the run then
    makes exactly the planned calls per stage."""
    assert cli.main(_track(files, server, tmp_path / "plan", "--dry-run", "--price", "2.5,10")) == 0
    out = capsys.readouterr().out
    assert server.count == 0 and not (tmp_path / "plan").exists()
    planned = {line.split()[0]: int(line.split()[3]) for line in out.splitlines()
               if line.split()[:1] and line.split()[0] in ("assign", "support", "rubric", "total")}
    assert "prompt tokens" in out and "$" in out
    assert cli.main(_track(files, server, tmp_path / "run")) == 0
    stages = [h.get("x-pyterrier-nuggets-stage") for h in server.headers]
    assert planned["total"] == server.count == sum(planned[s] for s in planned if s != "total")
    assert {s: stages.count(s) for s in set(stages)} == {s: n for s, n in planned.items() if s != "total"}


def test_batch_api_gives_the_online_outputs(server, files, tmp_path, capsys):
    """``--batch``: every request through the test endpoint's Batch API (no chat call), one round per dependent step,
    the outputs byte-identical to the online run's."""
    assert cli.main(_track(files, server, tmp_path / "online", "--llm-cache", str(tmp_path / "a.sqlite"))) == 0
    online = server.count
    assert cli.main(_track(files, server, tmp_path / "batch", "--llm-cache", str(tmp_path / "b.sqlite"), "--batch",
                           "--batch-poll", "0.01")) == 0, capsys.readouterr().err
    assert server.count == online and server.stats["batch_requests"] == online  # no chat call: all in batches
    assert server.stats["batches"] == 3  # assignment, support, rubric grading: one round each
    _same_folders(tmp_path / "online", tmp_path / "batch")


def test_workers_on_a_dead_endpoint_stop_in_one_line_and_leave_nothing(tmp_path, files):
    """``--workers 2`` against an address where nothing listens: the command stops with the endpoint's one-line error
    (exit 1), no traceback, no output folder, and no warning of resources its worker processes left behind (the
    workers finish their groups and hand the error back; the calling process raises it, as one process would)."""
    import os
    import socket
    import subprocess
    import sys
    with socket.socket() as s:  # a free port: nothing listens there once it is closed
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    argv = ["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--support", "--docs",
            files["docs"], "--base-url", dead, "--model", "fake", "--workers", "2", "--out", str(tmp_path / "out")]
    two_topics = [dict(a, metadata={**a["metadata"], "narrative_id": qid}) for a in ANSWERS for qid in ("t1", "t2")]
    argv[2] = _jsonl(tmp_path / "two-topics.jsonl", two_topics)
    argv[4] = _jsonl(tmp_path / "two-nuggets.jsonl", [NUGGETS, {**NUGGETS, "qid": "t2"}])
    done = subprocess.run([sys.executable, "-c", "import sys; from pyterrier_nuggets.cli import main; sys.exit(main())",
                           *argv], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert done.returncode == 1 and len(errors) == 1 and "cannot connect" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and "leaked" not in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_killed_with_sigkill_then_resumed_asks_only_what_was_in_flight(tmp_path):
    """``kill -9`` half way, then the same command: of what the killed command asked, it asks again exactly the
    requests that were in flight at the kill (their replies never reached it), never one whose answer it had read,
    and its outputs are byte-identical to an uninterrupted run's. The endpoint answers the first 20 of 40 requests and
    holds the rest; the command (4 in flight) is killed once the 20 answers are in its cache and 4 more requests are
    held (conditions polled, no clock). Which requests were answered and which held is recorded where it is decided,
    in the responder, not read off the order in which they arrived."""
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import threading
    import time

    from pyterrier_nuggets.testing import TestEndpoint
    answers, nuggets = _wide_job(tmp_path, runs=8, topics=5)  # 40 assignment calls
    answered, held, release, lock = [], [], threading.Event(), threading.Lock()  # the killed command's requests

    def responder(body):
        with lock:
            if release.is_set():  # after the kill: answered at once
                return None
            hold = len(answered) >= 20
            (held if hold else answered).append(json.dumps(body, sort_keys=True))
        if hold:  # held until the test ends: the killed command never reads these
            release.wait(120)
        return None

    def command(out, cache):
        return ["trec-rag", "--answers", answers, "--nuggets", nuggets, "--base-url", endpoint.base_url, "--model",
                "fake", "--concurrency", "4", "--out", str(tmp_path / out), "--llm-cache", str(tmp_path / cache)]

    with TestEndpoint(responder=responder) as endpoint:
        process = subprocess.Popen([sys.executable, "-c", "import sys; from pyterrier_nuggets.cli import main; "
                                    "sys.exit(main())", *command("killed", "cache.sqlite")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "PYTHONPATH": os.getcwd()})
        try:
            for _ in range(2400):  # until 20 answers are stored and 4 requests held (a bound on a failing test)
                assert process.poll() is None, "the command ended before it was killed"
                stored = 0
                if (tmp_path / "cache.sqlite").exists():
                    with contextlib.closing(sqlite3.connect(tmp_path / "cache.sqlite", timeout=5)) as con:
                        with contextlib.suppress(sqlite3.OperationalError):  # its tables not made yet
                            stored = con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
                with lock:
                    holding = len(held)
                if stored == 20 and holding == 4:
                    break
                time.sleep(0.05)
            else:
                pytest.fail(f"never 20 answers stored and 4 requests held: {stored}, {holding}, {endpoint.stats}")
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
            release.set()  # the held replies go (to a closed connection); new requests are answered at once
        assert cli.main(command("resumed", "cache.sqlite")) == 0
        assert cli.main(command("whole", "whole.sqlite")) == 0  # uninterrupted, on a cache of its own
        sent = [json.dumps(b, sort_keys=True) for b in endpoint.requests]
    killed, resumed, whole = sent[:24], sent[24:-40], sent[-40:]  # arrived before the kill, then after, one by one
    assert sorted(killed) == sorted(answered + held) and len(answered) == 20 and len(held) == 4
    assert len(set(whole)) == 40 and set(killed) <= set(whole)
    assert sorted(resumed) == sorted(set(whole) - set(answered))  # the 4 held and the 16 never sent
    assert set(held) <= set(resumed) and not set(resumed) & set(answered)
    _same_folders(tmp_path / "whole", tmp_path / "resumed")
