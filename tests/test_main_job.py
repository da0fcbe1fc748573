"""The main job (``pyterrier-nuggets demo``): option parsing, an end-to-end smoke test on a cut-down sample
with the fake LLM server (PISA BM25 + dense retrieval, generation, AutoNuggets, assignment, support,
table, plots), the imported-nugget and imported-assignment conditions, and one topic with the embedded
model (slow)."""
import json
import os

import pandas as pd
import pytest
from embedded import needs_model

from pyterrier_nuggets import cli, formats
from pyterrier_nuggets.cli.demo import make_llm
from pyterrier_nuggets.evaluation.plots import pareto_front
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.pipeline import (
    SAMPLE_COLLECTION,
    AutoNuggets,
    BaselineJudges,
    LLMJudges,
    MainJobOptions,
    ManualNuggets,
    NuggetFile,
    SystemSpec,
    build_systems,
    evaluation_condition,
    parse_system,
    run_main_job,
    sample_collection,
)
from pyterrier_nuggets.records import Nugget

TOPICS = ["t01", "t07"]


# Generation: two cited sentences copied from passages [1] and [2]; support: word overlap; the
# AutoNuggetizer prompts: the fake server's automatic replies (the conftest's default server).


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("indexes")


def quiet(index_dir) -> MainJobOptions:
    """The main job's options of these tests: the shared index folder, no progress lines."""
    return MainJobOptions(index_dir=index_dir, log=lambda m: None)


# ------------------------------------------------------------------------------------------- parsing

def test_parse_system():
    assert parse_system("bm25:3") == SystemSpec("bm25-k3", "bm25", 3)
    assert parse_system("dense") == SystemSpec("dense-k5", "dense", 5)
    assert parse_system("mine=bm25:10") == SystemSpec("mine", "bm25", 10)
    assert parse_system("dense:3:llm") == SystemSpec("dense-k3-llm", "dense", 3, generator="llm")
    assert parse_system("x=bm25:2:extractive") == SystemSpec("x", "bm25", 2, generator="extractive")
    for bad in ("splade:5", "bm25:x", "bm25:0", "bm25:21", "bm25:3:gpt"):
        with pytest.raises(ValueError):
            parse_system(bad)
    with pytest.raises(ValueError, match=r"system 'bm25:21': K must be between 1 and 20 .*got 21"):
        parse_system("bm25:21")
    assert build_systems(runs=["a=a.run"])[0].k == 5  # -k not given
    with pytest.raises(ValueError, match="-k must be between 1 and 20"):  # refused before any work
        build_systems(runs=["a=a.run"], k=21)


def test_build_systems_defaults_and_files():
    assert [s.name for s in build_systems(mode="embedded")] == ["bm25-k5", "dense-k5"]
    offline = build_systems()
    assert [s.name for s in offline] == ["bm25-k1", "bm25-k3", "bm25-k5", "dense-k1", "dense-k3", "dense-k5",
                                         "bm25-k3-smollm2"]
    assert [s.generator for s in offline] == [None] * 6 + ["llm"]
    assert len(build_systems(mode="endpoint")) == 6
    systems = build_systems(runs=["a=a.run"], answers=["a=a.jsonl", "b=b.jsonl"], assignments=["b=b.assign"], k=7)
    assert systems == [SystemSpec("a", None, 7, run="a.run", answers="a.jsonl"),
                       SystemSpec("b", None, 7, answers="b.jsonl", assignments="b.assign")]
    with pytest.raises(ValueError, match="NAME=PATH"):
        build_systems(runs=["a.run"])
    with pytest.raises(ValueError, match="twice"):
        build_systems(runs=["a=1", "a=2"])
    with pytest.raises(ValueError, match="two systems"):
        build_systems(["bm25:5", "bm25:5"])


def test_condition_names():
    auto, imported = SystemSpec("a", "bm25"), SystemSpec("b", None, assignments="x")
    assert evaluation_condition(AutoNuggets(), [auto], LLMJudges()) == "AutoNuggets / AutoAssign"
    assert evaluation_condition(NuggetFile("n.jsonl"), [imported], LLMJudges()) == \
        "imported nuggets / imported assignments"
    assert evaluation_condition(ManualNuggets("n.jsonl"), [auto], BaselineJudges()) == \
        "ManualNuggets / baseline assignment (embedding similarity)"


def test_cli_options_parse(monkeypatch):
    seen = {}
    monkeypatch.setattr("pyterrier_nuggets.cli.demo.run_demo", lambda args: seen.setdefault("args", args) and 0)
    cli.main(["demo", "--dataset", "msmarco-segment-v2.1/trec-rag-2024", "--system", "bm25:3", "--run",
              "x=x.run", "--answers", "x=x.jsonl", "--nuggets", "n.jsonl", "--base-url", "http://127.0.0.1:1/v1",
              "--model", "m", "--topics", "t1", "t2", "--strict", "--no-plots"])
    a = seen["args"]
    assert (a.dataset, a.system, a.run, a.answers, a.nuggets, a.base_url, a.model, a.topics, a.on_failure,
            a.no_plots) == (
        "msmarco-segment-v2.1/trec-rag-2024", ["bm25:3"], ["x=x.run"], ["x=x.jsonl"], "n.jsonl",
        ["http://127.0.0.1:1/v1"], "m", ["t1", "t2"], "stop", True)  # --base-url may be repeated: a list; --strict is
    # the first spelling of --on-failure stop


def test_make_llm_endpoint_and_key(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm = make_llm("http://127.0.0.1:9/v1", "m", cache=str(tmp_path / "c.sqlite"))
    assert (llm.embedded, llm.base_url, llm.model) == (False, "http://127.0.0.1:9/v1", "m")
    with pytest.raises(ValueError, match="no LLM endpoint") as err:
        make_llm(None, "gpt-x")
    assert "--base-url" in err.value.for_command_line()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert "sk-test" not in repr(make_llm("http://127.0.0.1:9/v1", "m", cache=None))


def test_sample_collection_is_complete():
    c = sample_collection()
    assert len(c.docstore) >= 200 and 8 <= len(c.topics) <= 15
    assert set(c.qrels["label"]) == {0, 1, 2, 3}
    assert set(c.qrels["docno"]) <= set(c.docstore)
    assert (c.qrels[c.qrels["label"] > 0].groupby("qid").size() >= 3).all()
    size = sum(os.path.getsize(os.path.join(SAMPLE_COLLECTION, f)) for f in os.listdir(SAMPLE_COLLECTION))
    assert size < 1_000_000


def test_pareto_front():
    points = {"short": (50, 0.3), "long": (200, 0.6), "bad": (210, 0.4), "tie": (50, 0.2)}
    assert pareto_front(points) == ["short", "long"]


# ------------------------------------------------------------------------------- end to end (fake LLM)

def test_main_job_end_to_end(llm, tmp_path, index_dir):
    collection = sample_collection(qids=TOPICS)
    systems = build_systems(["bm25:2", "dense:3"])
    out = tmp_path / "out"
    result = run_main_job(collection, systems, str(out), judges=LLMJudges(llm), options=quiet(index_dir))
    table = result.table.means
    assert list(table.index) == ["bm25-k2", "dense-k3"]
    assert list(table.columns) == ["nDCG@10", "V_strict", "A_strict", "W", "SupportP", "SupportR", "AnswerWords"]
    assert (table["nDCG@10"] > 0.3).all()  # the topics' relevant passages are found
    assert ((table["V_strict"] >= 0) & (table["V_strict"] <= 1)).all() and (table["W"] > 0).all()
    assert (table["SupportP"] > 0).all() and (table["AnswerWords"] > 5).all()
    assert result.condition == "AutoNuggets / AutoAssign"
    for name in ("joint_table.csv", "ndcg_vs_vstrict.png", "vstrict_vs_words.png", "nuggets.jsonl", "nuggets.qrels",
                 "bm25-k2.segments.run", "bm25-k2.answers.jsonl", "bm25-k2.assignments.jsonl",
                 "dense-k3.support.jsonl", "dense-k3.eval.run"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "ndcg_vs_vstrict.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the table's tests are Holm-corrected over the table (they were uncorrected over its 42 tests), none on length
    assert result.table.correction == "holm" and "holm-corrected over the table's" in result.table.note()
    assert result.table.pvalues["AnswerWords"].isna().all()
    # the arena step on the LLM pairwise judge: a rating column, or a note saying why there is none
    if "arena" in result.table.provenance:
        assert result.table.provenance["arena"].startswith("PairwiseJudge (naive prompt, one order, seed 0) on fake")
        assert len(formats.read_battles(str(out / "battles.jsonl"))) == len(TOPICS)
    else:
        assert any(n.startswith("arena: no ratings") for n in result.notes), result.notes
    answers = formats.read_answers(str(out / "bm25-k2.answers.jsonl"))
    assert sorted(a.qid for a in answers) == TOPICS and all(len(a.references) == 2 for a in answers)
    # the second run: indexes reused, every LLM request answered by the cache
    calls = llm.stats["calls"]
    again = run_main_job(collection, systems, str(tmp_path / "again"), judges=LLMJudges(llm), options=quiet(index_dir))
    assert llm.stats["calls"] == calls
    pd.testing.assert_frame_equal(again.table.means, result.table.means)


def test_cli_demo_prints_table(server, tmp_path, index_dir, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = cli.main(["demo", "--topics", "t03", "--system", "bm25:2", "--system", "bm25:4", "--out",
                     str(tmp_path / "o"), "--base-url", server.base_url, "--model", "fake", "--llm-cache",
                     str(tmp_path / "c.sqlite"), "--index-dir", str(index_dir), "--no-plots"])
    out = capsys.readouterr().out
    assert code == 0
    assert "AutoNuggets / AutoAssign" in out and "bm25-k2" in out and "bm25-k4" in out and "V_strict" in out
    assert not (tmp_path / "o" / "ndcg_vs_vstrict.png").exists()
    first = set(os.listdir(tmp_path / "o"))
    assert {"bm25-k2.answers.jsonl", "joint_table.csv"} <= first and f"written to {tmp_path / 'o'}: " in out
    # a second run of other systems into the same folder is refused (the first run's outputs are there) ...
    again = ["demo", "--topics", "t03", "--system", "bm25:3", "--out", str(tmp_path / "o"), "--base-url",
             server.base_url, "--model", "fake", "--llm-cache", str(tmp_path / "c.sqlite"), "--index-dir",
             str(index_dir), "--no-plots"]
    assert cli.main(again) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds the outputs of an earlier run" in err and "--overwrite" in err
    assert set(os.listdir(tmp_path / "o")) == first
    # ... and with --overwrite the folder holds the second run's outputs only
    assert cli.main([*again, "--overwrite"]) == 0
    second = set(os.listdir(tmp_path / "o"))
    assert "bm25-k3.answers.jsonl" in second and "bm25-k2.answers.jsonl" not in second


def test_imported_nuggets_and_assignments(llm, tmp_path, index_dir):
    """Imported nuggets with LLM assignment (AutoAssign), and imported assignments with no LLM at all
    (ManualAssign): the table scores exactly what the assignment file says."""
    collection = sample_collection(qids=["t05"])
    nuggets = [Nugget(qid="t05", index=0, text="rennet coagulates milk proteins into curd",
                              importance="vital"),
               Nugget(qid="t05", index=1, text="cheese ripens for weeks or years", importance="okay")]
    nuggets_path = str(tmp_path / "nuggets.jsonl")
    formats.write_nuggets(nuggets_path, nuggets, {"t05": "how is cheese made from milk"})
    result = run_main_job(collection, build_systems(["bm25:3"]), str(tmp_path / "a"), judges=LLMJudges(llm),
                          nuggets=nuggets_path, options=quiet(index_dir))
    assert result.condition == "imported nuggets / AutoAssign"
    assert sorted(result.nuggets["nugget_id"]) == ["t05:n0", "t05:n1"]

    # imported answers (those just generated), assigned and judged by the LLM
    answers_path = tmp_path / "a" / "bm25-k3.answers.jsonl"
    result = run_main_job(collection, build_systems(answers=[f"mine={answers_path}"]), str(tmp_path / "c"),
                          judges=LLMJudges(llm), nuggets=nuggets_path, options=quiet(index_dir))
    assert list(result.table.means.columns) == ["V_strict", "A_strict", "W", "SupportP", "SupportR", "AnswerWords"]
    assert result.systems[0].notes == [f"answers imported from {answers_path}"]
    assert result.table.means.loc["mine", "AnswerWords"] > 0

    # imported assignments: first nugget supported, second not -> V_strict = 1 (one vital, supported)
    assign = {"qid": "t05", "run_id": "manual", "query": "how is cheese made from milk",
              "answer_text": "Rennet makes milk proteins coagulate into curd.",
              "nuggets": [{"text": "rennet coagulates milk proteins into curd", "importance": "vital",
                           "assignment": "support"},
                          {"text": "cheese ripens for weeks or years", "importance": "okay",
                           "assignment": "not_support"}]}
    assign_path = tmp_path / "manual.assignments.jsonl"
    assign_path.write_text(json.dumps(assign) + "\n")
    run_path = tmp_path / "manual.run"
    run_path.write_text("t05 Q0 p001 1 3.0 manual\nt05 Q0 p002 2 2.0 manual\n")
    calls = llm.stats["calls"]
    systems = build_systems(runs=[f"manual={run_path}"], assignments=[f"manual={assign_path}"])
    result = run_main_job(collection, systems, str(tmp_path / "b"), options=quiet(index_dir))
    assert llm.stats["calls"] == calls
    assert result.condition == "imported nuggets / imported assignments"
    row = result.table.means.loc["manual"]
    assert (row["V_strict"], row["AnswerWords"]) == (1.0, 7.0)
    assert "nDCG@10" in result.table.means.columns


def test_cli_demo_on_invalid(tmp_path, index_dir, capsys):
    """Imported assignments with an invalid label: refused by default; --on-invalid drop leaves that nugget
    out, says so, and scores the rest (the real TREC RAG 2024 baseline files have such topics)."""
    good = {"text": "rennet coagulates milk proteins into curd", "importance": "vital", "assignment": "support"}
    bad = {"text": "cheese ripens for weeks or years", "importance": "okay", "assignment": "maybe"}
    assign = tmp_path / "manual.assignments.jsonl"
    assign.write_text(json.dumps({"qid": "t05", "run_id": "manual", "query": "how is cheese made from milk",
                                  "answer_text": "Rennet makes milk proteins coagulate.", "nuggets": [good, bad]})
                      + "\n")
    run = tmp_path / "manual.run"
    run.write_text("t05 Q0 p001 1 3.0 manual\n")
    args = ["demo", "--topics", "t05", "--run", f"manual={run}", "--assignments", f"manual={assign}",
            "--index-dir", str(index_dir), "--no-plots"]
    assert cli.main([*args, "--out", str(tmp_path / "refused")]) != 0
    assert "maybe" in capsys.readouterr().err
    assert not (tmp_path / "refused" / "joint_table.csv").exists()
    assert cli.main([*args, "--out", str(tmp_path / "dropped"), "--on-invalid", "drop"]) == 0
    out = capsys.readouterr().out
    assert f"note: manual: {assign}: dropped 1 nugget(s) with invalid labels in 1 topic(s)" in out
    table = (tmp_path / "dropped" / "joint_table.csv").read_text()
    assert "manual" in table and "V_strict" in table


# ------------------------------------------------------------------------------------ embedded model

@pytest.mark.slow
@needs_model
def test_main_job_embedded_one_topic(tmp_path, index_dir, monkeypatch):
    """`--llm embedded`: the embedded SmolLM2 model for every LLM step, on one topic, BM25 top 3."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm = LLMClient(embedded=True, cache=tmp_path / "cache.sqlite", progress=False)
    assert llm.embedded
    result = run_main_job(sample_collection(qids=["t02"]), build_systems(["bm25:3", "bm25:1"]), str(tmp_path / "o"),
                          judges=LLMJudges(llm), options=quiet(index_dir))
    means = result.table.means
    assert list(means.index) == ["bm25-k3", "bm25-k1"]
    assert means["nDCG@10"].iloc[0] > 0
    assert ((means["V_strict"] >= 0) & (means["V_strict"] <= 1)).all()
    assert (tmp_path / "o" / "vstrict_vs_words.png").exists()
