"""One pt.Experiment comparing two RAG pipelines: nDCG@10 on their segments and nugget, support and length
measures on their answers, with per-query output and a baseline significance test (fake LLM server)."""
import re

import ir_measures
import pandas as pd
import pyterrier as pt
import pytest
from embedded import embedded_client, needs_model

import ir_measures_ext
from ir_measures_ext import ids
from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import RAG_MEASURES, RAGEvaluation, Segments, rag_qrels, run_frame, score
from pyterrier_nuggets.formats import frame_to_judgments, nugget_qrels
from pyterrier_nuggets.judges import CitedGenerator, NuggetAssigner, SupportJudge

nDCG10 = ir_measures.nDCG @ 10

TOPICS = pd.DataFrame({"qid": ["t1", "t2", "t3"],
                       "query": ["capital of france", "color of bananas", "height of everest"]})
FACTS = {"t1": ["Paris is the capital of France", "Paris has many museums", "France uses the euro"],
         "t2": ["Ripe bananas are yellow", "Unripe bananas are green", "Bananas grow in clusters"],
         "t3": ["Everest is 8849 metres high", "Everest lies in the Himalaya", "Climbers need oxygen"]}
CORPUS = {f"{q}-d{i}": (FACTS[q][i] if i < 3 else f"Filler text number {i} about nothing") + "."
          for q in FACTS for i in range(12)}


def retriever(order):
    """A fixed-result retriever: 12 segments per topic in the given order, small dense-like scores."""
    rows = [{"qid": q, "query": query, "docno": f"{q}-d{i}", "score": 0.9 - 0.05 * r, "rank": r,
             "text": CORPUS[f"{q}-d{i}"]}
            for q, query in zip(TOPICS["qid"], TOPICS["query"]) for r, i in enumerate(order)]
    return pt.Transformer.from_df(pd.DataFrame(rows))

GOOD = list(range(12))  # the three relevant segments first
POOR = [5, 6, 2, 7, 8, 9, 10, 11, 3, 4, 1, 0]  # one relevant segment at rank 3, the others below 10


def reply(body):
    prompt = body["messages"][-1]["content"]
    if "Passages:" in prompt:  # generator: one sentence per passage 1 and 2, and an uncited one
        passages = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.M)
        first, second = passages[0][1], passages[1][1]
        return f"{first.rstrip('.')} [1]. {second.rstrip('.')} [2][1]. That is all."
    return None  # the test endpoint's reply: support judge (word overlap) and nugget assignment


@pytest.fixture
def responder():
    return reply


@pytest.fixture
def nuggets():
    rows = []
    for q, query in zip(TOPICS["qid"], TOPICS["query"]):
        for i, fact in enumerate(FACTS[q]):
            rows.append({"qid": q, "query": query, "nugget_index": i, "nugget_id": f"{q}:n{i}",
                         "nugget_text": fact, "importance": "vital" if i < 2 else "okay"})
    return pd.DataFrame(rows)


@pytest.fixture
def segment_qrels():
    return pd.DataFrame([{"qid": q, "docno": f"{q}-d{i}", "label": 3 - i} for q in FACTS for i in range(3)]
                        + [{"qid": q, "docno": f"{q}-d5", "label": 0} for q in FACTS])


def test_rag_evaluation_rows(llm, nuggets):
    out = (retriever(GOOD) >> RAGEvaluation(CitedGenerator(llm, k=5), nuggets, llm))(TOPICS.iloc[:1])
    kinds = out["eval_row"].tolist()
    assert kinds[:12] == ["segment"] * 12 and set(kinds[12:]) == {"nugget", "support", "uncited", "words"}
    assert out.loc[out["eval_row"] == "segment", "docno"].tolist() == [f"t1-d{i}" for i in range(12)]
    evaluation = out[out["eval_row"] != "segment"]
    assert evaluation["rank"].min() > out.loc[out["eval_row"] == "segment", "rank"].max()
    assert set(evaluation["docno"]) == {"t1:n0", "t1:n1", "t1:n2", "t1:s0:c0:t1-d0", "t1:s1:c0:t1-d1",
                                        "t1:s2:uncited", "t1:words"}
    assert out["qanswer"].iloc[0] == "Paris is the capital of France. Paris has many museums. That is all."
    assert ids.row_value(evaluation.set_index("docno").loc["t1:words", "score"]) == 13.0
    assert evaluation["score"].max() < out.loc[out["eval_row"] == "segment", "score"].min()  # never outranks


def test_one_experiment_two_pipelines(llm, nuggets, segment_qrels, tmp_path):
    pipelines = [retriever(GOOD) >> RAGEvaluation(CitedGenerator(llm, k=5, run_id="good"), nuggets, llm),
                 retriever(POOR) >> RAGEvaluation(CitedGenerator(llm, k=5, run_id="poor"), nuggets, llm)]
    measures = [Segments(nDCG10), *RAG_MEASURES]
    qrels = rag_qrels(segment_qrels, nuggets)
    # one call: means with significance tests against the baseline; per-query values and the evaluation
    # runs (TREC files, re-scorable with the ir_measures command line) in save_dir
    table = pt.Experiment(pipelines, TOPICS, qrels, measures, names=["good", "poor"], baseline=0,
                          save_dir=str(tmp_path))
    perquery = pd.read_csv(tmp_path / "perquery.csv", dtype={"qid": str})
    names = ["Segments(nDCG@10)", "V_strict", "A_strict", "W", "SupportP", "SupportR", "AnswerWords"]
    assert list(table["name"]) == ["good", "poor"]
    for name in names:
        assert name in table.columns and f"{name} p-value" in table.columns
    saved = ir_measures.calc_aggregate(measures, qrels.rename(columns={"qid": "query_id", "docno": "doc_id",
                                                                       "label": "relevance"}),
                                       ir_measures.read_trec_run(str(tmp_path / "poor.res.gz")))
    assert [saved[m] for m in measures] == pytest.approx(table[names].iloc[1].tolist())
    assert set(perquery["measure"]) == set(names) and set(perquery["qid"]) == {"t1", "t2", "t3"}

    # nDCG@10 equals the value computed on the segment runs alone, per query and on average
    alone = pt.Experiment([retriever(GOOD), retriever(POOR)], TOPICS, segment_qrels, [nDCG10],
                          names=["good", "poor"], perquery=True)
    mine = perquery[perquery["measure"] == "Segments(nDCG@10)"].set_index(["name", "qid"])["value"]
    theirs = alone.set_index(["name", "qid"])["value"]
    assert mine.sort_index().tolist() == pytest.approx(theirs.sort_index().tolist())
    assert table["Segments(nDCG@10)"].tolist() == pytest.approx(
        alone.groupby("name", sort=False)["value"].mean().tolist())
    assert table["Segments(nDCG@10)"].iloc[0] > table["Segments(nDCG@10)"].iloc[1]

    # ... whereas plain nDCG@10 on the combined rows and qrels is wrong (nuggets inflate the ideal DCG)
    plain = pt.Experiment(pipelines[:1], TOPICS, qrels, [nDCG10], names=["good"])
    assert plain["nDCG@10"].iloc[0] != pytest.approx(table["Segments(nDCG@10)"].iloc[0])

    # nugget, support and length scores equal those computed separately from the same answers
    for i, (name, order) in enumerate([("good", GOOD), ("poor", POOR)]):
        answers = (retriever(order) >> CitedGenerator(llm, k=5, run_id=name))(TOPICS)
        nugget_scores = pt.Experiment([pt.Transformer.from_df(answers) >> NuggetAssigner(nuggets, llm)], TOPICS,
                                      nugget_qrels(nuggets), [ir_measures_ext.V_strict,
                                                                    ir_measures_ext.A_strict])
        judgments = frame_to_judgments(SupportJudge(llm)(answers))
        rows = list(formats.support_rows(judgments)) + list(formats.words_rows(formats.frame_to_answers(answers)))
        other = score(nugget_qrels(nuggets), run_frame(rows),
                      [ir_measures_ext.SupportP, ir_measures_ext.SupportR, ir_measures_ext.AnswerWords])
        means = other.groupby("measure")["value"].mean()
        assert table["V_strict"].iloc[i] == pytest.approx(nugget_scores["V_strict"].iloc[0])
        assert table["A_strict"].iloc[i] == pytest.approx(nugget_scores["A_strict"].iloc[0])
        for m in ("SupportP", "SupportR", "AnswerWords"):
            assert table[m].iloc[i] == pytest.approx(means[m])
    # the poor retriever's answers cite filler segments: lower nugget scores and support stays high
    assert table["V_strict"].iloc[0] > table["V_strict"].iloc[1]


def test_segments_wrapper_handles_cutoffs_and_other_measures(llm, nuggets, segment_qrels):
    pipeline = retriever(POOR) >> RAGEvaluation(CitedGenerator(llm, k=3), nuggets, llm)
    qrels = rag_qrels(segment_qrels, nuggets)
    wrapped = [Segments("P@5"), Segments(ir_measures.R @ 10), Segments("AP")]
    table = pt.Experiment([pipeline], TOPICS, qrels, wrapped, names=["x"])
    alone = pt.Experiment([retriever(POOR)], TOPICS, segment_qrels, [ir_measures.P @ 5, ir_measures.R @ 10,
                                                                     ir_measures.AP], names=["x"])
    assert table[["Segments(P@5)", "Segments(R@10)", "Segments(AP)"]].iloc[0].tolist() == pytest.approx(
        alone[["P@5", "R@10", "AP"]].iloc[0].tolist())


def test_collisions_refused(llm, nuggets, segment_qrels):
    bad = segment_qrels.assign(docno=segment_qrels["docno"].where(segment_qrels.index > 0, "t1:n0"))
    with pytest.raises(ValueError, match="evaluation-run ids"):
        rag_qrels(bad, nuggets)
    results = pd.DataFrame([{"qid": "t1", "query": "q", "docno": "t1:words", "score": 1.0, "text": "x."}])
    with pytest.raises(ValueError, match="form of an evaluation-run id"):
        RAGEvaluation(CitedGenerator(llm), nuggets, llm)(results)


def test_support_and_length_only_without_nuggets(llm, segment_qrels):
    pipeline = retriever(GOOD) >> RAGEvaluation(CitedGenerator(llm, k=2), None, llm)
    table = pt.Experiment([pipeline], TOPICS, segment_qrels,
                          [Segments(nDCG10), ir_measures_ext.SupportP, ir_measures_ext.AnswerWords], names=["x"])
    assert table["SupportP"].iloc[0] == pytest.approx(1.0) and table["AnswerWords"].iloc[0] > 0
    assert RAGEvaluation(CitedGenerator(llm), None, llm)(TOPICS.iloc[:0].assign(docno=[])).empty




@pytest.mark.slow
@needs_model
def test_embedded_model_rag_end_to_end(tmp_path):
    """Relevance judging, cited generation, support judging and one pt.Experiment on the embedded model."""
    from pyterrier_nuggets.judges import RelevanceJudge

    llm = embedded_client(tmp_path / "cache.sqlite", 1, 96)
    topics = TOPICS.iloc[:1]
    judged = RelevanceJudge(llm, on_failure="exclude")(retriever(GOOD)(topics).head(2))
    assert set(judged["label"]) <= {0, 1, 2, 3}
    nuggets = pd.DataFrame([{"qid": "t1", "query": "capital of france", "nugget_index": 0, "nugget_id": "t1:n0",
                             "nugget_text": "Paris is the capital", "importance": "vital"}])
    gen = CitedGenerator(llm, k=2, max_tokens=80, on_failure="exclude")
    rag = RAGEvaluation(gen, nuggets, llm, assigner=NuggetAssigner(nuggets, llm, on_failure="exclude"),
                        support=SupportJudge(llm, on_failure="exclude"))
    first = pt.Transformer.from_df(retriever(GOOD)(topics).head(2)) >> rag
    table = pt.Experiment([first], topics, rag_qrels(pd.DataFrame(
        {"qid": ["t1"], "docno": ["t1-d0"], "label": [3]}), nuggets),
        [Segments(nDCG10), ir_measures_ext.AnswerWords], names=["embedded"])
    assert table["AnswerWords"].iloc[0] <= 400 and table["Segments(nDCG@10)"].iloc[0] == pytest.approx(1.0)
    calls = llm.stats["calls"]
    assert calls >= 1


def test_a_saved_rag_run_scores_its_segments_as_without_evaluation_rows(llm, nuggets, segment_qrels, tmp_path):
    """A run saved from RAGEvaluation's output, scored with plain nDCG@10 / P@5 / R@100 (trec_eval
    semantics), gives what the segment rows alone give: evaluation rows never outrank a segment."""
    out = (retriever(POOR) >> RAGEvaluation(CitedGenerator(llm, k=2), nuggets, llm))(TOPICS)
    path = tmp_path / "saved.run"
    pt.io.write_results(out, str(path))
    qrels = segment_qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    measures = [nDCG10, ir_measures.P @ 5, ir_measures.R @ 100, ir_measures.AP]
    saved = ir_measures.calc_aggregate(measures, qrels, ir_measures.read_trec_run(str(path)))
    segments = out[out["eval_row"] == "segment"].rename(columns={"qid": "query_id", "docno": "doc_id"})
    assert saved == pytest.approx(ir_measures.calc_aggregate(measures, qrels, segments))
    assert saved[nDCG10] < 0.9  # POOR ranks relevant segments low: a wrong ordering would show
    joint = rag_qrels(segment_qrels, nuggets).rename(columns={"qid": "query_id", "docno": "doc_id",
                                                               "label": "relevance"})
    words = ir_measures.calc_aggregate([ir_measures_ext.AnswerWords], joint, ir_measures.read_trec_run(str(path)))
    assert words[ir_measures_ext.AnswerWords] == pytest.approx(
        sum(len(a.split()) for a in out.drop_duplicates("qid")["qanswer"]) / 3)  # the length, not -1e9 + length


def test_repr_is_short(llm):
    """The transformers' repr names the system in pt.Experiment when names= is omitted: short, with
    the model name but not the client, the cache or the packaged prompt's path."""
    nuggets = pd.DataFrame({"qid": ["t1"], "query": ["q"], "nugget_index": [0], "nugget_id": ["t1:n0"],
                            "nugget_text": ["a fact"], "importance": ["vital"]})
    evaluation = RAGEvaluation(CitedGenerator(llm, k=3), nuggets, llm)
    text = repr(evaluation)
    assert text == "RAGEvaluation(CitedGenerator(k=3, max_words=400, run_id=None, llm='fake'), nuggets+support)"
    assert len(repr(evaluation.assigner)) < 80 and len(repr(evaluation.support)) < 60
    assert "/" not in repr(evaluation.assigner) + repr(evaluation.support)
