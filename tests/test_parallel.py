"""The package's transformers under PyTerrier's ``.parallel()`` (judges/parallel.py), on joblib worker
processes and on a local Ray cluster: the serial run's frames (rows, order, columns), the LLM counts of the
workers in the calling client, one failure report for the whole input, and the workers' caches usable by a
serial re-run."""
from __future__ import annotations

import glob
import os
import pickle
import warnings

import pandas as pd
import pytest

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation.cone import NuggetToNugget, NuggetToResponse
from pyterrier_nuggets.judges import LLMStepError, NuggetAssigner, NuggetCreator, NuggetScorer, Overlapped
from pyterrier_nuggets.judges.failures import FailureWarning
from pyterrier_nuggets.judges.parallel import ParallelByTopic, failure_steps, topic_groups
from pyterrier_nuggets.llm import LLMClient, ResponseCache
from pyterrier_nuggets.llm.cache import merge_caches
from pyterrier_nuggets.matchers import EmbeddingMatcher
from pyterrier_nuggets.records import Nugget
from pyterrier_nuggets.testing import Reply
from tests.conftest import quick_options, quick_retry

TOPICS = ["q3", "q1", "q4", "q2", "q5"]  # not sorted: the serial run keeps the input's order, so must the workers


def client(server, cache, **options) -> LLMClient:
    """A client that can travel to a worker: no api_key= (the key is never pickled), quick retries; ``options``: the
    fields of its ClientOptions."""
    return LLMClient(model="fake", base_url=server.base_url, cache=cache, progress=False,
                     options=quick_options(**options))


def segments() -> pd.DataFrame:
    return pd.DataFrame([{"qid": q, "query": f"what is topic {q}", "docno": f"{q}-d{i}", "label": 1 + i % 3,
                          "text": f"Fact{i} of {q}: alpha{i} beta{i}"} for q in TOPICS for i in range(4 + len(q))])


def answers() -> pd.DataFrame:
    return pd.DataFrame([{"qid": q, "query": f"what is topic {q}", "run_id": run, "qanswer": f"alpha0 beta0 of {q}"}
                         for q in TOPICS for run in ("runA", "runB")])


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")  # installed with the parallel extra: the skip would show in -rs
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(params=["joblib", pytest.param("ray", marks=pytest.mark.slow)])
def backend(request):
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
    return request.param


def test_topic_groups_are_whole_contiguous_and_balanced():
    frame = pd.DataFrame({"qid": ["b", "b", "a", "c", "c", "c", "d", "a"], "x": range(8)})
    groups = topic_groups(frame, 2)
    assert [list(g["qid"]) for g in groups] == [["b", "b", "a", "a"], ["c", "c", "c", "d"]]
    assert sorted(pd.concat(groups)["x"]) == list(range(8))
    assert len(topic_groups(frame, 10)) == 4 and len(topic_groups(frame.iloc[:2], 3)) == 1


def test_autonuggetizer_on_workers_equals_the_serial_run(server, tmp_path, backend):
    serial_llm = client(server, tmp_path / "serial.sqlite")
    creator, scorer = NuggetCreator(serial_llm), NuggetScorer(serial_llm)
    serial = scorer(creator(segments()))
    assigned = NuggetAssigner(serial, serial_llm)(answers())
    llm = client(server, tmp_path / "parallel.sqlite")
    nuggets = NuggetScorer(llm).parallel(2, backend)(NuggetCreator(llm).parallel(2, backend)(segments()))
    pd.testing.assert_frame_equal(nuggets, serial)
    assert list(dict.fromkeys(nuggets["qid"])) == TOPICS
    pd.testing.assert_frame_equal(NuggetAssigner(nuggets, llm).parallel(2, backend)(answers()), assigned)
    # the workers' calls are counted in the calling process's client, per stage
    assert llm.stats["calls"] == serial_llm.stats["calls"] > 0
    assert llm.usage().stages == serial_llm.usage().stages
    # the workers wrote into the one cache file of this machine: a serial re-run pays nothing
    again = client(server, tmp_path / "parallel.sqlite")
    NuggetAssigner(nuggets, again)(answers())
    assert again.stats["calls"] == 0


def test_overlapped_chain_on_workers_equals_the_serial_run(server, tmp_path):
    serial_llm = client(server, tmp_path / "serial.sqlite")
    serial = Overlapped(NuggetCreator(serial_llm) >> NuggetScorer(serial_llm))(segments())
    llm = client(server, tmp_path / "parallel.sqlite")
    parallel = Overlapped(NuggetCreator(llm) >> NuggetScorer(llm)).parallel(2)(segments())
    pd.testing.assert_frame_equal(parallel, serial)


def _cone_inputs():
    gold = formats.NuggetSet([Nugget(q, i, text, "vital") for q in TOPICS
                              for i, text in enumerate(["Paris is the capital of France", f"{q} has museums",
                                                        "Bananas are yellow"])])
    responses = pd.DataFrame([{"qid": q, "query": "capital", "run_id": run, "qanswer": text}
                              for q in TOPICS for run, text in
                              (("good", f"Paris is the capital of France. {q} has many museums."),
                               ("bad", "Bananas grow in warm countries."))])
    extracted = responses.assign(nuggets=[[{"text": s, "span": "exact"} for s in t.split(". ")]
                                          for t in responses["qanswer"]])
    return gold, responses, extracted


@pytest.mark.slow
def test_cone_embedding_matching_on_workers_equals_the_serial_run(backend):
    gold, responses, extracted = _cone_inputs()
    matcher = EmbeddingMatcher.for_task("ntr")
    serial_ntr = NuggetToResponse(gold, matcher)(responses)
    serial_ntn = NuggetToNugget(gold, EmbeddingMatcher.for_task("ntn"))(extracted)
    assert matcher.transient  # the loaded encoder stays here: the workers load their own
    ntr = NuggetToResponse(gold, matcher).parallel(2, backend)(responses)
    ntn = NuggetToNugget(gold, EmbeddingMatcher.for_task("ntn")).parallel(2, backend)(extracted)
    pd.testing.assert_frame_equal(ntr, serial_ntr)
    pd.testing.assert_frame_equal(ntn, serial_ntn)
    assert list(dict.fromkeys(ntr["qid"])) == TOPICS and set(ntr["score"]) == {0.0, 1.0}


def _failing_for(qids):
    """The fake server's replies, but HTTP 500 for every request about one of ``qids``."""
    def reply(body):
        prompt = body["messages"][-1]["content"]
        return Reply(status=500) if any(f"topic {q}" in prompt for q in qids) else None
    return reply


def test_failures_of_every_worker_are_reported_once(server, tmp_path):
    server.responder = _failing_for(["q3", "q2"])  # q3 goes to the first worker, q2 to the second
    llm = client(server, tmp_path / "c.sqlite", retry=quick_retry(max_retries=1))
    creator = NuggetCreator(llm)
    with pytest.raises(LLMStepError) as raised:
        creator.parallel(2)(segments())
    assert sorted({f.qid for f in raised.value.failures}) == ["q2", "q3"]
    assert sorted({f.qid for f in creator.failures}) == ["q2", "q3"]
    excluding = NuggetCreator(llm, on_failure="exclude")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = excluding.parallel(2)(segments())
    reports = [w for w in caught if issubclass(w.category, FailureWarning)]
    assert len(reports) == 1 and "NuggetCreator: 2 failed" in str(reports[0].message)
    assert sorted({f.qid for f in excluding.failures}) == ["q2", "q3"]
    assert list(dict.fromkeys(out["qid"])) == ["q1", "q4", "q5"]
    # the serial run reports the same
    serial = NuggetCreator(client(server, tmp_path / "s.sqlite", retry=quick_retry(max_retries=1)), on_failure="exclude")
    with pytest.warns(FailureWarning):
        pd.testing.assert_frame_equal(serial(segments()), out)
    assert [(f.qid, f.error) for f in serial.failures] == [(f.qid, f.error) for f in excluding.failures]


def test_worker_cache_shards_merge_into_one_that_a_serial_rerun_uses(server, tmp_path):
    llm = client(server, tmp_path / "main.sqlite", worker_cache="shard")
    out = NuggetCreator(llm).parallel(2)(segments())
    shards = sorted(glob.glob(str(tmp_path / "main.shard-*.sqlite")))
    # one per worker process that took work (the pool may hand both groups to one), none written into the main file
    assert 1 <= len(shards) <= 2 and len(ResponseCache(tmp_path / "main.sqlite")) == 0
    report = merge_caches(tmp_path / "main.sqlite", shards)
    assert report.added == llm.stats["calls"] > 0
    serial = client(server, tmp_path / "main.sqlite")
    pd.testing.assert_frame_equal(NuggetCreator(serial)(segments()), out)
    assert serial.stats["calls"] == 0


def test_what_cannot_travel_is_refused_clearly(server, tmp_path):
    keyed = LLMClient(model="fake", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite",
                      progress=False)
    with pytest.raises(TypeError, match="the key is never pickled"):
        pickle.dumps(NuggetCreator(keyed))
    with pytest.raises(InvalidInput, match="backend must be one of"):
        NuggetCreator(keyed).parallel(2, "dask")
    with pytest.raises(InvalidInput, match="n_jobs must be at least 1"):
        ParallelByTopic(NuggetCreator(keyed), 0)


def test_failure_steps_are_found_in_pipeline_order(llm):
    creator, scorer = NuggetCreator(llm), NuggetScorer(llm)
    assert list(failure_steps(Overlapped(creator >> scorer))) == [creator, scorer]
    assert list(failure_steps(creator >> scorer)) == [creator, scorer]


def test_generation_and_evaluation_on_workers_equal_the_serial_run(server, tmp_path):
    from pyterrier_nuggets import CitedGenerator, RAGEvaluation, RelevanceJudge, SupportJudge
    ranking = pd.DataFrame([{"qid": q, "query": f"what is topic {q}", "docno": f"{q}-d{i}", "score": 3.0 - i,
                             "rank": i, "text": f"Fact{i} of topic {q}: alpha{i} beta{i}."}
                            for q in TOPICS for i in range(3)])
    nuggets = pd.DataFrame([{"qid": q, "query": f"what is topic {q}", "nugget_index": i, "nugget_id": f"{q}:n{i}",
                             "nugget_text": f"alpha{i} beta{i}", "importance": "vital" if i else "okay"}
                            for q in TOPICS for i in range(2)])

    def pipeline(llm):
        return RAGEvaluation(CitedGenerator(llm, k=3), nuggets, llm, support=SupportJudge(llm))

    serial_llm = client(server, tmp_path / "serial.sqlite")
    llm = client(server, tmp_path / "parallel.sqlite")
    pd.testing.assert_frame_equal(pipeline(llm).parallel(2)(ranking), pipeline(serial_llm)(ranking))
    pd.testing.assert_frame_equal(RelevanceJudge(llm).parallel(2)(ranking), RelevanceJudge(serial_llm)(ranking))
    assert llm.stats["calls"] == serial_llm.stats["calls"] > 0


def test_the_topics_run_in_worker_processes_in_the_input_order(backend):
    """Without workers every comparison above would pass serially too: here each topic group must come back from
    another process than the caller's, whole, in the input's order. Which worker runs which group is the pool's
    business (a warm pool may give both groups to one worker): only the groups sent are asserted."""
    import os

    import pyterrier as pt
    frame = pd.DataFrame({"qid": TOPICS, "x": range(len(TOPICS))})
    seen = pt.apply.generic(lambda df: df.assign(pid=os.getpid(), group=",".join(df["qid"])))
    out = ParallelByTopic(seen, 2, backend)(frame)
    assert list(out["qid"]) == TOPICS and list(out.index) == list(range(len(TOPICS)))
    assert os.getpid() not in set(out["pid"])
    assert list(dict.fromkeys(out["group"])) == [",".join(g["qid"]) for g in topic_groups(frame, 2)]
    assert out.groupby("group")["pid"].nunique().eq(1).all()  # a group runs whole in one process


def test_a_relative_cache_path_names_the_same_file_in_a_worker_started_elsewhere(server, tmp_path, monkeypatch):
    """A pool's worker keeps the folder it was started in (a warm pool, another test's): a client made with a
    relative cache path travels with the path made absolute, so the worker's shard lies beside the main file."""
    import subprocess
    import sys
    from pathlib import Path
    monkeypatch.chdir(tmp_path)
    llm = client(server, "relative.sqlite", worker_cache="shard")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read()).cache.path)"
    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(llm), cwd=elsewhere, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
                          timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    shard = Path(done.stdout.decode().strip())
    assert shard.is_absolute() and shard.parent == tmp_path and shard.name.startswith("relative.shard-")
