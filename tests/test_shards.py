"""Shards for a batch system: ``--shard I/N`` on demo, trec-rag, ikat and arena, ``pyterrier-nuggets merge``
(the shards' files put together: byte for byte those of the unsharded run, from the merged cache with 0 LLM calls),
``pyterrier-nuggets cache merge``, and the cache-only client the merge re-runs with (docs/shards.md)."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_nuggets import formats
from pyterrier_nuggets.cli import main
from pyterrier_nuggets.cli.shards import MANIFEST, Shard, parse_shard, read_manifest, shard_of
from pyterrier_nuggets.formats.folders import MANIFEST as OUTPUTS_MANIFEST
from pyterrier_nuggets.llm import CacheMiss, ClientOptions, LLMClient, ResponseCache
from pyterrier_nuggets.testing import TestEndpoint, first_prompt

ROOT = Path(__file__).resolve().parent.parent


def same_files(full, merged, not_compared=()) -> list[str]:
    """The files of the unsharded run ``full``, each checked byte for byte against ``merged``'s (which may hold
    more: the merged response cache); returns their names."""
    names = sorted(n for n in os.listdir(full) if os.path.isfile(os.path.join(full, n)) and n not in not_compared)
    assert names
    for name in names:
        with open(os.path.join(full, name), "rb") as a, open(os.path.join(merged, name), "rb") as b:
            assert a.read() == b.read(), f"{name} differs between the unsharded run and the merged shards"
    return names


def unsharded(argv: list[str]) -> None:
    """The unsharded run, in a process of its own with another hash seed than this one's: an output whose order
    depends on the seed (a set's order) would differ from the merged shards'."""
    env = dict(os.environ, PYTHONHASHSEED=str(hash("seed") % 1000 + 1), PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-c", "import sys; from pyterrier_nuggets.cli import main; "
                           "sys.exit(main())", *argv], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def run_shards(argv: list[str], out, n: int, extra=()) -> list[str]:
    """The shards 1/n ... n/n of ``argv`` into ``out/1`` ... ``out/n``."""
    folders = []
    for i in range(1, n + 1):
        folder = str(out / str(i))
        assert main([*argv, *extra, "--shard", f"{i}/{n}", "--out", folder]) == 0
        folders.append(folder)
    return folders


# ------------------------------------------------------------------------------------------- the split

def test_the_shard_of_a_topic_is_its_sha256_mod_n():
    for qid in ("t01", "2024-145979", "0_1", "é"):
        expected = int.from_bytes(hashlib.sha256(qid.encode("utf-8")).digest(), "big") % 8 + 1
        assert shard_of(qid, 8) == expected
    topics = [f"q{k}" for k in range(200)]
    split = [Shard(i, 5).select(topics) for i in range(1, 6)]
    assert sorted(q for part in split for q in part) == sorted(topics)  # each topic in exactly one shard
    assert all(25 <= len(part) <= 55 for part in split)  # near equal for many topics
    # independent of the order and of the other topics
    assert Shard(3, 5).select(list(reversed(topics))) == list(reversed(split[2]))
    assert Shard(3, 5).select(topics[:50]) == [q for q in split[2] if q in topics[:50]]


@pytest.mark.parametrize("text, message", [("0/4", "between 1 and N"), ("5/4", "between 1 and N"),
                                           ("2", "is not I/N"), ("a/b", "is not I/N"), ("1/0", "between 1 and N")])
def test_a_bad_shard_is_refused_where_it_is_parsed(text, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["trec-rag", "--answers", "a.jsonl", "--nuggets", "n.jsonl", "--out", "o", "--shard", text])
    assert e.value.code == 2 and message in capsys.readouterr().err
    assert parse_shard("2/8") == Shard(2, 8)


# ---------------------------------------------------------------------------------------- the LLM client

def test_a_cache_only_client_answers_from_the_cache_and_never_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with TestEndpoint(responder=lambda body: "fine") as server:
        first = LLMClient(model="fake", base_url=server.base_url, cache=tmp_path / "c.sqlite", progress=False)
        assert first.chat([{"role": "user", "content": "cached"}], stage="support").text == "fine"
        only = LLMClient(model="fake", base_url=server.base_url, cache=tmp_path / "c.sqlite", progress=False,
                         options=ClientOptions(cache_only=True))
        assert only.chat([{"role": "user", "content": "cached"}], stage="support").cached
        with pytest.raises(CacheMiss, match=r"no answer for a request of the step 'assign' \(model 'fake' at "):
            only.chat([{"role": "user", "content": "not cached"}], stage="assign")
        # an answer whose exchange failed validation would be asked again: a miss too
        key = first.chat([{"role": "user", "content": "bad"}]).key
        ResponseCache(tmp_path / "c.sqlite").mark_invalid([key], "invalid output")
        with pytest.raises(CacheMiss):
            only.chat([{"role": "user", "content": "bad"}])
        # a copy in another process (.parallel(), pickling) is cache-only too
        copy = pickle.loads(pickle.dumps(only))
        assert copy.options.cache_only and "cache_only=True" in repr(copy)
        with pytest.raises(CacheMiss):
            copy.chat([{"role": "user", "content": "not cached either"}])
        assert server.count == 2
        with pytest.raises(ValueError, match="needs a response cache"):
            LLMClient(model="fake", base_url=server.base_url, cache=None, options=ClientOptions(cache_only=True))


# ------------------------------------------------------------------------------------------ cache merge

def _answer(cache: ResponseCache, key: str, text: str) -> None:
    cache.put(key, {"model": "fake", "messages": [{"role": "user", "content": f"Judge {key} please"}]},
              {"text": text, "usage": {}})


def test_cache_merge_adds_replaces_invalid_and_names_conflicts(tmp_path, capsys):
    a, b, target = (str(tmp_path / n) for n in ("a.sqlite", "b.sqlite", "t.sqlite"))
    ca, cb, ct = ResponseCache(a), ResponseCache(b), ResponseCache(target)
    _answer(ca, "k1", "one")
    _answer(ca, "k2", "two")
    _answer(cb, "k3", "three")
    _answer(cb, "k2", "TWO, differently")  # an endpoint that is not deterministic
    _answer(ct, "k4", "bad")
    ct.mark_invalid(["k4"], "invalid output")
    _answer(cb, "k4", "four")  # a valid answer for one that failed validation in the target
    assert main(["cache", "merge", a, b, "--into", target]) == 0
    out = capsys.readouterr().out
    assert "merged 2 cache(s) into" in out and "3 answer(s) added" in out and "1 invalid one(s) replaced" in out
    assert "answered differently: key k2, model 'fake', prompt 'Judge k2 please'" in out
    merged = ResponseCache(target)
    assert [merged.get(k)["text"] for k in ("k1", "k2", "k3", "k4")] == ["one", "two", "three", "four"]
    assert merged.lookup("k4")[1] is None and [r["key"] for r in merged.rejected()] == ["k4"]
    assert len(ResponseCache(a)) == 2 and len(ResponseCache(b)) == 3  # the sources are only read
    # a later run on the target calls nothing for what the sources answered: merging again adds nothing
    assert main(["cache", "merge", a, "--into", target]) == 0
    assert "0 answer(s) added, 2 already there" in capsys.readouterr().out


def test_cache_merge_refusals(tmp_path, capsys):
    a = str(tmp_path / "a.sqlite")
    _answer(ResponseCache(a), "k1", "one")
    assert main(["cache", "merge", a, "--into", a]) == 2
    assert "--into" in capsys.readouterr().err and len(ResponseCache(a)) == 1
    assert main(["cache", "merge", str(tmp_path / "missing.sqlite"), "--into", str(tmp_path / "t.sqlite")]) == 2
    assert "missing.sqlite: no such file" in capsys.readouterr().err
    (tmp_path / "text.sqlite").write_text("not a database at all, just words\n" * 50)
    assert main(["cache", "merge", str(tmp_path / "text.sqlite"), "--into", str(tmp_path / "t.sqlite")]) == 2
    assert "not a response cache of pyterrier-nuggets" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ the main job (demo)

@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("indexes"))




def test_demo_offline_shards_merge_into_the_unsharded_files(tmp_path, index_dir, no_endpoint, capsys):
    """Offline (baseline judges, extractive answers): no LLM, so merge only checks and computes everything again."""
    argv = ["demo", "--llm", "offline", "--system", "bm25:2", "--system", "bm25:4", "--max-topics", "5",
            "--index-dir", index_dir]
    unsharded([*argv, "--out", "full"])
    folders = run_shards(argv, tmp_path / "shards", 2)
    manifests = [read_manifest(f) for f in folders]
    assert [m.shard for m in manifests] == [Shard(1, 2), Shard(2, 2)]
    assert manifests[0].topics == ["t01", "t02", "t03", "t04", "t05"] and manifests[0].cache is None
    assert sorted(manifests[0].own_topics + manifests[1].own_topics) == manifests[0].topics
    capsys.readouterr()
    assert main(["merge", *folders, "--out", "merged"]) == 0
    assert "no LLM work" in capsys.readouterr().out
    names = same_files("full", "merged")
    assert {"joint_table.csv", "bm25-k2.answers.jsonl", "battles.jsonl", "ndcg_vs_vstrict.png", OUTPUTS_MANIFEST} <= \
        set(names)


def test_merge_refuses_shards_that_are_not_one_run(tmp_path, index_dir, no_endpoint, capsys):
    argv = ["demo", "--llm", "offline", "--system", "bm25:2", "--max-topics", "4", "--index-dir", index_dir,
            "--no-plots"]
    one, two = run_shards(argv, tmp_path / "s", 2)
    capsys.readouterr()

    def refused(*args) -> str:
        assert main(["merge", *args]) == 2
        return capsys.readouterr().err

    err = refused(one, "--out", "m")
    assert "shard(s) 2/2 missing" in err and "--shard 2/2" in err  # and how to run it
    assert "shard 1/2 is given twice" in refused(one, one, "--out", "m")
    assert main([*argv[:-1], "--shard", "2/2", "--out", "other"]) == 0  # plots this time: other arguments
    assert "different arguments (--no-plots: True and False)" in refused(one, "other", "--out", "m")
    assert main([*argv, "--shard", "2/3", "--out", "three"]) == 0
    assert "different numbers of shards (2, 3)" in refused(one, "three", "--out", "m")
    assert "no such file: not a finished shard" in refused(one, str(tmp_path), "--out", "m")
    assert "is the folder of shard 2/2" in refused(one, two, "--out", two)
    # a manifest whose command line was edited (the system dropped, in both shards alike) is not what the shards ran
    for folder in (one, two):
        path = os.path.join(folder, "shard.json")
        data = json.load(open(path))
        k = data["argv"].index("--system")
        data["argv"][k:k + 2] = []
        json.dump(data, open(path, "w"))
    err = refused(one, two, "--out", "m")
    assert "shard.json: field 'argv': the command line is not the one the shard ran: --system: " in err
    assert "the manifest was edited; run the shard again" in err
    assert not os.path.exists("m")
    # a shard's --out holding another shard's manifest is refused before anything runs
    assert main([*argv, "--shard", "1/2", "--out", two]) == 2
    assert "holds the manifest of shard 2/2 of another run" in capsys.readouterr().err


def _failing_assignment(query: str):
    """The nugget assignment of the answers to ``query`` gets unusable replies three times (the ask and its two
    re-asks fail; a re-run is answered)."""
    def assignment(body) -> bool:
        prompt = first_prompt(body)
        return "label each of the" in prompt and "vital or okay" not in prompt and f"Search Query: {query}" in prompt
    return dict(invalid_first=3, invalid_when=assignment)


@pytest.mark.slow
def test_demo_with_an_endpoint_shards_merge_byte_identical_with_no_call(tmp_path, index_dir, no_endpoint, capsys):
    """The main job on the fake endpoint (AutoNuggets, generation, assignment, support, arena), unsharded and in 2
    shards then merged: every file the same, byte for byte (plots included), the merge's re-run with 0 calls; a
    shard with failed topics is refused with the command that re-runs it, and once re-run the merge goes through."""
    os.environ["OPENAI_API_KEY"] = "k"  # restored by the no_endpoint fixture's monkeypatch
    with TestEndpoint(**_failing_assignment("how is cheese made from milk")) as server:
        argv = ["demo", "--base-url", server.base_url, "--model", "fake", "--system", "bm25:2", "--system", "bm25:3",
                "--topics", "t01", "t02", "t05", "t07", "--index-dir", index_dir, "--max-failed-share", "0.9"]
        folders = run_shards(argv, tmp_path / "shards", 2)
        manifests = [read_manifest(f) for f in folders]
        failing = next(m for m in manifests if m.failed)
        assert failing.failed == {"t05": "bm25-k2: assignment"}
        capsys.readouterr()
        assert main(["merge", *folders, "--out", "merged"]) == 2
        err = capsys.readouterr().err
        assert f"shard {failing.shard} ({failing.folder}) has 1 failed topic(s): t05 (bm25-k2: assignment)" in err
        assert f"run it again (what succeeded is cached): pyterrier-nuggets demo --base-url {server.base_url}" in err
        i = failing.shard.i
        calls = server.count
        assert main([*argv, "--shard", f"{i}/2", "--out", folders[i - 1]]) == 2  # its outputs are there: refused
        assert "--overwrite" in capsys.readouterr().err
        assert main([*argv, "--shard", f"{i}/2", "--out", folders[i - 1], "--overwrite"]) == 0  # the re-run completes it
        assert read_manifest(folders[i - 1]).failed == {} and server.count > calls
        unsharded([*argv, "--out", "full", "--llm-cache", "full.sqlite"])  # for comparison
        calls = server.count
        assert main(["merge", *folders, "--out", "merged"]) == 0
        assert server.count == calls  # the re-run on every topic made no call
    out = capsys.readouterr().out
    assert "merged 2 cache(s) into" in out and "(0 LLM calls)" in out
    assert not os.path.exists(os.path.join("merged", MANIFEST))
    names = same_files("full", "merged")
    assert {"nuggets.jsonl", "bm25-k2.assignments.jsonl", "bm25-k3.support.jsonl", "battles.jsonl", "leaderboard.csv",
            "joint_table.md", "vstrict_vs_words.svg", OUTPUTS_MANIFEST} <= set(names)
    assert manifests[0].llm == {"model": "fake", "endpoint": server.base_url}
    assert os.path.basename(manifests[0].cache) == "llm-cache.sqlite"


def test_a_merge_whose_caches_lack_an_answer_stops_without_a_call(tmp_path, index_dir, no_endpoint, capsys):
    os.environ["OPENAI_API_KEY"] = "k"
    with TestEndpoint() as server:
        argv = ["demo", "--base-url", server.base_url, "--model", "fake", "--system", "bm25:2", "--topics", "t01",
                "t02", "--index-dir", index_dir, "--no-plots"]
        folders = run_shards(argv, tmp_path / "s", 2)
        emptied = next(f for f in folders if read_manifest(f).own_topics)
        with sqlite3.connect(os.path.join(emptied, "llm-cache.sqlite")) as con:  # answers lost on the way
            con.execute("DELETE FROM responses WHERE request LIKE '%Passages:%'")
        calls = server.count
        capsys.readouterr()
        assert main(["merge", *folders, "--out", "merged"]) == 2
        assert server.count == calls
    err = capsys.readouterr().err
    assert "cache-only run" in err and "'generate'" in err and "Run the shard of that topic again" in err
    assert not os.path.exists(os.path.join("merged", "joint_table.csv"))


# ------------------------------------------------------------------------------------ trec-rag and arena

TOPIC_TEXTS = {f"t{k}": text for k, text in enumerate([
    "which rivers flow through Paris", "how do bees make honey", "why is the sky blue", "what do pandas eat",
    "how are glaciers formed", "who invented the telephone", "how does rain form over mountains"], 1)}


def _answer_rows(run: str, good: bool) -> list[dict]:
    rows = []
    for qid, text in TOPIC_TEXTS.items():
        words = text.split()
        sentence = f"{' '.join(words[2:])} is explained here." if good else "Nothing relevant is said."
        rows.append({"metadata": {"team_id": "us", "run_id": run, "type": "automatic", "narrative_id": qid,
                                  "narrative": text},
                     "references": [f"{qid}-d1", f"{qid}-d2"],
                     "answer": [{"text": sentence, "citations": [0]}, {"text": "More words follow.", "citations": [1]}]})
    return rows


@pytest.fixture
def rag_files(tmp_path):
    def jsonl(name, rows):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        return str(tmp_path / name)
    nuggets = [{"qid": q, "query": t, "nuggets": [{"text": " ".join(t.split()[2:]), "importance": "vital"},
                                                   {"text": "more words", "importance": "okay"}]}
               for q, t in TOPIC_TEXTS.items()]
    docs = [{"docno": f"{q}-d{k}", "text": f"{t} explained. More words follow." if k == 1 else "Unrelated text."}
            for q, t in TOPIC_TEXTS.items() for k in (1, 2)]
    return {"A": jsonl("A.jsonl", _answer_rows("A", True)), "B": jsonl("B.jsonl", _answer_rows("B", False)),
            "C": jsonl("C.jsonl", _answer_rows("C", True)[:4] + _answer_rows("C", False)[4:]),
            "nuggets": jsonl("nuggets.jsonl", nuggets), "docs": jsonl("docs.jsonl", docs)}


def test_trec_rag_shards_merge_byte_identical(tmp_path, rag_files, no_endpoint, capsys):
    with TestEndpoint() as server:
        argv = ["trec-rag", "--answers", rag_files["A"], "--answers", rag_files["B"], "--nuggets", rag_files["nuggets"],
                "--support", "--docs", rag_files["docs"], "--base-url", server.base_url, "--model", "fake"]
        os.environ["OPENAI_API_KEY"] = "k"
        unsharded([*argv, "--out", "full", "--llm-cache", "full.sqlite"])
        folders = run_shards(argv, tmp_path / "shards", 3)
        manifests = [read_manifest(f) for f in folders]
        assert [len(m.own_topics) for m in manifests] == [0, 3, 4]  # an empty shard succeeds, with no cache
        assert [os.path.isfile(os.path.join(f, "llm-cache.sqlite")) for f in folders] == [False, True, True]
        calls = server.count
        capsys.readouterr()
        assert main(["merge", *folders, "--out", "merged"]) == 0
        assert server.count == calls
    names = same_files("full", "merged")
    assert names == [OUTPUTS_MANIFEST, "A.assignments.jsonl", "A.eval.run", "A.support_assignments.jsonl",
                     "B.assignments.jsonl", "B.eval.run", "B.support_assignments.jsonl", "judging.json", "qrels.txt",
                     "scores.tsv", "support_metric_rows.txt"]
    assert manifests[0].topics == list(TOPIC_TEXTS) and manifests[0].llm is None
    for m in manifests[1:]:  # each shard judged and scored only its own topics
        scored = {line.split()[0] for line in open(os.path.join(m.folder, "A.eval.run"))}
        assert scored == set(m.own_topics)
        assert {line.split()[0] for line in open(os.path.join(m.folder, "qrels.txt"))} == set(m.own_topics)
        assert {line.split("\t")[1] for line in open(os.path.join(m.folder, "scores.tsv"))} - {"qid", "all"} == \
            set(m.own_topics)


def test_arena_shards_plan_on_every_topic_and_merge_byte_identical(tmp_path, rag_files, no_endpoint, capsys):
    """A sampled design (topics:3 per pair) is planned on every topic: each shard judges the planned battles of its
    topics; a shard with a failed battle is refused by merge until it is run again."""
    from pyterrier_nuggets.evaluation.arena import Design, plan_battles
    answers = {r: {a.qid: a.text for a in formats.read_answers(rag_files[r])} for r in "ABC"}
    planned = {q for q, _, _ in plan_battles(answers, Design.parse("topics:3")).battles}
    assert len(planned) < len(TOPIC_TEXTS)  # sampled: not every topic has a battle
    failing_topic = sorted(planned)[0]
    with TestEndpoint(invalid_first=2, invalid_when=lambda body: "[[Tie]]" in first_prompt(body)
                          and TOPIC_TEXTS[failing_topic] in first_prompt(body)) as server:
        os.environ["OPENAI_API_KEY"] = "k"
        argv = ["arena", *[x for r in "ABC" for x in ("--answers", rag_files[r])], "--design", "topics:3",
                "--base-url", server.base_url, "--model", "fake", "--resamples", "50", "--max-failed-share", "0.9"]
        folders = run_shards(argv, tmp_path / "shards", 2)
        failing, = [m for m in map(read_manifest, folders) if m.failed]  # both asks of its battle(s) unusable
        assert failing.failed == {failing_topic: "pairwise battle"}
        capsys.readouterr()
        assert main(["merge", *folders, "--out", "merged"]) == 2
        assert f"has 1 failed topic(s): {failing_topic} (pairwise battle)" in capsys.readouterr().err
        i = failing.shard.i
        assert main([*argv, "--shard", f"{i}/2", "--out", folders[i - 1], "--overwrite"]) == 0  # answered this time
        unsharded([*argv, "--out", "full", "--llm-cache", "full.sqlite"])
        calls = server.count
        assert main(["merge", *folders, "--out", "merged"]) == 0
        assert server.count == calls
    names = same_files("full", "merged")
    assert {"battles.jsonl", "leaderboard.csv", "pairwise.csv", "arena.json", "ratings.png"} <= set(names)
    # the shards judged exactly the battles of the unsharded plan (3 topics per pair, sampled across all topics)
    full = {b.key for b in formats.read_battles("full/battles.jsonl")}
    shards = [{b.key for b in formats.read_battles(os.path.join(f, "battles.jsonl"))} for f in folders
              if os.path.exists(os.path.join(f, "battles.jsonl"))]
    assert len(full) == 9 and set().union(*shards) == full and sum(map(len, shards)) == len(full)


# --------------------------------------------------------------------------------------------------- ikat

IKAT_FACTS = ["Glasgow has a mild oceanic climate.", "Haggis is a traditional Scottish dish.",
              "The river Clyde flows through Glasgow.", "Edinburgh castle stands on a volcanic rock.",
              "Loch Ness is a deep freshwater lake.", "Ben Nevis is the highest mountain in Britain."]


def _ntr_reply(body) -> str:
    """NtR matching on the fake endpoint: yes when every longer word of the gold nugget is in the response."""
    prompt = body["messages"][-1]["content"]
    nugget = prompt.split("#Gold Information:", 1)[1].split("\n", 1)[0].lower()
    response = prompt.split("#Response:", 1)[1].split("\n#Please", 1)[0].lower()
    return "yes" if all(w in response for w in nugget.replace(".", "").split() if len(w) > 3) else "no"


def test_ikat_shards_by_turn_merge_byte_identical(tmp_path, no_endpoint, capsys):
    turns = [f"0_{k}" for k in range(1, len(IKAT_FACTS) + 1)]
    topics = [{"number": 0, "title": "Scotland", "ptkb": {"1": "I live in Glasgow."}, "turns": [
        {"turn_id": k + 1, "utterance": f"Tell me fact {k + 1}.", "resolved_utterance": f"Tell me fact {k + 1} of "
         "Scotland.", "response": fact, "ptkb_provenance": [], "response_provenance": []}
        for k, fact in enumerate(IKAT_FACTS)]}]
    gold = {t: {"[1]": {"text": fact, "relevance": "2"}} for t, fact in zip(turns, IKAT_FACTS)}

    def run(name, good):
        return {"run_name": name, "run_type": "automatic", "eval_response": True, "turns": [
            {"turn_id": t, "responses": [{"rank": 1, "text": fact if good or k % 2 else "I do not know.",
                                          "ptkb_provenance": [], "passage_provenance": [
                                              {"id": f"p{k}", "score": 2.0, "used": True},
                                              {"id": f"x{k}", "score": 1.0, "used": False}]}]}
            for k, (t, fact) in enumerate(zip(turns, IKAT_FACTS))]}
    for name, doc in {"topics.json": topics, "gold.json": gold, "A.json": run("A", True), "B.json": run("B", False)
                      }.items():
        (tmp_path / name).write_text(json.dumps(doc))
    (tmp_path / "qrels.txt").write_text("".join(f"{t} Q0 p{k} 2\n" for k, t in enumerate(turns)))
    with TestEndpoint(responder=_ntr_reply) as server:
        os.environ["OPENAI_API_KEY"] = "k"
        argv = ["ikat", "--run", "A.json", "--run", "B.json", "--qrels", "qrels.txt", "--topics", "topics.json",
                "--gold-nuggets", "gold.json", "--matcher", "llm", "--base-url", server.base_url, "--model", "fake"]
        unsharded([*argv, "--out", "full", "--llm-cache", "full.sqlite"])
        first = server.count
        folders = run_shards(argv, tmp_path / "shards", 2)
        calls = server.count
        assert calls == 2 * first  # the shards asked what the unsharded run asked
        assert main(["merge", *folders, "--out", "merged"]) == 0
        assert server.count == calls
    names = same_files("full", "merged")
    assert {"ikat.csv", "ikat.perturn.csv", "ikat.breakdowns.csv", "ikat.scatter.png"} <= set(names)
    manifests = [read_manifest(f) for f in folders]
    assert manifests[0].topics == turns and sorted(manifests[0].own_topics + manifests[1].own_topics) == turns
    for m in manifests:  # each shard matched and scored its own turns only (nugget and passage measures)
        scored = {line.split(",")[1] for line in open(os.path.join(m.folder, "ikat.perturn.csv"))} - {"qid"}
        assert scored == set(m.own_topics)
        assert f"Means over {len(m.own_topics)} turns." in open(os.path.join(m.folder, "ikat.md")).read()


@pytest.mark.parametrize("edit", ["not a cache", "another shard's", "a foreign cache"])
def test_an_edited_cache_field_of_a_manifest_is_named_not_the_merged_cache(tmp_path, rag_files, no_endpoint, capsys,
                                                                          edit):
    """The 'cache' field of a shard's manifest edited to name another file: refused naming that manifest and field
    (it used to be blamed on the merged cache: 'cache-only run: merged/llm-cache.sqlite has no answer ...')."""
    os.environ["OPENAI_API_KEY"] = "k"
    with TestEndpoint() as server:
        argv = ["trec-rag", "--answers", rag_files["A"], "--nuggets", rag_files["nuggets"], "--base-url",
                server.base_url, "--model", "fake"]
        folders = run_shards(argv, tmp_path / "shards", 2)
        edited, other = (read_manifest(f) for f in folders)
        assert edited.cache and other.cache
        ResponseCache(tmp_path / "foreign.sqlite")
        value = {"not a cache": os.path.join(edited.folder, "qrels.txt"), "another shard's": other.cache,
                 "a foreign cache": str(tmp_path / "foreign.sqlite")}[edit]
        data = json.loads(Path(edited.path).read_text())
        data["cache"] = value
        Path(edited.path).write_text(json.dumps(data))
        calls = server.count
        capsys.readouterr()
        assert main(["merge", *folders, "--out", str(tmp_path / "merged")]) == 2
        assert server.count == calls
    err = capsys.readouterr().err
    assert f"{edited.path}: field 'cache'" in err or f"{edited.path} field 'cache'" in err, err
    assert {"not a cache": "not a response cache", "another shard's": "the cache of shard 2/2",
            "a foreign cache": "a manifest's 'cache' edited"}[edit] in err, err
