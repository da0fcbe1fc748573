"""The offline baseline judges: similarity assignment and support, the extractive cited generator, and
the main job that runs on them without an LLM (ManualNuggets of the sample, table provenance, CSV metadata)."""
import math
import re

import pandas as pd
import pytest
from embedded import needs_model

from ir_measures_ext import ids
from pyterrier_nuggets import cli, formats
from pyterrier_nuggets.evaluation import evaluate_answers
from pyterrier_nuggets.judges.generation import GENERATION_COLUMNS
from pyterrier_nuggets.matchers import EmbeddingMatcher, Match, Matcher
from pyterrier_nuggets.matchers.baseline import (
    ASSIGNMENT_SUPPORT,
    ExtractiveGenerator,
    MatcherAssigner,
    MatcherSupportJudge,
)
from pyterrier_nuggets.pipeline import MainJobOptions, build_systems, run_main_job, sample_collection
from pyterrier_nuggets.records import Nugget


class WordMatcher(Matcher):
    """A transparent matcher for the decision logic: score = share of the hypothesis' words in the premise."""

    def describe(self) -> str:
        return "word overlap"

    def scores(self, pairs):
        out = []
        for premise, hypothesis in pairs:
            words = set(hypothesis.lower().replace(".", "").split())
            out.append(len(words & set(premise.lower().replace(".", "").split())) / len(words))
        return out

    def match_batch(self, pairs):
        return [Match(s >= 0.5, s) for s in self.scores(pairs)]


NUGGETS = [Nugget("q1", 0, "bees dance to show food", "vital"), Nugget("q1", 1, "the sun gives direction", "okay"),
           Nugget("q1", 2, "nectar is sweet and sticky", "okay"), Nugget("q2", 0, "aurora lights glow", "vital")]


def answers(*rows):
    return pd.DataFrame([{"qid": q, "qanswer": a, "run_id": "r"} for q, a in rows])


# ----------------------------------------------------------------------------------------------- assignment

def test_assigner_grades_by_threshold():
    out = MatcherAssigner(NUGGETS, WordMatcher(), support=0.75, partial=0.5)(
        answers(("q1", "Bees dance to show where food is, using the sun."), ("q3", "no nuggets here")))
    assert list(out.columns[:4]) == ["qid", "docno", "score", "assignment"] and "run_id" in out.columns
    got = dict(zip(out["docno"], out["assignment"]))
    # 5/5 words; 2/4 words ("the sun"); 0/5 words; topic q3 has no nuggets: no rows
    assert got == {"q1:n0": ids.SUPPORT, "q1:n1": ids.PARTIAL_SUPPORT, "q1:n2": ids.NOT_SUPPORT}
    assert list(out["score"]) == [1.0, 0.5, 0.0]


def test_assigner_default_has_no_partial_and_empty_answers_support_nothing():
    out = MatcherAssigner(NUGGETS, WordMatcher(), support=0.5)(answers(("q1", "the sun"), ("q2", "  ")))
    assert dict(zip(out["docno"], out["assignment"])) == {
        "q1:n0": ids.NOT_SUPPORT, "q1:n1": ids.SUPPORT, "q1:n2": ids.NOT_SUPPORT, "q2:n0": ids.NOT_SUPPORT}
    with pytest.raises(ValueError, match="partial"):
        MatcherAssigner(NUGGETS, WordMatcher(), support=0.5, partial=0.6)


def test_assigner_real_embedding_threshold():
    """The calibrated threshold on the shipped encoder: a paraphrase is support, an unrelated nugget is not."""
    assigner = MatcherAssigner([Nugget("q", 0, "Honey bees communicate food locations with a waggle dance", "vital"),
                                Nugget("q", 1, "Volcanoes erupt when magma pressure builds up", "okay")])
    assert assigner.support == ASSIGNMENT_SUPPORT == 0.63
    out = assigner(answers(("q", "A forager bee performs the waggle dance to tell its nestmates where flowers are.")))
    assert list(out["assignment"]) == [ids.SUPPORT, ids.NOT_SUPPORT]
    assert "baseline" in assigner.describe() and "all-MiniLM-L6-v2" in assigner.describe()
    # the measured agreement is claimed for the calibrated setting only
    assert "kappa 0.24-0.27" in assigner.describe()
    for other in (MatcherAssigner([], support=0.7), MatcherAssigner([], partial=0.5),
                  MatcherAssigner([], WordMatcher())):
        assert "kappa" not in other.describe() and "agreement not measured" in other.describe()


# ----------------------------------------------------------------------------------------------- support

def answer_frame(sentences, references, texts):
    return pd.DataFrame([{"qid": "q1", "run_id": "r", "sentences": sentences, "references": references,
                          "reference_texts": texts}])


def test_support_judge_grades_first_citations_and_uncited_sentences():
    frame = answer_frame([{"text": "bees dance to show food", "citations": [0, 1]},
                          {"text": "the sun gives direction", "citations": [1]},
                          {"text": "nectar is sweet", "citations": []}],
                         ["d0", "d1"], ["Bees dance to show food to others.", "The moon gives light."])
    out = MatcherSupportJudge(WordMatcher(), full=0.9, partial=0.5)(frame)
    assert list(out.columns[:6]) == ["qid", "sentence", "citation", "docno", "support", "score"]
    rows = list(zip(out["sentence"], [None if pd.isna(d) else d for d in out["docno"]], out["support"]))
    # sentence 0: only the first citation judged (5/5 words); sentence 1: 2/4 words; sentence 2: uncited
    assert rows == [(0, "d0", ids.FULL), (1, "d1", ids.PARTIAL), (2, None, ids.NONE)]
    every = MatcherSupportJudge(WordMatcher(), full=0.9, partial=0.5, citations="all")(frame)
    assert list(zip(every["sentence"], every["docno"].fillna("-"))) == [(0, "d0"), (0, "d1"), (1, "d1"), (2, "-")]


def test_support_judge_refuses_a_citation_outside_the_references():
    frame = answer_frame([{"text": "x", "citations": [3]}], ["d0"], ["x"])
    with pytest.raises(ValueError, match="cites reference 3"):
        MatcherSupportJudge(WordMatcher())(frame)


# ------------------------------------------------------------------------------------------ generation

SEGMENTS = pd.DataFrame([
    {"qid": "q1", "query": "how do bees find food", "docno": "a", "rank": 0,
     "text": "Bees live in hives. Bees find food by following the waggle dance of foragers."},
    {"qid": "q1", "query": "how do bees find food", "docno": "b", "rank": 1,
     "text": "Bees find food by following the waggle dance of foragers. Honey is stored in combs."},
    {"qid": "q1", "query": "how do bees find food", "docno": "c", "rank": 2,
     "text": "Foragers find food by scent of flowers. Wax is made by young bees."},
    {"qid": "q1", "query": "how do bees find food", "docno": "d", "rank": 3, "text": "Bees find food far away."},
])


def test_extractive_generator_picks_cites_and_skips_duplicates():
    out = ExtractiveGenerator(3, matcher=WordMatcher(), run_id="ext", redundant=0.9)(SEGMENTS.sample(frac=1, random_state=1))
    assert list(out.columns) == GENERATION_COLUMNS[:2] + ["run_id"] + GENERATION_COLUMNS[2:]
    row = out.iloc[0]
    assert row["references"] == ["a", "b", "c"]  # the top 3 by rank, whatever the input order
    # a: its sentence about finding food; b: its best sentence is a's again (redundant: dropped, not replaced
    # by b's less similar one); c: its food sentence
    assert row["sentences"] == [
        {"text": "Bees find food by following the waggle dance of foragers.", "citations": [0]},
        {"text": "Foragers find food by scent of flowers.", "citations": [2]}]
    assert row["qanswer"] == ("Bees find food by following the waggle dance of foragers. "
                              "Foragers find food by scent of flowers.")
    assert row["reference_texts"][2] == SEGMENTS["text"][2] and row["problems"] == []


def test_extractive_generator_word_budget_and_k():
    out = ExtractiveGenerator(4, matcher=WordMatcher(), max_words=15)(SEGMENTS)
    texts = [s["text"] for s in out.iloc[0]["sentences"]]
    # a's sentence (10 words); c's (7 words) would pass 15 words: left out; d's (5 words) fits
    assert texts == ["Bees find food by following the waggle dance of foragers.", "Bees find food far away."]
    with pytest.raises(ValueError, match="k must be"):
        ExtractiveGenerator(21)


def test_extractive_answers_through_the_evaluation_route():
    """Extractive sentences are copied from what they cite: the similarity support judge finds full support."""
    generated = ExtractiveGenerator(3, run_id="ext")(SEGMENTS)
    nuggets = [Nugget("q1", 0, "Bees follow the waggle dance of foragers to find food", "vital"),
               Nugget("q1", 1, "Wax comes from young bees", "okay")]
    evaluated = evaluate_answers(generated, MatcherAssigner(nuggets), MatcherSupportJudge())
    assert set(evaluated.support["support"]) == {ids.FULL}
    assert dict(zip(evaluated.assigned["docno"], evaluated.assigned["assignment"]))["q1:n0"] == ids.SUPPORT
    kinds = evaluated.rows["eval_row"].value_counts().to_dict()
    assert kinds == {"nugget": 2, "support": len(generated.iloc[0]["sentences"]), "words": 1}


# ------------------------------------------------------------------------------------ the offline main job

@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("indexes")


@pytest.mark.slow
def test_offline_main_job_on_the_sample(tmp_path, index_dir):
    collection = sample_collection(qids=["t01", "t04", "t09"])
    assert collection.nuggets is not None  # the hand-written nuggets shipped with the sample
    systems = build_systems(["bm25:1", "dense:5", "bm25:3"])
    out = tmp_path / "out"
    result = run_main_job(collection, systems, str(out), judges="baseline",
                          options=MainJobOptions(index_dir=index_dir, log=lambda m: None))
    assert result.condition == "ManualNuggets / baseline assignment (embedding similarity)"
    assert result.llm_stats == {}  # no LLM was made or asked
    table = result.table
    assert table.provenance["nuggets"].startswith("ManualNuggets: hand-written")
    assert "baseline" in table.provenance["assignment"] and "baseline" in table.provenance["support"]
    # the arena step: the offline pairwise judge is the nugget-coverage baseline, named as such in every output
    assert table.provenance["arena"].startswith("baseline: prefers the answer covering more nuggets")
    assert "not an LLM pairwise judge" in table.provenance["arena"]
    board = pd.read_csv(out / "leaderboard.csv").set_index("run_id")
    assert set(board.index) == {"bm25-k1", "dense-k5", "bm25-k3"} and board["arena_score"].mean() == \
        pytest.approx(1000)
    assert (board["judge"] == table.provenance["arena"].split("; every pair")[0]).all()
    # with one virtual tie per pair the fit exists in every resample of a few topics: finite intervals, the prior said
    assert (board["prior"] == 1).all() and board[["ci_low_topics", "ci_high_topics"]].abs().lt(float("inf")).all().all()
    assert "a prior of 1 virtual tie per pair that met" in table.to_text()
    assert len(formats.read_battles(str(out / "battles.jsonl"))) == 3 * 3  # 3 pairs on 3 topics
    assert "Arena" in table.to_text().splitlines()[len(table.provenance_lines())]
    assert all("extractive baseline" in p["generation"] for p in table.system_provenance.values())
    text = table.to_text()
    assert text.splitlines()[0].startswith("nuggets: ManualNuggets") and "assignment: baseline" in text
    csv = pd.read_csv(out / "joint_table.csv")
    assert {"nuggets", "assignment", "support", "generation"} <= set(csv.columns)
    assert (csv["assignment"] == table.provenance["assignment"]).all()
    assert result.notes[0].startswith("judged by: nuggets: ManualNuggets")
    # files for publication and printed notes name the shipped nuggets as such, not by this machine's path
    assert "sample:collection/nuggets.jsonl" in table.provenance["nuggets"]
    for name in ("joint_table.csv", "joint_table.md", "joint_table.tex"):
        assert "site-packages" not in (out / name).read_text() and str(tmp_path) not in (out / name).read_text()
    assert not any("site-packages" in n for n in result.notes)
    assert any(n.startswith("Kendall's τ-b between the system orderings by nDCG@10 and by V_strict")
               for n in result.notes)
    # the extractive answers are fully supported; longer answers (k) cover at least as many nuggets here
    means = table.means
    assert (means["SupportP"] == 1.0).all()
    assert means.loc["bm25-k3", "AnswerWords"] > means.loc["bm25-k1", "AnswerWords"]
    # the nugget scores are those of the written assignments, graded by the calibrated threshold
    nuggets = formats.read_nuggets(collection.nuggets)
    written = formats.read_assignments(str(out / "dense-k5.assignments.jsonl"))
    matcher = EmbeddingMatcher()
    for answer in written.answers:
        texts = {n.index: n.text for n in nuggets.nuggets if n.qid == answer.qid}
        scores = matcher.scores([(answer.answer_text, texts[n.index]) for n in answer.nuggets])
        assert [x.assignment for x in answer.assignments] == [
            ids.SUPPORT if s >= 0.63 else ids.NOT_SUPPORT for s in scores]
        vital = [x.assignment == ids.SUPPORT for n, x in zip(answer.nuggets, answer.assignments)
                 if n.importance == "vital"]
        per_topic = table.per_query.query("system == 'dense-k5' and measure == 'V_strict' and qid == @answer.qid")
        assert math.isclose(per_topic["value"].iloc[0], sum(vital) / len(vital))


def test_offline_job_needs_nuggets_without_the_sample(tmp_path, index_dir):
    collection = sample_collection(qids=["t01"])
    collection.nuggets = None
    with pytest.raises(ValueError, match="need nuggets"):
        run_main_job(collection, build_systems(["bm25:1"]), str(tmp_path / "o"), judges="baseline",
                     options=MainJobOptions(index_dir=index_dir, log=lambda m: None))


def test_cli_demo_offline_by_default(tmp_path, index_dir, capsys, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    code = cli.main(["demo", "--topics", "t02", "t06", "--system", "bm25:2", "--system", "dense:2", "--out",
                     str(tmp_path / "o"), "--index-dir", str(index_dir), "--no-plots"])
    out = capsys.readouterr().out
    assert code == 0
    assert "ManualNuggets / baseline assignment (embedding similarity)" in out
    assert "support: baseline: embedding all-MiniLM-L6-v2" in out and "LLM work per stage" not in out
    # asking for the endpoint without one is a usage error, before anything runs
    code = cli.main(["demo", "--llm", "endpoint", "--out", str(tmp_path / "p")])
    assert code == 2 and "no endpoint is configured" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


@pytest.mark.slow
@needs_model
def test_cli_demo_offline_default_systems_with_the_embedded_writer(tmp_path, index_dir, capsys, monkeypatch):
    """`bash run.sh demo`'s job on one topic: the seven default systems, one of them written by SmolLM2 for real
    (the only LLM call offline); a second run asks no model."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    args = ["demo", "--topics", "t04", "--index-dir", str(index_dir), "--llm-cache", str(tmp_path / "c.sqlite")]
    assert cli.main(args + ["--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "o" / "joint_table.csv")
    assert list(table["system"]) == ["bm25-k1", "bm25-k3", "bm25-k5", "dense-k1", "dense-k3", "dense-k5",
                                     "bm25-k3-smollm2"]
    assert "SmolLM2" in table["generation"].iloc[-1] and "extractive" in table["generation"].iloc[0]
    assert "ManualNuggets" in out and "Kendall's τ-b between the system orderings" in out
    assert re.search(r"^generate\s+1\s+0\s+1\s+0\s+1\s", out, re.M)  # one answer written, one call
    assert cli.main(args + ["--out", str(tmp_path / "again")]) == 0
    assert re.search(r"^generate\s+1\s+0\s+1\s+1\s+0\s", capsys.readouterr().out, re.M)  # from the cache


def test_vector_cache_makes_a_rerun_load_no_encoder(tmp_path):
    pairs = [("Bees dance in the hive.", "Honey bees perform a waggle dance"), ("Magma rises.", "Volcanoes erupt")]
    first = EmbeddingMatcher(cache=tmp_path / "v.sqlite")
    scores = first.scores(pairs)
    assert first._encoder is not None
    again = EmbeddingMatcher(cache=tmp_path / "v.sqlite")
    assert again.scores(pairs) == scores and again._encoder is None  # every vector from the file
    from pyterrier_nuggets.matchers.embedding import VectorCache
    assert VectorCache(tmp_path / "v.sqlite", "another-model").get([p for p, _ in pairs]) == {}  # keyed by model
    assert EmbeddingMatcher().scores(pairs[:1])[0] == pytest.approx(scores[0], abs=1e-6)
