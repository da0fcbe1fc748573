"""The registered ids on a miniature IR_DATASETS_HOME: ir_datasets.load, pt.get_dataset('irds:...'), the
``ir_datasets`` command line (export, lookup) and the ``ir_measures`` command line with nugget qrels.

Files are resolved against IR_DATASETS_HOME when used, so in-process tests set it per test; the command
lines run in subprocesses with it in their environment. No network: every file is in place.
"""
import os
import subprocess
import sys
from pathlib import Path

import ir_datasets
import pytest
from datasets_fixtures import RAG24_TOPICS, RAG26_QUERIES, UMBRELA_DEV, build_home

import datasets_ext
from datasets_ext.nugget_parser import InvalidNuggetWarning

BIN = Path(sys.executable).parent
RAG24 = "msmarco-segment-v2.1/trec-rag-2024"
RAG25 = "msmarco-segment-v2.1/trec-rag-2025"
# the miniature files are not the published ones: their md5 differs on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.* has md5 .*:UserWarning")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("irds_home")
    return home, build_home(home)


@pytest.fixture(autouse=True)
def use_home(home, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(home[0]))


def run(*args, home):
    env = dict(os.environ, IR_DATASETS_HOME=str(home))
    proc = subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_all_ids_registered():
    for name in ["msmarco-segment-v2.1", RAG24, f"{RAG24}/umbrela", f"{RAG24}/nuggets-mistral", RAG25,
                 f"{RAG25}/dev-nuggets", "trec-ikat/2023", "trec-ikat/2023/ptkb", "trec-ikat/2024", "trec-rag-2026",
                 "trec-rag-2026/research-rubrics-dev", "trec-rag-2026/rag25-dev/umbrela-gpt5.5",
                 "trec-rag-2026/rag25-dev/umbrela-qwen3.5-9b", "trec-rag-2026/rag25-dev/umbrela-ministral-3-14b"]:
        assert name in ir_datasets.registry
    # registering again is a no-op: upstream (or a first import) wins
    assert datasets_ext.trec_rag.register_all() == [] and datasets_ext.ikat.register_all() == []


def test_rag24(home):
    ds = ir_datasets.load(RAG24)
    assert [(q.query_id, q.text) for q in ds.queries_iter()] == RAG24_TOPICS  # CRLF stripped
    qrels = list(ds.qrels_iter())
    assert [(q.query_id, q.relevance, q.condition) for q in qrels] == [
        ("2024-145979", 3, 1), ("2024-145979", 0, 4), ("2024-21669", 2, 5)]
    seg = ds.docs_store().get(qrels[2].doc_id)
    assert seg.doc_id == qrels[2].doc_id
    umbrela = list(ir_datasets.load(f"{RAG24}/umbrela").qrels_iter())
    assert [(q.query_id, q.relevance) for q in umbrela] == [("2024-145979", 2), ("2024-32912", 1)]


def test_rag24_nugget_qrels_leave_out_invalid_labels_loudly():
    ds = ir_datasets.load(f"{RAG24}/nuggets-mistral")
    with pytest.warns(InvalidNuggetWarning, match=r"topic 2024-145979: 1 left out \(line 1 nugget 2 'failed'\)"):
        qrels = [(q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()]
    # ids keep the position in the source list: nugget 2 is missing, nugget 3 keeps its number
    assert qrels == [("2024-145979", "2024-145979:n0", 2), ("2024-145979", "2024-145979:n1", 1),
                     ("2024-145979", "2024-145979:n3", 1), ("2024-21669", "2024-21669:n0", 2)]
    nuggets = {n.doc_id: n for n in ds.docs_iter()}
    assert nuggets["2024-145979:n2"].importance == "failed"  # docs keep every nugget as written
    assert ds.docs_store().get("2024-145979:n3").text == "Supervision helps"


def test_rag25():
    ds = ir_datasets.load(RAG25)
    assert [q.query_id for q in ds.queries_iter()] == ["464", "58"]
    assert [(q.query_id, q.relevance) for q in ds.qrels_iter()] == [("58", 4), ("58", 0)]
    assert len(ds.docs_store().get_many([q.doc_id for q in ds.qrels_iter()])) == 2
    dev = ir_datasets.load(f"{RAG25}/dev-nuggets")
    assert [q.query_id for q in dev.queries_iter()] == ["58"]
    # nugget rows, then each nugget's sub-narrative (mapped_sub_narrative): two sub-narratives, sn0 and sn1
    assert [(q.doc_id, q.relevance) for q in dev.qrels_iter()] == [("58:n0", 2), ("58:n1", 1), ("58:n0:sn0", 1),
                                                                   ("58:n1:sn1", 1)]
    nugget = dev.docs_store().get("58:n1")
    assert nugget.importance == "okay" and '"source": "post-edit"' in nugget.extra


def test_rag26(home):
    assert [(q.query_id, q.text) for q in ir_datasets.load("trec-rag-2026").queries_iter()] == RAG26_QUERIES
    rr = ir_datasets.load("trec-rag-2026/research-rubrics-dev")
    assert [q.query_id for q in rr.queries_iter()] == ["683a"]
    assert [(q.doc_id, q.relevance) for q in rr.qrels_iter()] == [("683a:r0", 4), ("683a:r1", -3)]
    c = rr.docs_store().get("683a:r1")
    assert (c.text, c.weight, c.axis, c.tier) == ("The response places diagrams far from their text.", -3,
                                                  "Communication Quality", None)
    for judge, grades in zip(["gpt5.5", "qwen3.5-9b", "ministral-3-14b"], UMBRELA_DEV.values()):
        ds = ir_datasets.load(f"trec-rag-2026/rag25-dev/umbrela-{judge}")
        assert [q.query_id for q in ds.queries_iter()] == ["58"]
        assert [(q.doc_id, q.relevance) for q in ds.qrels_iter()] == [
            (f"shard_0000{i}_{i * 11}", g) for i, g in enumerate(grades)]
        assert ds.qrels_defs()[4] == "answers 4 or more sub-narratives in sufficient detail"


def test_rag26_rubric_qrels_on_the_ir_measures_cli(home, tmp_path):
    verdicts = tmp_path / "verdicts.run"
    verdicts.write_text("683a Q0 683a:r0 1 0.5 r\n683a Q0 683a:r1 2 1 r\n")
    out = run("ir_measures", "trec-rag-2026/research-rubrics-dev", str(verdicts), "RubricScore", home=home[0])
    assert out.stdout.split() == ["RubricScore", "-0.2500"]  # (4 * 0.5 - 3 * 1) / 4


def test_ikat_queries_both_years():
    q23 = list(ir_datasets.load("trec-ikat/2023").queries_iter())
    assert [q.query_id for q in q23] == ["9-1_1", "9-1_2", "9-1_3", "10-1_1", "10-1_2", "10-1_3"]
    third = q23[2]
    assert third.topic_number == "9-1" and third.turn_id == 3 and third.topic_title == "Topic 9-1"
    assert third.context == (("2023 question 1 of topic 9-1", "2023 answer 1 of topic 9-1"),
                             ("2023 question 2 of topic 9-1", "2023 answer 2 of topic 9-1"))
    assert q23[3].context == ()  # a new conversation starts empty
    assert dict(third.ptkb) == {"1": "I'm vegetarian.", "2": "I live in Glasgow."}
    assert third.resolved_utterance.startswith("2023 resolved") and third.ptkb_provenance == ("1",)
    q24 = list(ir_datasets.load("trec-ikat/2024").queries_iter())
    assert [q.query_id for q in q24][:3] == ["0_1", "0_2", "0_3"] and q24[0].topic_number == "0"
    assert [(q.query_id, q.doc_id) for q in ir_datasets.load("trec-ikat/2023/ptkb").qrels_iter()][0] == ("9-1_1", "1")
    assert [q.relevance for q in ir_datasets.load("trec-ikat/2024").qrels_iter()] == [3]


def test_ikat_passages(home):
    ds = ir_datasets.load("trec-ikat/2023")
    docs = list(ds.docs_iter())
    assert len(docs) == 6 and docs[0].doc_id == "clueweb22-en0000-00-00001:0"
    assert ds.docs_store().get("clueweb22-en0000-00-00003:1").text == "passage 1 of document 3"


def test_ikat_passages_missing_gives_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="clueweb22b-passages"):
        next(ir_datasets.load("trec-ikat/2024").docs_iter())


def test_pyterrier(home):
    import pyterrier as pt  # a dependency of the package: never a silent skip
    rag = pt.get_dataset(f"irds:{RAG24}")
    topics = rag.get_topics()
    assert list(topics.qid) == [q for q, _ in RAG24_TOPICS] and list(topics["query"]) == [t for _, t in RAG24_TOPICS]
    qrels = rag.get_qrels()
    assert list(qrels.label) == [3, 0, 2]
    res = qrels[["qid", "docno"]]
    with_text = pt.text.get_text(rag, ["title", "segment"])(res)
    assert with_text.title.str.contains("café").all()
    ikat = pt.get_dataset("irds:trec-ikat/2023").get_topics("resolved_utterance")
    assert list(ikat.columns) == ["qid", "query"] and ikat["query"][0].startswith("2023 resolved")
    nuggets = pt.get_dataset(f"irds:{RAG25}/dev-nuggets")
    assert list(nuggets.get_qrels().docno) == ["58:n0", "58:n1", "58:n0:sn0", "58:n1:sn1"]
    assert [d["docno"] for d in nuggets.get_corpus_iter(verbose=False)] == ["58:n0", "58:n1"]


def test_ir_datasets_cli(home):
    home_dir, ids = home
    out = run("ir_datasets", "export", RAG24, "queries", home=home_dir).stdout
    assert out.splitlines()[0] == f"{RAG24_TOPICS[0][0]}\t{RAG24_TOPICS[0][1]}"
    out = run("ir_datasets", "lookup", "msmarco-segment-v2.1", ids[0][2], ids[59][0], home=home_dir).stdout
    assert [line.split("\t")[0] for line in out.splitlines()] == [ids[0][2], ids[59][0]]
    proc = run("ir_datasets", "lookup", "msmarco-segment-v2.1", "msmarco_v2.1_doc_00_0#0_7", home=home_dir)
    assert proc.stdout == "" and "not found" in proc.stderr  # reported, not silently dropped
    out = run("ir_datasets", "export", f"{RAG25}/dev-nuggets", "qrels", home=home_dir).stdout
    assert out.split() == ["58", "0", "58:n0", "2", "58", "0", "58:n1", "1", "58", "0", "58:n0:sn0", "1",
                           "58", "0", "58:n1:sn1", "1"]


def test_ir_measures_cli_with_nugget_qrels(home, tmp_path):
    run_file = tmp_path / "assignments.run"
    run_file.write_text("58 Q0 58:n0 1 1.0 x\n58 Q0 58:n1 2 0.0 x\n")
    # the nugget measures of ir_measures_ext read the nugget qrels by dataset id: vital n0 supported, okay n1 not
    out = run("ir_measures", f"{RAG25}/dev-nuggets", str(run_file), "P@1", "V_strict", "A_strict", home=home[0]).stdout
    assert out.split() == ["P@1", "1.0000", "V_strict", "1.0000", "A_strict", "0.5000"]


def test_ikat_cone_rag(home):
    human = ir_datasets.load("trec-ikat/2024/gold-nuggets-human")
    assert [(d.doc_id, d.passage_relevance) for d in human.docs_iter()] == [("0_1:n0", 3), ("0_1:n1", 2), ("0_2:n0", 2)]
    assert [(q.query_id, q.doc_id, q.relevance) for q in human.qrels_iter()] == [
        ("0_1", "0_1:n0", 2), ("0_1", "0_1:n1", 2), ("0_2", "0_2:n0", 2)]
    assert human.docs_store().get("0_1:n1").text == "It rains often in Glasgow."
    assert next(human.queries_iter()).query_id == "0_1"  # the 2024 turns
    # the de-duplicated file keeps the nugget's key, hence its id
    assert [d.doc_id for d in ir_datasets.load("trec-ikat/2024/gold-nuggets-human-dedup").docs_iter()] == [
        "0_1:n1", "0_2:n0"]
    assert [d.text for d in ir_datasets.load("trec-ikat/2024/gold-nuggets-llm").docs_iter()] == ["Glasgow is mild."]
    gold = list(ir_datasets.load("trec-ikat/2024/gold-responses").docs_iter())
    assert [(d.doc_id, d.run_id, d.text) for d in gold] == [("0_1", "manual", "Glasgow has a mild climate.")]
    runs = ir_datasets.load("trec-ikat/2024/participant-responses")
    assert [(d.doc_id, d.text) for d in runs.docs_iter()][1:4:2] == [("0_1/runB", "No idea."), ("0_2/runB", "")]
    manual = ir_datasets.load("trec-ikat/2024/manual-responses")
    assert [(d.doc_id, d.run_id) for d in manual.docs_iter()] == [("0_1/manual-run", "manual-run")]
    # the files without a dataset id are registered by URL and md5 too
    from datasets_ext.ikat import FILES
    assert FILES["cone-crowd-matching-labels"].md5 == "ab8165cc3db47278b19e13759e40b3dd"
    assert FILES["cone-manual-response-nuggets"].url.endswith("participant_resources/manual_response_nuggets.json")


def test_ikat_cone_rag_cli_and_measures(home, tmp_path):
    import pyterrier as pt  # a dependency of the package: never a silent skip
    assert list(pt.get_dataset("irds:trec-ikat/2024/gold-nuggets-llm-dedup").get_qrels().docno) == ["0_1:n0"]
    out = run("ir_datasets", "export", "trec-ikat/2024/gold-nuggets-human-dedup", "qrels", home=home[0]).stdout
    assert out.split() == ["0_1", "0", "0_1:n1", "2", "0_2", "0", "0_2:n0", "2"]
    run_file = tmp_path / "ntr.run"  # 0_1: gold nugget n0 covered, n1 not; 0_2: none
    run_file.write_text("0_1 Q0 0_1:ntr:n0 1 1 x\n0_1 Q0 0_1:ntr:n1 2 0 x\n0_2 Q0 0_2:ntr:n0 1 0 x\n")
    out = run("ir_measures", "-q", "trec-ikat/2024/gold-nuggets-human", str(run_file), "Recall_NtR", home=home[0]).stdout
    assert sorted(out.split("\n")[:2]) == ["0_1\tRecall_NtR\t0.5000", "0_2\tRecall_NtR\t0.0000"]


def test_ikat_cone_rag_bad_file(tmp_path, monkeypatch):
    d = tmp_path / "trec-ikat/2024"
    d.mkdir(parents=True)
    (d / "gold_nuggets_llm.json").write_text('{"0_1": {"[0]": {"text": "x", "relevance": "1"}}}')
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    with pytest.raises(ValueError, match=r"gold_nuggets_llm.json: field '0_1.\[0\]': nugget key"):
        list(ir_datasets.load("trec-ikat/2024/gold-nuggets-llm").qrels_iter())
    (d / "gold_nuggets_llm.json").write_text('{"0_1": {"[1]": {"text": "x", "relevance": "1"}}, "0_1": {}}')
    with pytest.raises(ValueError, match="'0_1' appears more than once"):  # not the last turn winning silently
        list(ir_datasets.load("trec-ikat/2024/gold-nuggets-llm").docs_iter())
