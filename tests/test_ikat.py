"""iKAT 2024 end to end on miniature conversations in the real formats: the run format (round trip,
validation), the passage ranking and answers it gives, the iKAT joint table and the ``ikat`` command."""
import json
import math
import re

import pandas as pd
import pytest

from pyterrier_nuggets import formats
from pyterrier_nuggets.cli import main
from pyterrier_nuggets.evaluation import ikat
from pyterrier_nuggets.formats import InputError

GOLD = {"0_1": {"[1]": {"text": "Glasgow has a mild oceanic climate.", "relevance": "3"},
                "[2]": {"text": "The river Clyde flows through Glasgow.", "relevance": "2"}},
        "0_2": {"[1]": {"text": "Haggis is a traditional Scottish dish.", "relevance": "2"}}}
TOPICS = [{"number": 0, "title": "Glasgow", "ptkb": {"1": "I live in Glasgow.", "2": "I am vegetarian."},
           "turns": [{"turn_id": 1, "utterance": "What is the weather like?", "resolved_utterance":
                      "What is the weather like in Glasgow?", "response": "Mild.", "ptkb_provenance": [],
                      "response_provenance": []},
                     {"turn_id": 2, "utterance": "What should I eat?", "resolved_utterance":
                      "What Scottish food should I eat as a vegetarian?", "response": "Vegetarian haggis.",
                      "ptkb_provenance": ["2"], "response_provenance": []}]}]
QRELS = "0_1 Q0 p1 3\n0_1 Q0 p2 0\n0_1 Q0 p3 1\n0_2 Q0 p4 2\n"


def _run(name, turns):
    return {"run_name": name, "run_type": "automatic", "eval_response": True, "turns": [
        {"turn_id": tid, "responses": [{"rank": 1, "text": text, "ptkb_provenance": ptkb, "passage_provenance": [
            {"id": d, "score": s, "used": u} for d, s, u in passages]}]} for tid, text, ptkb, passages in turns]}


RUN_A = _run("runA", [("0_1", "Glasgow has a mild oceanic climate.", ["1"], [("p1", 3.5, True), ("p2", 2.0, False)]),
                      ("0_2", "Haggis is a traditional Scottish dish.", ["2"], [("p4", 1.0, True)])])
RUN_B = _run("runB", [("0_1", "It is often sunny in Madrid.", [], [("p2", 9.0, True), ("p9", 8.0, False)]),
                      ("0_2", "Try pizza.", [], [("p8", 1.0, True)])])


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, doc in {"gold.json": GOLD, "topics.json": TOPICS, "runA.json": RUN_A, "runB.json": RUN_B}.items():
        (tmp_path / name).write_text(json.dumps(doc))
        paths[name] = str(tmp_path / name)
    (tmp_path / "qrels.txt").write_text(QRELS)
    paths["qrels"] = str(tmp_path / "qrels.txt")
    return paths


def test_run_round_trip_is_byte_identical(files, tmp_path):
    run = formats.read_ikat_run(files["runA.json"])
    out = tmp_path / "out.json"
    formats.write_ikat_run(str(out), run)
    assert out.read_bytes() == open(files["runA.json"], "rb").read()
    # key order does not matter on reading
    shuffled = {k: RUN_A[k] for k in reversed(list(RUN_A))}
    (tmp_path / "s.json").write_text(json.dumps(shuffled))
    assert formats.read_ikat_run(str(tmp_path / "s.json")) == run


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("run_name"), "run_name"),
    (lambda d: d.update(run_type="semi"), "run_type"),
    (lambda d: d["turns"][0].update(turn_id="01"), "turns[0].turn_id"),
    (lambda d: d["turns"][1].update(turn_id="0_1"), "turns[1].turn_id"),
    (lambda d: d["turns"][0]["responses"][0]["passage_provenance"][0].update(score="high"),
     "turns[0].responses[0].passage_provenance[0].score"),
    (lambda d: d["turns"][0]["responses"][0].update(provenance=[]), "turns[0].responses[0].provenance"),
    (lambda d: d["turns"][0]["responses"][0]["passage_provenance"][0].update(used="yes"),
     "turns[0].responses[0].passage_provenance[0].used"),
])
def test_run_validation_names_the_field(tmp_path, change, field):
    doc = json.loads(json.dumps(RUN_A))
    change(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        formats.read_ikat_run(str(tmp_path / "bad.json"))
    assert e.value.field == field and "bad.json" in str(e.value)


def test_ranking_and_answers():
    run = formats.parse_ikat_run(RUN_B)
    ranking = formats.ikat_ranking(run)
    assert list(zip(ranking.qid, ranking.docno, ranking["rank"])) == [("0_1", "p2", 1), ("0_1", "p9", 2),
                                                                     ("0_2", "p8", 1)]
    assert list(ranking.score) == [9.0, 8.0, 1.0]
    tied = formats.parse_ikat_run(_run("t", [("0_1", "x", [], [("b", 1.0, True), ("a", 1.0, False)])]))
    assert list(formats.ikat_ranking(tied).score) == [-1.0, -2.0]  # a tie cannot reorder the list
    answers = formats.ikat_answers(formats.parse_ikat_run(RUN_A))
    assert list(answers.turn_id) == ["0_1", "0_2"] and answers.references[0] == ["p1"]
    unused = formats.parse_ikat_run(_run("u", [("0_1", "x", [], [(f"p{i}", 10.0 - i, False) for i in range(7)])]))
    assert formats.ikat_answers(unused).references[0] == [f"p{i}" for i in range(5)]  # the validator's top 5


def test_run_from_frames_writes_the_official_form(tmp_path):
    ranking = pd.DataFrame({"qid": ["0_1", "0_1"], "docno": ["p2", "p1"], "score": [1.0, 2.0]})
    answers = pd.DataFrame([{"qid": "0_1", "qanswer": "Mild.", "references": ["p1"], "ptkb_provenance": ["1"]}])
    run = formats.ikat_run_from_frames("mine", ranking, answers)
    formats.write_ikat_run(str(tmp_path / "r.json"), run)
    back = formats.read_ikat_run(str(tmp_path / "r.json"))
    assert [(p.id, p.used) for p in back.turns[0].responses[0].passage_provenance] == [("p1", True), ("p2", False)]
    assert back.eval_response is True and back.turns[0].responses[0].text == "Mild."


def test_ikat_table_by_hand(files):
    from datasets_ext.ikat_parser import parse_ikat_topics
    gold = formats.read_cone_gold_nuggets(files["gold.json"])
    systems = [ikat.IkatSystem(r.run_name, formats.ikat_answers(r), formats.ikat_ranking(r))
               for r in (formats.parse_ikat_run(RUN_A), formats.parse_ikat_run(RUN_B))]
    result = ikat.ikat_table(systems, gold, files["qrels"], topics=list(parse_ikat_topics(TOPICS, "t")))
    means = result.table.means
    assert list(means.columns) == ["nDCG@5", "P@20", "R@20", "R@1000", "AP", "Recall_NtR"]
    # runA turn 0_1: p1 (3) then p2 (0); ideal 3, 1 -> DCG 3 / IDCG (3 + 1/log2 3); turn 0_2: p4 (2) alone, 1
    ndcg_01 = 3 / (3 + 1 / math.log2(3))
    assert means.loc["runA", "nDCG@5"] == pytest.approx((ndcg_01 + 1) / 2)
    assert means.loc["runB", "nDCG@5"] == 0
    # runA repeats one gold nugget of 0_1 (of 2) and the one of 0_2: (1/2 + 1) / 2; runB none
    assert means.loc["runA", "Recall_NtR"] == pytest.approx(0.75)
    assert means.loc["runB", "Recall_NtR"] == 0
    assert "baseline, not entailment" in result.header() and "3 nuggets" in result.header()
    row = result.per_turn[(result.per_turn.system == "runA") & (result.per_turn.qid == "0_2")].iloc[0]
    assert (row.depth, row.personal, row["Recall_NtR"]) == (2, True, 1.0)
    b = result.breakdowns
    personal = b[(b.system == "runA") & (b.breakdown == "personal") & (b.measure == "Recall_NtR")]
    assert dict(zip(personal.group, personal["mean"])) == {"non-personal": 0.5, "personal": 1.0}


def test_ntn_from_cone_lists_and_span_rate():
    responses = {("0_1", "r1"): "Glasgow has a mild oceanic climate. Also cats.", ("0_2", "r1"): "Nothing."}
    items = [formats.ResponseNuggets("0_1", "r1", responses["0_1", "r1"],
                                     ["Glasgow has a mild oceanic climate.", "Also cats."], ["I apologize"]),
             formats.ResponseNuggets("0_2", "r1", "Nothing.", [], [])]
    systems = ikat.systems_from_cone(responses, items)
    result = ikat.ikat_table(systems, _gold_set())
    m = result.table.means.loc["r1"]
    # 0_1: 1 of 2 gold nuggets, 1 of 2 extracted nuggets; 0_2: nothing extracted
    assert m["Recall_NtN"] == pytest.approx(0.25) and m["Precision_NtN"] == pytest.approx(0.25)
    rates = ikat.span_rate(items)
    assert rates.span_rate.tolist() == [pytest.approx((2 / 3 + 0) / 2)]


def _gold_set():
    from datasets_ext.cone_parser import parse_gold_nuggets
    from pyterrier_nuggets.records import Nugget
    return formats.NuggetSet([Nugget(g.query_id, g.index, g.text, "vital") for g in parse_gold_nuggets(GOLD, "g")],
                             {})


def test_ikat_command(files, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["ikat", "--run", files["runA.json"], "--run", files["runB.json"], "--qrels", files["qrels"],
                 "--topics", files["topics.json"], "--gold-nuggets", files["gold.json"], "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "gold.json (3 nuggets)" in printed and "nDCG@5" in printed
    for suffix in (".csv", ".md", ".tex", ".perquery.csv", ".perturn.csv", ".breakdowns.csv", ".scatter.png",
                   ".scatter.pdf", ".scatter.svg"):
        assert (out / f"ikat{suffix}").stat().st_size > 0
    assert (out / "ikat.scatter.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert r"\input{ikat.tex}" in (out / "ikat.tex").read_text()  # the comment names its own file
    per_turn = pd.read_csv(out / "ikat.perturn.csv")
    assert set(per_turn.columns) >= {"system", "qid", "nDCG@5", "Recall_NtR", "depth", "personal"}


def test_ikat_command_keeps_the_vectors_and_writes_the_decisions(files, tmp_path, capsys, monkeypatch):
    """--vector-cache: a re-run loads no encoder (every vector comes from the file); ikat.matches.jsonl holds each
    decision behind Recall_NtR, with the texts it was made on."""
    from pyterrier_nuggets.matchers import embedding
    cache = tmp_path / "vectors.sqlite"
    args = ["ikat", "--run", files["runA.json"], "--run", files["runB.json"], "--qrels", files["qrels"], "--topics",
            files["topics.json"], "--gold-nuggets", files["gold.json"], "--no-plots", "--vector-cache", str(cache)]
    assert main(args + ["--out", str(tmp_path / "first")]) == 0
    assert cache.stat().st_size > 0

    def no_encoder(*a, **k):
        raise AssertionError("the encoder was loaded although every vector is in the cache")
    monkeypatch.setattr(embedding, "_loaded_encoder", no_encoder)
    assert main(args + ["--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "first" / "ikat.perquery.csv").read_text() == (tmp_path / "again" / "ikat.perquery.csv").read_text()
    capsys.readouterr()
    matches = {(m.run_id, m.qid): m for m in formats.read_ikat_matches(str(tmp_path / "first" / "ikat.matches.jsonl"))}
    assert sorted(matches) == [("runA", "0_1"), ("runA", "0_2"), ("runB", "0_1"), ("runB", "0_2")]
    first = matches["runA", "0_1"]
    assert first.response == "Glasgow has a mild oceanic climate." and first.query == "What is the weather like in Glasgow?"
    assert [d.id for d in first.ntr] == ["0_1:n0", "0_1:n1"] and first.ntr[0].text == GOLD["0_1"]["[1]"]["text"]
    per_query = pd.read_csv(tmp_path / "first" / "ikat.perquery.csv", dtype={"qid": str})
    recall = per_query[(per_query.measure == "Recall_NtR")].set_index(["system", "qid"])["value"]
    for (run, qid), m in matches.items():  # the decisions are what the measure counted
        assert recall[run, qid] == pytest.approx(sum(d.matched for d in m.ntr) / len(m.ntr))
    assert main(args[:-2] + ["--matcher", "llm", "--vector-cache", "x", "--out", str(tmp_path / "o")]) == 2


def test_ikat_command_errors(files, tmp_path, capsys):
    assert main(["ikat", "--gold-nuggets", files["gold.json"], "--out", str(tmp_path)]) == 2
    assert "--run" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"run_name": "x", "run_type": "automatic", "turns": [{"turn_id": 3}]}')
    assert main(["ikat", "--run", str(tmp_path / "bad.json"), "--qrels", files["qrels"], "--topics",
                 files["topics.json"], "--gold-nuggets", files["gold.json"], "--out", str(tmp_path / "o")]) == 2
    assert "turns[0].turn_id" in capsys.readouterr().err
    assert not (tmp_path / "o" / "ikat.csv").exists()


# ------------------------------------------------------------------------------ conversational generation

def _ikat_turns():
    from datasets_ext.ikat_parser import parse_ikat_topics
    return list(parse_ikat_topics(TOPICS, "topics.json"))


def _retrieved(qids=("0_1", "0_2")):
    return pd.DataFrame([{"qid": q, "docno": f"{q}-p{i}", "score": 2.0 - i, "text": f"Passage {i} about {q}."}
                         for q in qids for i in range(2)])


def _user_prompt(server, qid):
    return next(b["messages"][-1]["content"] for b in server.requests if f"about {qid}" in b["messages"][-1]["content"])


def test_generation_resolved_utterance(server, llm):
    from pyterrier_nuggets.judges.generation import CitedGenerator
    out = CitedGenerator(llm, conversation="resolved", topics=_ikat_turns(), run_id="mine")(_retrieved())
    prompt = _user_prompt(server, "0_2")
    assert "rewritten to stand on its own" in prompt
    assert "What Scottish food should I eat as a vegetarian?" in prompt
    assert "What should I eat?" not in prompt and "I am vegetarian." not in prompt and "Mild." not in prompt
    assert "[1] Passage 0 about 0_2." in prompt
    assert list(out.turn_id) == ["0_1", "0_2"] and list(out.qid) == ["0_1", "0_2"]
    assert list(out["query"]) == ["What is the weather like in Glasgow?",
                                  "What Scottish food should I eat as a vegetarian?"]
    assert out.sentences[0][0] == {"text": "Passage 0 about 0_1.", "citations": [0]}
    # the answers go into an iKAT run as they are
    run = formats.ikat_run_from_frames("mine", _retrieved(), out)
    assert [t.turn_id for t in run.turns] == ["0_1", "0_2"] and run.turns[0].responses[0].text == out.qanswer[0]


def test_generation_raw_utterance_history_and_ptkb(server, llm, tmp_path):
    from pyterrier_nuggets.judges.generation import CitedGenerator
    from tests.conftest import fake_client
    out = CitedGenerator(llm, conversation="raw", topics=_ikat_turns())(_retrieved())
    first, second = _user_prompt(server, "0_1"), _user_prompt(server, "0_2")
    assert "as typed" in second and "The user's latest utterance, as typed" in second
    assert "What should I eat?" in second and "What Scottish food" not in second
    assert "User: What is the weather like?\nAssistant: Mild." in second  # the history of turn 2
    assert "- I live in Glasgow.\n- I am vegetarian." in second  # the PTKB statements
    assert "(none: this is the first turn)" in first and "What is the weather like?" in first
    assert list(out.turn_id) == ["0_1", "0_2"]
    # the same from the columns of the iKAT queries (pt.get_dataset('irds:trec-ikat/2024').get_topics())
    server.requests.clear()
    topics = pd.DataFrame(_ikat_turns()).rename(columns={"query_id": "qid"})
    with_columns = topics.merge(_retrieved(), on="qid")
    again = CitedGenerator(fake_client(server, tmp_path / "fresh.sqlite"), conversation="raw")(with_columns)
    assert _user_prompt(server, "0_2") == second and list(again.turn_id) == ["0_1", "0_2"]
    assert "topic_title" in again.columns  # topic columns pass through


def test_generation_trec_rag_prompt_unchanged(server, llm):
    from pyterrier_nuggets.judges.generation import CitedGenerator
    from pyterrier_nuggets.prompts import PROMPT_DIR
    CitedGenerator(llm)(_retrieved(("0_1",)).assign(query="What is the weather like in Glasgow?"))
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "Question: What is the weather like in Glasgow?" in prompt and "conversation" not in prompt
    assert "Question: {query}" in (PROMPT_DIR / "cited_generation.txt").read_text()


def test_generation_conversation_errors(llm):
    from pyterrier_nuggets.judges.generation import CitedGenerator
    with pytest.raises(ValueError, match="'resolved' or 'raw'"):
        CitedGenerator(llm, conversation="history")
    with pytest.raises(ValueError, match="topics= is for conversational"):
        CitedGenerator(llm, topics=_ikat_turns())
    with pytest.raises(ValueError, match="turn 9_1 is neither"):
        CitedGenerator(llm, conversation="raw", topics=_ikat_turns())(_retrieved(("9_1",)))
    bad = pd.DataFrame(_ikat_turns()).rename(columns={"query_id": "qid"}).merge(_retrieved(), on="qid")
    bad["ptkb"] = "I am vegetarian."
    with pytest.raises(ValueError, match="ptkb of turn 0_1"):
        CitedGenerator(llm, conversation="raw")(bad)


def _licensed_passages_and_a_run(tmp_path, monkeypatch):
    """The miniature iKAT datasets with their (licensed) passages in IR_DATASETS_HOME, a fresh LLM cache, and
    tmp_path/run.json: the run "mine" ranking three passages for turn 0_1 and one for 0_2."""
    from tests.datasets_fixtures import build_ikat
    build_ikat(tmp_path / "home")
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path / "cache.sqlite"))
    run = _run("mine", [("0_1", "It rains.", [], [("clueweb22-en0000-00-00001:0", 2.0, True),
                                                  ("clueweb22-en0000-00-00002:0", 1.0, False),
                                                  ("clueweb22-en0000-00-00002:1", 0.5, False)]),
                        ("0_2", "No idea.", [], [("clueweb22-en0000-00-00003:1", 1.0, True)])])
    (tmp_path / "run.json").write_text(json.dumps(run))


def test_ikat_command_generates_from_a_run(server, tmp_path, monkeypatch, capsys):
    """With the (miniature) licensed passages in IR_DATASETS_HOME, --generate answers each turn from the
    run's passage ranking, scores it as a system and writes the generated run in the official format."""
    from tests.datasets_fixtures import CONE_GOLD_HUMAN
    _licensed_passages_and_a_run(tmp_path, monkeypatch)
    (tmp_path / "gold.json").write_text(json.dumps(CONE_GOLD_HUMAN))
    out = tmp_path / "out"
    code = main(["ikat", "--run", str(tmp_path / "run.json"), "--gold-nuggets", str(tmp_path / "gold.json"),
                 "--generate", "raw", "--base-url", server.base_url, "--model", "fake", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "mine+gen-raw" in printed and "CitedGenerator(conversation='raw'" in printed
    prompts = [b["messages"][-1]["content"] for b in server.requests]
    second = next(p for p in prompts if "passage 1 of document 3" in p)
    assert "2024 question 2 of topic 0" in second and "2024 resolved" not in second  # the raw utterance
    assert "User: 2024 question 1 of topic 0\nAssistant: 2024 answer 1 of topic 0" in second  # the history
    assert "- I'm vegetarian.\n- I live in Glasgow." in second  # the PTKB
    generated = formats.read_ikat_run(str(out / "mine+gen-raw.json"))
    assert generated.run_name == "mine+gen-raw" and [t.turn_id for t in generated.turns] == ["0_1", "0_2"]
    assert generated.turns[1].responses[0].text.startswith("passage 1 of document 3")
    # the passages the answer cites are marked used (the fake model cites passages [1] and [2] of three)
    assert generated.turns[0].responses[0].used_passages() == ["clueweb22-en0000-00-00001:0",
                                                               "clueweb22-en0000-00-00002:0"]
    table = pd.read_csv(out / "ikat.csv")
    assert set(table.iloc[:, 0]) == {"mine", "mine+gen-raw"}


PTKB_TOPICS = [{"number": "9-1", "title": "Diet", "ptkb": {"1": "I am vegan.", "2": "I live in Leeds.",
                                                           "3": "I run."},
                "turns": [{"turn_id": t, "utterance": f"u{t}", "resolved_utterance": f"r{t}", "response": f"a{t}",
                           "ptkb_provenance": [], "response_provenance": []} for t in (1, 2)]}]
PTKB_QRELS = "9-1_1 0 1 1\n9-1_1 0 2 0\n9-1_1 0 3 0\n9-1_2 0 1 0\n9-1_2 0 2 1\n9-1_2 0 3 0\n"


def test_ptkb_ranking_by_hand(tmp_path, capsys):
    (tmp_path / "topics.json").write_text(json.dumps(PTKB_TOPICS))
    (tmp_path / "qrels").write_text(PTKB_QRELS)
    (tmp_path / "a.run").write_text("9-1_1 Q0 1 1 2.0 a\n9-1_1 Q0 2 2 1.0 a\n9-1_2 Q0 1 1 2.0 a\n"
                                    "9-1_2 Q0 2 2 1.0 a\n")
    (tmp_path / "b.run").write_text("9-1_1 Q0 3 1 1.0 b\n")  # turn 9-1_2 left out: it scores 0
    out = tmp_path / "out"
    code = main(["ikat", "--ptkb-run", str(tmp_path / "a.run"), "--ptkb-run", f"other={tmp_path / 'b.run'}",
                 "--ptkb-qrels", str(tmp_path / "qrels"), "--topics", str(tmp_path / "topics.json"),
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert "PTKB statement ranking" in capsys.readouterr().out
    means = pd.read_csv(out / "ptkb.csv", index_col=0)
    # a: turn 1 relevant {1} at rank 1; turn 2 relevant {2} at rank 2 -> nDCG@3 (1 + 1/log2 3) / 2, AP (1 + 1/2) / 2
    assert means.loc["a", "nDCG@3"] == pytest.approx((1 + 1 / math.log2(3)) / 2, abs=1e-4)
    assert means.loc["a", "P@3"] == pytest.approx(1 / 3, abs=1e-4)
    assert means.loc["a", "R@3"] == pytest.approx(1.0) and means.loc["a", "AP"] == pytest.approx(0.75)
    assert means.loc["other", "nDCG@3"] == 0 and means.loc["other", "R@3"] == 0
    per_turn = pd.read_csv(out / "ptkb.perturn.csv")
    assert len(per_turn[per_turn.system == "other"]) == 2  # both turns of the qrels, the missing one as 0
    assert not (out / "ptkb.scatter.png").exists() and not (out / "ikat.csv").exists()


def test_ptkb_run_refuses_unknown_statements(tmp_path, capsys):
    (tmp_path / "topics.json").write_text(json.dumps(PTKB_TOPICS))
    (tmp_path / "qrels").write_text(PTKB_QRELS)
    (tmp_path / "bad.run").write_text("9-1_1 Q0 1 1 2.0 a\n9-1_1 Q0 7 2 1.0 a\n")
    args = ["ikat", "--ptkb-run", str(tmp_path / "bad.run"), "--ptkb-qrels", str(tmp_path / "qrels"), "--topics",
            str(tmp_path / "topics.json"), "--out", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "bad.run:2: field 'docno'" in err and "'7' is not a PTKB statement id of turn 9-1_1" in err
    (tmp_path / "bad.run").write_text("9-1_9 Q0 1 1 2.0 a\n")
    assert main(args) == 2 and "bad.run:1: field 'qid'" in capsys.readouterr().err
    (tmp_path / "qrels").write_text(PTKB_QRELS + "9-1_1 0 9 1\n")  # the qrels name a statement the topics lack
    (tmp_path / "bad.run").write_text("9-1_1 Q0 1 1 2.0 a\n")
    assert main(args) == 2 and "qrels: turn 9-1_1, statement '9'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.filterwarnings("ignore:.* has md5 .*:UserWarning")
def test_ptkb_defaults_to_the_registered_2023_qrels(tmp_path, monkeypatch, capsys):
    from tests.datasets_fixtures import build_ikat
    build_ikat(tmp_path / "home")
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    # the miniature trec-ikat/2023/ptkb qrels: 9-1_1 relevant {1}, 10-1_2 relevant {2}
    (tmp_path / "r.run").write_text("9-1_1 Q0 1 1 2.0 r\n10-1_2 Q0 1 1 2.0 r\n10-1_2 Q0 2 2 1.0 r\n")
    assert main(["ikat", "--ptkb-run", str(tmp_path / "r.run"), "--out", str(tmp_path / "out")]) == 0
    means = pd.read_csv(tmp_path / "out" / "ptkb.csv", index_col=0)
    assert means.loc["r", "AP"] == pytest.approx(0.75) and "trec-ikat/2023/ptkb (2 turns)" in capsys.readouterr().out


def test_generator_repr_names_the_conversation(llm):
    from pyterrier_nuggets.judges.generation import CitedGenerator
    assert repr(CitedGenerator(llm, conversation="raw")).startswith("CitedGenerator(conversation='raw', k=20")
    assert "conversation" not in repr(CitedGenerator(llm))


def _first_sentence(body):
    """The CONE-RAG extraction prompt answered with the text's first sentence (an exact span)."""
    text = body["messages"][-1]["content"].split("#Text: ", 1)[1].split("\n(Please", 1)[0]
    return text.split(". ")[0].rstrip(".") + "."


@pytest.mark.parametrize("responder", [_first_sentence])
def test_ikat_command_extracts_nuggets_for_ntn(files, server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / "out"
    code = main(["ikat", "--run", files["runA.json"], "--run", files["runB.json"], "--qrels", files["qrels"],
                 "--topics", files["topics.json"], "--gold-nuggets", files["gold.json"], "--extract",
                 "--base-url", server.base_url, "--model", "fake", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "NuggetExtractor ([cone-rag §4.1]), llm fake (the TEST ENDPOINT" in printed and "127.0.0.1" not in printed
    table = pd.read_csv(out / "ikat.csv").set_index(pd.read_csv(out / "ikat.csv").columns[0])
    assert {"Recall_NtN", "Precision_NtN"} <= set(table.columns)
    # runA's responses are the gold nuggets' own sentences: extracted, they match; runB's match nothing
    assert table.loc["runA", "Precision_NtN"] > table.loc["runB", "Precision_NtN"] == 0
    prompts = [b["messages"][-1]["content"] for b in server.requests]
    assert any("#User query: What is the weather like in Glasgow?" in p for p in prompts)  # the resolved utterance
    assert main(["ikat", "--run", files["runA.json"], "--gold-nuggets", files["gold.json"], "--extract",
                 "--response-nuggets", files["gold.json"], "--out", str(tmp_path / "x")]) == 2
    assert "not both" in capsys.readouterr().err


def test_demo_on_ikat_runs(tmp_path, monkeypatch, capsys):
    """`demo --dataset trec-ikat/2024 --run NAME=RUN.json`: the main job's face for submitted iKAT runs, with the
    registered gold nuggets and passage qrels (miniature files in IR_DATASETS_HOME) and the offline matcher."""
    from tests.datasets_fixtures import build_ikat
    home = tmp_path / "home"
    build_ikat(home)
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    run = _run("mine", [("0_1", "Glasgow has a mild climate.", [], [("clueweb22-en0000-00-00001:0", 2.0, True)]),
                        ("0_2", "No idea.", [], [("clueweb22-en0000-00-00003:1", 1.0, True)])])
    (tmp_path / "mine.json").write_text(json.dumps(run))
    out = tmp_path / "out"
    assert main(["demo", "--dataset", "trec-ikat/2024", "--run", f"mine={tmp_path / 'mine.json'}", "--out",
                 str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "trec-ikat/2024/gold-nuggets-human" in printed and "embedding all-MiniLM-L6-v2" in printed
    table = pd.read_csv(out / "ikat.csv")
    assert list(table.iloc[:, 0]) == ["mine"] and table.loc[0, "nDCG@5"] == 1.0  # its one passage is the relevant one
    assert 0 < table.loc[0, "Recall_NtR"] < 1  # the first turn's response states a gold nugget, the second none
    assert main(["demo", "--dataset", "trec-ikat/2024", "--run", f"other={tmp_path / 'mine.json'}", "--out",
                 str(tmp_path / "o2")]) == 2
    assert "named by its run_name, 'mine'" in capsys.readouterr().err
    assert main(["demo", "--dataset", "trec-ikat/2024", "--system", "bm25:3", "--run", f"mine={tmp_path / 'mine.json'}",
                 "--out", str(tmp_path / "o3")]) == 2
    assert "--system do not apply to iKAT runs" in capsys.readouterr().err


def _generate_or_match(body):
    """The cited generator answered as the package's test endpoint does; the CONE-RAG matcher says yes when
    every word of 4+ letters of the gold nugget is in the response."""
    from pyterrier_nuggets.testing import first_prompt
    prompt = first_prompt(body)
    if "#Gold Information" not in prompt:
        return None  # the test endpoint's own reply
    gold = prompt.split("#Gold Information", 1)[1].split("#Response", 1)[0]
    response = prompt.split("#Response", 1)[1].lower()
    return "yes" if all(w in response for w in re.findall(r"\w{4,}", gold.lower())) else "no"


@pytest.mark.parametrize("responder", [_generate_or_match])
def test_demo_on_ikat_generates_from_a_run_with_the_endpoint_of_the_environment(server, tmp_path, monkeypatch,
                                                                                 capsys):
    """`demo --dataset trec-ikat/2024 --run ... --generate resolved -k 2` with the endpoint and model named only
    in the environment: the run's own answers and the generated ones, judged by the LLM matcher."""
    _licensed_passages_and_a_run(tmp_path, monkeypatch)
    argv = ["demo", "--dataset", "trec-ikat/2024", "--run", f"mine={tmp_path / 'run.json'}", "--generate",
            "resolved", "-k", "2", "--no-plots"]
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(argv + ["--out", str(tmp_path / "offline")]) == 2  # no endpoint: no offline generator here
    assert "--generate needs an endpoint" in capsys.readouterr().err
    assert not (tmp_path / "offline").exists()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("PYTERRIER_NUGGETS_MODEL", "fake")
    out = tmp_path / "out"
    assert main(argv + ["--out", str(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "matcher: llm" in printed and "CitedGenerator(conversation='resolved', k=2), llm fake (the TEST ENDPOINT" in printed
    from pyterrier_nuggets.testing import first_prompt
    prompts = [first_prompt(b) for b in server.requests]
    generation = [p for p in prompts if "#Gold Information" not in p]
    assert len(generation) == 2 and all("2024 resolved" in p for p in generation)  # per turn, the resolved utterance
    first = next(p for p in generation if "resolved question 1 of topic 0" in p)
    assert "passage 0 of document 2" in first and "passage 1 of document 2" not in first  # -k 2: two of three shown
    assert any("#Gold Information" in p for p in prompts)  # the LLM matcher judged
    table = pd.read_csv(out / "ikat.csv")
    assert list(table.iloc[:, 0]) == ["mine", "mine+gen-resolved"]
    assert formats.read_ikat_run(str(out / "mine+gen-resolved.json")).run_name == "mine+gen-resolved"
    # --generate belongs to the iKAT route; -k without it is refused there
    assert main(["demo", "--generate", "raw", "--out", str(tmp_path / "o1")]) == 2
    assert "--generate is for --dataset trec-ikat/2024" in capsys.readouterr().err
    assert main(argv[:5] + ["-k", "3", "--out", str(tmp_path / "o2")]) == 2
    assert "-k (without --generate) do not apply" in capsys.readouterr().err


def test_ikat_k_is_within_the_reference_limit(files, tmp_path, capsys):
    assert main(["ikat", "--run", files["runA.json"], "--gold-nuggets", files["gold.json"], "--generate", "raw",
                 "-k", "21", "--out", str(tmp_path / "out")]) == 2
    assert "-k must be between 1 and 20" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_ikat_llm_steps_need_an_endpoint(files, tmp_path, monkeypatch, capsys):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for option in (["--matcher", "llm"], ["--extract"]):
        assert main(["ikat", "--run", files["runA.json"], "--qrels", files["qrels"], "--topics", files["topics.json"],
                     "--gold-nuggets", files["gold.json"], *option, "--out", str(tmp_path / "out")]) == 2
        assert "needs an endpoint" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------ turns, headers

def _systems(turns_a=("0_1", "0_2"), turns_b=("0_1", "0_2")):
    texts = {"0_1": "Glasgow has a mild oceanic climate.", "0_2": "Haggis is a traditional Scottish dish.",
             "4_7": "An answer to a turn without gold nuggets."}
    return [ikat.IkatSystem(name, pd.DataFrame([{"qid": t, "qanswer": texts[t]} for t in turns]))
            for name, turns in (("runA", turns_a), ("runB", turns_b))]


def test_ikat_header_carries_the_matchers_agreement_with_people():
    result = ikat.ikat_table(_systems(), _gold_set())
    header = result.header()
    assert "matcher agreement with people: NtR: held-out kappa 0.18-0.40" in header and "crowd" in header
    assert "always answering no scores 0.86-0.90" in header  # the majority baseline beside the accuracy
    assert "turns evaluated: 2 of 2 with gold nuggets" in header
    items = [formats.ResponseNuggets(t, r, "x", ["x"], []) for t in ("0_1", "0_2") for r in ("runA", "runB")]
    responses = {(t, r): "x" for t in ("0_1", "0_2") for r in ("runA", "runB")}
    with_ntn = ikat.ikat_table(ikat.systems_from_cone(responses, items), _gold_set()).header()
    assert "NtR matcher: embedding all-MiniLM-L6-v2 cosine >= 0.66" in with_ntn
    assert "NtN matcher: embedding all-MiniLM-L6-v2 cosine >= 0.63" in with_ntn and "NtN: held-out kappa 0.19-0.38" in with_ntn
    from pyterrier_nuggets.matchers import EmbeddingMatcher
    other = ikat.ikat_table(_systems(), _gold_set(), matcher=EmbeddingMatcher(0.7)).header()
    assert "agreement with people not measured at these settings" in other


def test_ikat_turns_that_match_nothing_are_refused_or_reported():
    gold = _gold_set()
    from dataclasses import replace
    dashed = formats.NuggetSet([replace(n, qid="0-2") if n.qid == "0_2" else n for n in gold.nuggets], {})
    # gold turn 0-2 answered by no system (the responses say 0_2): refused, naming the near miss
    with pytest.raises(ValueError, match=r"1 of 2 gold nugget turns have no response .*0-2 \(a response turn is 0_2\)"):
        ikat.ikat_table(_systems(), dashed)
    # or left out on request, and the header says so (0_2's response has no gold nuggets: not evaluated)
    result = ikat.ikat_table(_systems(), dashed, unanswered="leave-out")
    header = result.header()
    assert "turns evaluated: 1 of 2" in header and "without any response, left out: 1 (0-2" in header
    assert "response turns without gold nuggets, not evaluated: 1 (0_2)" in header
    assert set(result.table.per_query["qid"]) == {"0_1"}
    with pytest.raises(ValueError, match="no turn of the gold nuggets has a response"):
        ikat.ikat_table(_systems(("4_7",), ("4_7",)), gold)
    # a system without a response to an evaluated turn scores 0 there, with a warning and a note
    with pytest.warns(UserWarning, match="runB: no response to 1 of 2 evaluated turns, scored 0 there"):
        result = ikat.ikat_table(_systems(turns_b=("0_1",)), gold)
    assert "runB: no response to 1 of 2" in result.header()
    assert result.table.per_query.query("system == 'runB' and qid == '0_2'")["value"].tolist() == [0.0]


def test_cone_systems_refuse_responses_without_their_nuggets():
    responses = {("0_1", "r1"): "x", ("0_2", "r1"): "y"}
    items = [formats.ResponseNuggets("0_1", "r1", "x", ["x"], [])]
    with pytest.raises(ValueError, match=r"no entry for 1 responses .*'0_2', 'r1'"):
        ikat.systems_from_cone(responses, items)


def test_ikat_command_header_and_matcher_threshold(files, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["ikat", "--run", files["runA.json"], "--run", files["runB.json"], "--qrels", files["qrels"], "--topics",
            files["topics.json"], "--gold-nuggets", files["gold.json"], "--no-plots"]
    assert main(args + ["--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "matcher agreement with people: NtR: held-out kappa 0.18-0.40" in printed
    assert "matcher agreement with people: NtR: held-out kappa 0.18-0.40" in (out / "ikat.md").read_text()
    assert main(args + ["--matcher", "embedding:0.5", "--out", str(tmp_path / "o2")]) == 0
    assert "cosine >= 0.5" in capsys.readouterr().out
    assert main(args + ["--matcher", "embedding:x", "--out", str(tmp_path / "o3")]) == 2
    assert "embedding:T" in capsys.readouterr().err
