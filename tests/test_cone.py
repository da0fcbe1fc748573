"""CONE-RAG ([cone-rag]): the measures (hand-worked, plain ir_measures CLI), the resource formats, span location,
extraction and matching against the fake OpenAI-compatible server, de-duplication, the embedding matcher and a
tiny NLI model built here."""
import json
import re
import subprocess

import ir_measures
import pandas as pd
import pytest
from ir_measures import Qrel, ScoredDoc

import ir_measures_ext
from ir_measures_ext import Precision_NtN, Recall_NtN, Recall_NtR, Segments, ids, scoring
from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import score
from pyterrier_nuggets.evaluation.cone import NuggetToNugget, NuggetToResponse, dedup_decisions, deduplicate
from pyterrier_nuggets.formats.files import InputError
from pyterrier_nuggets.judges import LLMStepError
from pyterrier_nuggets.judges.cone import NuggetExtractor, locate_span, parse_extraction
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.matchers import (
    EmbeddingMatcher,
    LLMMatcher,
    Match,
    Matcher,
    NLIMatcher,
    as_matcher,
    parse_yes_no,
)
from pyterrier_nuggets.prompts import PROMPT_DIR
from pyterrier_nuggets.records import ExtractedNugget, Nugget
from tests.test_measures import _cli, _write

# ------------------------------------------------------------------------------------------ measures

QRELS = [Qrel("t1", f"t1:n{i}", 2) for i in range(4)] + [Qrel("t2", "t2:n0", 2), Qrel("t2", "t2:n1", 2)]
NTN_RUN = [ScoredDoc("t1", "t1:ntn:n0", 1.0), ScoredDoc("t1", "t1:ntn:n1", 0.0), ScoredDoc("t1", "t1:ntn:n3", 1.0),
           ScoredDoc("t1", "t1:ntn:x0", 1.0), ScoredDoc("t1", "t1:ntn:x1", 0.0), ScoredDoc("t1", "t1:ntn:x2", 1.0),
           ScoredDoc("t1", "seg-7", 3.0)]
NTR_RUN = [ScoredDoc("t1", "t1:ntr:n2", 1.0), ScoredDoc("t1", "t1:ntr:n0", 0.0),
           ScoredDoc("t2", "t2:ntr:n0", 1.0), ScoredDoc("t2", "t2:ntr:n1", 1.0)]


def per_query(measures, run, qrels=QRELS):
    return {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}


def test_cone_scores_worked_example():
    assert scoring.cone_scores([True, False, False, True], [True, False, True]) == (0.5, pytest.approx(2 / 3))
    assert scoring.cone_scores([], []) == (0.0, 0.0)


def test_row_ids_are_distinct_per_method_and_not_segments():
    assert ids.parse_row_id("t1", "t1:ntr:n3") == ids.RowKind("ntr_gold", nugget=3)
    assert ids.parse_row_id("t1", "t1:ntn:n3").kind == "ntn_gold"
    assert ids.parse_row_id("t1", "t1:ntn:x2") == ids.RowKind("ntn_extracted", sentence=2)
    assert ids.parse_row_id("t1", "t1:n3").kind == "nugget"  # an AutoNuggetizer row is not a CONE-RAG row
    assert ids.cone_gold_id("t1", "ntn", 0) == "t1:ntn:n0" and ids.cone_extracted_id("t1", 4) == "t1:ntn:x4"
    with pytest.raises(ValueError):
        ids.cone_gold_id("t1", "ntx", 0)


def test_ntn_measures_hand_worked():
    got = per_query([Recall_NtN, Precision_NtN], NTN_RUN)
    assert got["t1", "Recall_NtN"] == pytest.approx(2 / 4)  # n0, n3 of four gold nuggets; n2 has no row: 0
    assert got["t1", "Precision_NtN"] == pytest.approx(2 / 3, abs=1e-4)
    assert got["t2", "Recall_NtN"] == 0.0 and got["t2", "Precision_NtN"] == 0.0  # no response rows: empty


def test_ntr_recall_hand_worked_and_methods_never_mix():
    got = per_query([Recall_NtR], NTR_RUN)
    assert got["t1", "Recall_NtR"] == pytest.approx(1 / 4) and got["t2", "Recall_NtR"] == 1.0
    with pytest.raises(ValueError, match="matched with another method"):
        per_query([Recall_NtR], NTN_RUN)
    with pytest.raises(ValueError, match="matched with another method"):
        per_query([Recall_NtN], NTR_RUN)
    with pytest.raises(ValueError, match="Precision_NtN"):
        per_query([Precision_NtN], NTR_RUN)


def test_bad_rows_are_refused():
    with pytest.raises(ValueError, match="1.0 \\(yes\\) or 0.0"):
        per_query([Recall_NtR], [ScoredDoc("t1", "t1:ntr:n0", 0.5)])
    with pytest.raises(ValueError, match="not in the nugget qrels"):
        per_query([Recall_NtR], [ScoredDoc("t1", "t1:ntr:n9", 1.0)])
    with pytest.raises(ValueError, match="lacks rows for extracted nugget"):
        per_query([Precision_NtN], [ScoredDoc("t1", "t1:ntn:n0", 1.0), ScoredDoc("t1", "t1:ntn:x1", 1.0)])


def test_segments_ignore_cone_rows():
    qrels = QRELS + [Qrel("t1", "seg-7", 1)]
    got = per_query([Segments("P@1")], NTN_RUN, qrels)
    assert got["t1", "Segments(P@1)"] == 1.0  # the segment, not an evaluation row, is ranked first


def test_plain_ir_measures_cli_scores_cone_runs(tmp_path):
    qrels = _write(tmp_path / "gold.qrels", [f"{q.query_id} 0 {q.doc_id} {q.relevance}" for q in QRELS])
    ntn = _write(tmp_path / "ntn.run", [f"{d.query_id} Q0 {d.doc_id} {i} {d.score} s" for i, d in enumerate(NTN_RUN)])
    ntr = _write(tmp_path / "ntr.run", [f"{d.query_id} Q0 {d.doc_id} {i} {d.score} s" for i, d in enumerate(NTR_RUN)])
    out = subprocess.run(_cli() + [qrels, ntn, "-q", "Recall_NtN", "Precision_NtN"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = {tuple(line.split("\t")[:2]): float(line.split("\t")[2]) for line in out.stdout.splitlines()}
    assert got["t1", "Recall_NtN"] == 0.5 and got["t1", "Precision_NtN"] == pytest.approx(2 / 3, abs=1e-4)
    out = subprocess.run(_cli() + [qrels, ntr, "Recall_NtR"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.split("\t")[-1]) == pytest.approx((1 / 4 + 1) / 2, abs=1e-4)


# ------------------------------------------------------------------------------------------ formats

GOLD_JSON = {"t1": {"[1]": {"text": "Paris is the capital of France.", "relevance": "2"},
                    "[3]": {"text": "Paris has two million inhabitants.", "relevance": "4"}},
             "t2": {"[1]": {"text": "Bananas are yellow.", "relevance": "1"}}}


def test_gold_nuggets_read_as_grade_2_with_their_keys(tmp_path):
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(GOLD_JSON))
    gold = formats.read_cone_gold_nuggets(str(path))
    assert [n.id for n in gold.nuggets] == ["t1:n0", "t1:n2", "t2:n0"]
    assert {n.grade for n in gold.nuggets} == {ids.GOLD_GRADE} == {2}
    assert gold.nuggets[1].provenance == {"cone_key": "[3]", "passage_relevance": 4}
    out = tmp_path / "back.json"
    formats.write_cone_gold_nuggets(str(out), gold)
    assert json.loads(out.read_text()) == GOLD_JSON
    qrels = formats.nugget_qrels(gold)
    assert qrels["label"].tolist() == [2, 2, 2]


@pytest.mark.parametrize("doc,field", [
    ({"t1": {"1": {"text": "x", "relevance": "2"}}}, "t1.1"),
    ({"t1": {"[1]": {"text": "", "relevance": "2"}}}, "t1.[1].text"),
    ({"t1": {"[1]": {"text": "x", "relevance": "high"}}}, "t1.[1].relevance"),
    ({"t1": {"[1]": {"text": "x", "relevance": "5"}}}, "t1.[1].relevance"),  # outside the 0-4 scale
    ({"t1": {"[1]": {"text": "x", "relevance": 99}}}, "t1.[1].relevance"),
    ({"t1": ["x"]}, "t1"),
])
def test_gold_nugget_errors_name_file_and_field(tmp_path, doc, field):
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        formats.read_cone_gold_nuggets(str(path))
    assert e.value.field == field and str(path) in str(e.value)


def test_responses_and_response_nuggets_round_trip(tmp_path):
    responses = {("t1", "runA"): "Paris is the capital.", ("t1", "runB"): "", ("t2", "runA"): "Yellow bananas."}
    formats.write_cone_responses(str(tmp_path / "r.json"), responses)
    assert formats.read_cone_responses(str(tmp_path / "r.json")) == responses
    items = [formats.ResponseNuggets("t1", "manual", "Paris is the capital.", ["Paris is the capital"], ["", "x"])]
    formats.write_cone_response_nuggets(str(tmp_path / "n.json"), items)
    assert json.loads((tmp_path / "n.json").read_text())["t1"]["manual"]["nuggets"]["not-matched"] == ["", "x"]
    assert formats.read_cone_response_nuggets(str(tmp_path / "n.json")) == items
    (tmp_path / "bad.json").write_text(json.dumps({"t1": {"runA": {"response": "r", "nuggets": {"matched": []}}}}))
    with pytest.raises(InputError, match="not-matched"):
        formats.read_cone_response_nuggets(str(tmp_path / "bad.json"))


@pytest.mark.parametrize("text,where", [
    ('{"t1": {"[1]": {"text": "a", "relevance": "2"}}, "t1": {"[2]": {"text": "b", "relevance": "2"}}}', None),
    ('{"t1": {"[1]": {"text": "a", "relevance": "2"}, "[1]": {"text": "b", "relevance": "2"}}}', "t1"),
])
def test_a_key_given_twice_is_refused_not_overwritten(tmp_path, text, where):
    """json keeps the last of two equal keys: the nuggets of the first would be lost without a word."""
    path = tmp_path / "gold.json"
    path.write_text(text)
    with pytest.raises(InputError, match="appears more than once") as e:
        formats.read_cone_gold_nuggets(str(path))
    assert e.value.field == where
    (tmp_path / "r.json").write_text('{"t1": {"runA": "x", "runA": "y"}}')
    with pytest.raises(InputError, match="'runA' appears more than once"):
        formats.read_cone_responses(str(tmp_path / "r.json"))


def test_published_files_are_checked_to_be_read_completely(tmp_path, monkeypatch):
    """A file with a published md5 must give what the published file holds; else the reader lost entries."""
    import hashlib

    from datasets_ext import cone_parser
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(GOLD_JSON))
    md5 = hashlib.md5(path.read_bytes()).hexdigest()
    published = cone_parser.ConeFile("human_resources/gold.json", md5, {"turns": 2, "nuggets": 3})
    monkeypatch.setitem(cone_parser.PUBLISHED, md5, ("gold-nuggets-human", published))
    assert len(formats.read_cone_gold_nuggets(str(path)).nuggets) == 3
    monkeypatch.setitem(cone_parser.PUBLISHED, md5,
                        ("gold-nuggets-human", published._replace(counts={"turns": 2, "nuggets": 4})))
    with pytest.raises(InputError, match="read {'turns': 2, 'nuggets': 3} .* holds {'turns': 2, 'nuggets': 4}"):
        formats.read_cone_gold_nuggets(str(path))
    # the published files: URL, md5, and the counts the files hold (116 turns; 2,279 / 1,201 / 6,680 / 3,760 nuggets)
    assert [cone_parser.CONE_FILES[f"gold-nuggets-{s}"].counts["nuggets"]
            for s in ("human", "human-dedup", "llm", "llm-dedup")] == [2279, 1201, 6680, 3760]
    assert cone_parser.CONE_FILES["participant-responses"].counts == {"turns": 79, "responses": 79 * 19}
    assert cone_parser.CONE_FILES["manual-responses"].url.endswith("participant_resources/manual_responses.json")


def test_response_nuggets_are_checked_against_the_responses(tmp_path):
    responses = {("t1", "runA"): "**Paris** is the capital.\n\n- It is big.", ("t1", "runB"): "No."}
    same = formats.ResponseNuggets("t1", "runA", "Paris is the capital. - it is big", ["Paris is the capital"], [])
    other = formats.ResponseNuggets("t1", "runB", "No.", [], [])
    formats.check_response_nuggets("n.json", [same, other], responses)  # Markdown and case stripped: the same
    with pytest.raises(InputError, match=r"1 of 2 responses have no entry \(turn run: t1 runB\)"):
        formats.check_response_nuggets("n.json", [same], responses)
    with pytest.raises(InputError, match="differs from the response"):
        formats.check_response_nuggets("n.json", [same, formats.ResponseNuggets("t1", "runB", "Yes.", [], [])],
                                       responses)
    with pytest.raises(InputError, match="the responses file does not have"):
        formats.check_response_nuggets("n.json", [same, other, formats.ResponseNuggets("t2", "runA", "x", [], [])],
                                       responses)


def test_extracted_nuggets_jsonl_round_trip_and_checks(tmp_path):
    nuggets = [ExtractedNugget("t1", 0, "Paris", "exact", 0, 5), ExtractedNugget("t1", 1, "Rome", "none")]
    path = str(tmp_path / "x.jsonl")
    formats.write_extracted_nuggets(path, [("t1", "runA", nuggets), ("t1", "runB", [])])
    assert formats.read_extracted_nuggets(path) == [("t1", "runA", nuggets), ("t1", "runB", [])]
    (tmp_path / "bad.jsonl").write_text('{"qid": "t1", "run_id": "r", "nuggets": [{"text": "a", "span": "exact"}]}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: field 'nuggets\[0\]'"):
        formats.read_extracted_nuggets(str(tmp_path / "bad.jsonl"))


# ------------------------------------------------------------------------------------------ prompts

def test_prompts_are_the_papers_tables_word_for_word():
    extraction = (PROMPT_DIR / "cone_extraction.txt").read_text()
    assert ('#Instruction: I will give you a user query and a text to the user query. You should extract the nuggets '
            'of information related to the user query from the given text. The nuggets should be an exact copy of a '
            'span of text from the text. Please extract the nuggets and write each nugget in one line. If there is '
            'no nugget of information in the given text, please only say "No nugget".\n#User query: {query}\n'
            '#Text: {text}\n(Please copy exact spans from the text as nuggets)\n#Nuggets:') in extraction
    ntr = (PROMPT_DIR / "cone_ntr.txt").read_text()
    assert ('#Instruction: I will provide you with a response and a gold information piece. Your task is to '
            'determine whether the response captures this piece of information or not.\n#Gold Information: '
            '{nugget}\n#Response: {response}\n#Please answer the following :\nDoes the Response capture the Gold '
            'Information? Only respond with “yes” or “no” without further explanation.\n#Answer (yes/no):') in ntr


# ------------------------------------------------------------------------------------------ spans

TEXT = "The  Egyptian Museum in Cairo is the largest museum.\nIt is visited a lot."


def test_locate_span_exact_normalised_none():
    assert locate_span("It is visited a lot.", TEXT) == ("exact", 53, 73)
    span, start, end = locate_span("the egyptian museum in cairo", TEXT)
    assert (span, TEXT[start:end]) == ("normalised", "The  Egyptian Museum in Cairo")
    assert locate_span("Museum. It is", TEXT)[0] == "normalised"  # across the line break
    assert locate_span("The pyramids", TEXT) == ("none", None, None)


def test_parse_extraction_policies():
    output = "- The  Egyptian Museum in Cairo\n\"It is visited a lot.\"\nThe pyramids are old"
    kept = parse_extraction(output, TEXT)
    assert [(n["text"], n["span"]) for n in kept] == [("The  Egyptian Museum in Cairo", "exact"),
                                                      ("It is visited a lot.", "exact"),
                                                      ("The pyramids are old", "none")]
    assert len(parse_extraction(output, TEXT, "drop")) == 2
    with pytest.raises(OutputError, match="1 line"):
        parse_extraction(output, TEXT, "refuse")
    assert parse_extraction("No nugget", TEXT) == [] == parse_extraction('"No nugget."', TEXT)
    with pytest.raises(OutputError):
        parse_extraction("No nugget\nIt is visited a lot.", TEXT)
    with pytest.raises(OutputError):
        parse_extraction("  ", TEXT)


# ------------------------------------------------------------------------------------------ LLM, fake endpoint

def _field(prompt: str, name: str, nxt: str) -> str:
    return prompt.split(f"#{name}: ", 1)[1].split(f"\n#{nxt}", 1)[0]


def cone_reply(body):
    """Extraction: every sentence of the text that shares a word of 4+ letters with the query ("No nugget" if
    none), plus one invented line when the query says "invent". Matching: "yes" when every word of 4+
    letters of the gold information is in the response, "maybe" when the gold information says "unclear"."""
    prompt = body["messages"][0]["content"]
    if len(body["messages"]) > 1:  # a re-ask
        return "no" if "#Gold Information" in prompt else "No nugget"
    if prompt.startswith("#Instruction: I will give you"):
        query, text = _field(prompt, "User query", "Text"), _field(prompt, "Text", "Nuggets").rsplit("\n(Please", 1)[0]
        words = {w for w in re.findall(r"\w{4,}", query.lower())}
        lines = [s for s in re.split(r"(?<=\.)\s+", text) if words & set(re.findall(r"\w{4,}", s.lower()))]
        if "invent" in query:
            lines.append("Something not in the text")
        return "\n".join(lines) if lines else "No nugget"
    gold, response = _field(prompt, "Gold Information", "Response"), _field(prompt, "Response", "Please")
    if "unclear" in gold:
        return "maybe"
    words = re.findall(r"\w{4,}", gold.lower())
    return "**Yes.**" if all(w in response.lower() for w in words) else "no"


@pytest.fixture
def responder():
    return cone_reply


RESPONSES = pd.DataFrame([
    {"qid": "t1", "query": "capital of france", "run_id": "good", "qanswer": "Paris is the capital of France. It has museums."},
    {"qid": "t1", "query": "capital of france", "run_id": "bad", "qanswer": "Bananas are yellow."},
])
GOLD = formats.NuggetSet([Nugget("t1", 0, "Paris capital France", "vital"), Nugget("t1", 1, "Paris museums", "vital"),
                          Nugget("t1", 2, "Paris population", "vital")])


def test_parse_yes_no_is_strict():
    assert parse_yes_no("Yes") is True and parse_yes_no('"no".') is False and parse_yes_no('{"answer": "yes"}')
    for bad in ("", "yes, mostly", "maybe", "No nugget", "y"):
        with pytest.raises(OutputError):
            parse_yes_no(bad)


def test_extractor_through_fake_endpoint(llm, server):
    out = NuggetExtractor(llm)(RESPONSES)
    good = out.set_index("run_id").loc["good"]
    assert [n["text"] for n in good["nuggets"]] == ["Paris is the capital of France."]
    assert good["nuggets"][0] == {"text": "Paris is the capital of France.", "span": "exact", "start": 0, "end": 31}
    assert out.set_index("run_id").loc["bad", "nuggets"] == []  # "No nugget"
    assert out["nonspans"].tolist() == [0, 0] and out["run_id"].tolist() == ["good", "bad"]
    calls = llm.stats["calls"]
    NuggetExtractor(llm)(RESPONSES)
    assert llm.stats["calls"] == calls  # a re-run is answered from the cache


def test_extractor_nonspan_policies(llm, server):
    inp = RESPONSES.assign(query="invent capital")
    kept = NuggetExtractor(llm)(inp)
    assert kept["nonspans"].tolist() == [1, 1] and kept["nuggets"][0][-1]["span"] == "none"
    dropped = NuggetExtractor(llm, nonspan="drop")(inp)
    assert dropped["nonspans"].tolist() == [1, 1] and all(n["span"] != "none" for ns in dropped["nuggets"] for n in ns)
    with pytest.raises(LLMStepError, match="2 CONE-RAG nugget extraction step"):
        NuggetExtractor(llm, nonspan="refuse", max_reasks=0)(inp)
    marked = NuggetExtractor(llm, nonspan="refuse", max_reasks=0, on_failure="mark")
    with pytest.warns(UserWarning):
        out = marked(inp)
    assert out["extraction"].tolist() == ["failed", "failed"] and out["nuggets"].isna().all()
    assert NuggetExtractor(llm, text_column="text")(pd.DataFrame(columns=["qid", "query", "text"])).empty


def test_ntr_through_fake_endpoint_to_recall(llm, server):
    out = NuggetToResponse(GOLD, LLMMatcher(llm))(RESPONSES)
    # the matcher's label names the model, the endpoint and that the test endpoint is no model
    assert len(out) == 6 and set(out["matcher"]) == {f"LLM fake at {server.base_url} (the TEST ENDPOINT of "
                                                     "pyterrier-nuggets: deterministic replies, no model; not a judge) "
                                                     "([cone-rag Table 4] prompt)"}
    good = out[out.run_id == "good"].set_index("docno")["score"].to_dict()
    assert good == {"t1:ntr:n0": 1.0, "t1:ntr:n1": 1.0, "t1:ntr:n2": 0.0}
    # the prompt carries the gold nugget and the whole response, one gold nugget per call
    prompts = [r["messages"][0]["content"] for r in server.requests]
    assert sum("#Gold Information: Paris museums\n#Response: Paris is the capital of France. It has museums." in p
               for p in prompts) == 1
    scores = score(formats.nugget_qrels(GOLD), out[out.run_id == "good"], [Recall_NtR])
    assert scores["value"].tolist() == [pytest.approx(2 / 3)]


def test_ntr_failed_decisions_are_never_no(llm, server):
    gold = formats.NuggetSet(GOLD.nuggets + [Nugget("t1", 3, "unclear claim", "vital")])
    with pytest.raises(LLMStepError, match="CONE-RAG matching"):
        NuggetToResponse(gold, LLMMatcher(llm, max_reasks=0))(RESPONSES)
    with pytest.warns(UserWarning):
        out = NuggetToResponse(gold, LLMMatcher(llm, max_reasks=0), on_failure="exclude")(RESPONSES)
    assert out.empty
    with pytest.warns(UserWarning):
        marked = NuggetToResponse(gold, LLMMatcher(llm, max_reasks=0), on_failure="mark")(RESPONSES)
    assert set(marked["matched"]) == {"failed"} and marked["score"].isna().all()
    # with a re-ask the fake answers "no": a decision, made and recorded as such
    out = NuggetToResponse(gold, LLMMatcher(llm, max_reasks=1))(RESPONSES)
    assert out.set_index(["run_id", "docno"]).loc[("good", "t1:ntr:n3"), "score"] == 0.0


def test_ntn_through_fake_endpoint(llm, server):
    extracted = NuggetExtractor(llm)(RESPONSES.assign(query="capital museums"))
    out = NuggetToNugget(GOLD, LLMMatcher(llm))(extracted)
    good = out[out.run_id == "good"].set_index("docno")["score"].to_dict()
    # x0 "Paris is the capital of France." entails n0; x1 "It has museums." lacks "Paris": entails nothing
    assert good == {"t1:ntn:n0": 1.0, "t1:ntn:n1": 0.0, "t1:ntn:n2": 0.0, "t1:ntn:x0": 1.0, "t1:ntn:x1": 0.0}
    bad = out[out.run_id == "bad"].set_index("docno")["score"].to_dict()
    assert bad == {"t1:ntn:n0": 0.0, "t1:ntn:n1": 0.0, "t1:ntn:n2": 0.0}  # "No nugget": no x rows
    scores = score(formats.nugget_qrels(GOLD), out[out.run_id == "good"], [Recall_NtN, Precision_NtN])
    assert dict(zip(scores["measure"], scores["value"])) == {"Recall_NtN": pytest.approx(1 / 3), "Precision_NtN": 0.5}
    with pytest.raises(ValueError, match="extraction failed"):
        NuggetToNugget(GOLD, LLMMatcher(llm))(pd.DataFrame([{"qid": "t1", "nuggets": None}]))


def test_dedup_through_fake_endpoint_keeps_the_first_of_a_mutual_pair(llm, server):
    nuggets = formats.NuggetSet([Nugget("t1", 0, "Paris capital", "vital"), Nugget("t1", 1, "capital Paris", "vital"),
                                 Nugget("t1", 2, "Paris capital France", "vital"), Nugget("t1", 4, "Bananas", "vital")])
    kept, report = deduplicate(nuggets, LLMMatcher(llm))
    # n2 entails n0 and n1 (all their words) but not the reverse: both removed; n0/n1 entail each other too
    assert [n.id for n in kept.nuggets] == ["t1:n2", "t1:n4"]
    assert report.set_index("docno")["entailed_by"].fillna("-").to_dict() == {"t1:n0": "t1:n2", "t1:n1": "t1:n0", "t1:n2": "-",
                                                                                  "t1:n4": "-"}


class TableMatcher(Matcher):
    """A matcher given as a table of entailing pairs (for the de-duplication rule)."""

    def __init__(self, entails):
        self.entails = entails

    def match_batch(self, pairs):
        return [Match((p, h) in self.entails, float((p, h) in self.entails)) for p, h in pairs]

    def describe(self):
        return "table"


def test_dedup_rule():
    # mutual a<->b: the first (a) is kept; c -> d one way: d removed; e -> f -> g: f and g removed (paper's rule)
    m = TableMatcher({("a", "b"), ("b", "a"), ("c", "d"), ("e", "f"), ("f", "g")})
    removed = dedup_decisions(list("abcdefg"), m)
    assert {k: (v.by, v.mutual) for k, v in removed.items()} == {1: (0, True), 3: (2, False), 5: (4, False),
                                                                  6: (5, False)}
    assert dedup_decisions([], m) == {}


def test_as_matcher(llm):
    assert isinstance(as_matcher(llm), LLMMatcher) and isinstance(as_matcher(None), EmbeddingMatcher)
    with pytest.raises(TypeError):
        as_matcher("gpt-4o")


def test_embedding_thresholds_per_task_and_their_agreement():
    from pyterrier_nuggets.matchers import CALIBRATED, DEDUP_THRESHOLD, DEFAULT_THRESHOLD, NTN_THRESHOLD, NTR_THRESHOLD
    assert DEFAULT_THRESHOLD == NTR_THRESHOLD == CALIBRATED["ntr"].threshold  # calibrated on people, not de-dup
    assert [as_matcher(None, t).threshold for t in ("ntr", "ntn", "dedup")] == [NTR_THRESHOLD, NTN_THRESHOLD,
                                                                               DEDUP_THRESHOLD]
    assert NuggetToNugget(GOLD).matcher.threshold == NTN_THRESHOLD
    assert NuggetToResponse(GOLD).matcher.threshold == NTR_THRESHOLD
    ntr = EmbeddingMatcher.for_task("ntr")
    assert "kappa" in ntr.agreement("ntr") and "crowd" in ntr.agreement("ntr")
    assert "not measured" in ntr.agreement("ntn")  # its threshold is not the NtN one
    assert "not measured" in EmbeddingMatcher(0.7).agreement("ntr")
    assert "not measured" in LLMMatcher().agreement("ntr")
    other = ntr.at_threshold(0.5)
    assert other.threshold == 0.5 and ntr.threshold == NTR_THRESHOLD and other._vectors is ntr._vectors
    pair = [("Bananas are yellow.", "The capital of France is Paris.")]
    assert ntr.match(pair)[0].score == other.match(pair)[0].score
    with pytest.raises(ValueError, match="task must be one of"):
        EmbeddingMatcher.for_task("support")


# ------------------------------------------------------------------------------------------ embedding

def test_embedding_matcher_is_a_labelled_baseline():
    m = EmbeddingMatcher(threshold=0.6)
    pairs = [("Snake plants can survive with infrequent watering.", "Snake plants are highly drought-tolerant."),
             ("Bananas are yellow. Paris is the capital of France.", "The capital of France is Paris."),
             ("Bananas are yellow.", "The capital of France is Paris.")]
    similar, in_a_sentence, unrelated = m.match(pairs)
    assert similar.entailed and in_a_sentence.entailed and not unrelated.entailed
    assert in_a_sentence.score > 0.9 > 0.3 > unrelated.score  # matched by its sentence, not the diluted whole
    assert m.baseline and "baseline, not entailment" in m.describe()
    assert m.match(pairs[:1]) == [similar]  # remembered
    out = NuggetToResponse(GOLD, m)(RESPONSES)
    assert set(out["matcher"]) == {m.describe()}


# ------------------------------------------------------------------------------------------ tiny NLI model

@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    """A 2-layer BERT classifier with random weights and a word-level tokenizer, saved like a downloaded NLI
    model; labels in a non-standard order so that the entailment index must be read from the config."""
    import torch  # installed with the retrieval extra: never a silent skip
    import transformers
    path = tmp_path_factory.mktemp("tiny-nli")
    words = "paris is the capital of france bananas are yellow city museums".split()
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    config = transformers.BertConfig(vocab_size=len(words) + 5, hidden_size=16, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
                                     num_labels=3, id2label={0: "neutral", 1: "contradiction", 2: "entailment"},
                                     label2id={"neutral": 0, "contradiction": 1, "entailment": 2})
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def test_nli_matcher_reads_the_entailment_label_and_batches(tiny_nli):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    pairs = [("paris is the capital of france", "paris is a city"), ("bananas are yellow", "paris has museums"),
             ("the city of paris", "france"), ("yellow", "bananas are yellow")]
    one = NLIMatcher(tiny_nli, threshold=None, batch_size=1)
    batched = NLIMatcher(tiny_nli, threshold=None, batch_size=3)
    a, b = one.match(pairs), batched.match(pairs)
    assert [d.entailed for d in a] == [d.entailed for d in b]
    assert [d.score for d in a] == pytest.approx([d.score for d in b], abs=1e-5)
    # the reference: softmax of the model's logits, the entailment label at index 2 (from the config)
    tok, model = AutoTokenizer.from_pretrained(tiny_nli), AutoModelForSequenceClassification.from_pretrained(tiny_nli)
    with torch.no_grad():
        probs = torch.softmax(model(**tok([p for p, _ in pairs], [h for _, h in pairs], padding=True,
                                          return_tensors="pt")).logits, -1)
    assert [d.score for d in a] == pytest.approx(probs[:, 2].tolist(), abs=1e-5)
    assert [d.entailed for d in a] == (probs.argmax(-1) == 2).tolist()
    cut = sorted(d.score for d in a)[1]
    assert [d.entailed for d in NLIMatcher(tiny_nli, threshold=cut).match(pairs)] == [d.score > cut for d in a]
    assert "tiny-nli" in NLIMatcher(tiny_nli).describe() and "P(entailment) > 0.5" in NLIMatcher(tiny_nli).describe()


def test_nli_matcher_in_ntn_and_dedup(tiny_nli):
    m = NLIMatcher(tiny_nli, threshold=0.0)  # every pair entails: the outputs are fully determined
    extracted = pd.DataFrame([{"qid": "t1", "run_id": "r", "nuggets": ["paris is the capital", "bananas"]}])
    out = NuggetToNugget(GOLD, m)(extracted)
    assert out["score"].tolist() == [1.0] * 5 and not out["match_score"].isna().any()
    kept, _ = deduplicate(GOLD, m)
    assert [n.id for n in kept.nuggets] == ["t1:n0"]  # all mutually entailing: the first is kept


def test_nli_matcher_refuses_a_model_without_entailment_label(tmp_path, tiny_nli):
    import transformers
    config = transformers.AutoConfig.from_pretrained(tiny_nli)
    config.id2label = {0: "A", 1: "B", 2: "C"}
    config.label2id = {"A": 0, "B": 1, "C": 2}
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_nli, config=config)
    model.save_pretrained(tmp_path / "m")
    transformers.AutoTokenizer.from_pretrained(tiny_nli).save_pretrained(tmp_path / "m")
    with pytest.raises(ValueError, match="no single entailment label"):
        NLIMatcher(str(tmp_path / "m")).match([("a", "b")])
    with pytest.raises(OSError, match="not found locally"):
        NLIMatcher(str(tmp_path / "absent")).match([("a", "b")])


def test_measures_are_exported():
    assert set(ir_measures_ext.CONE_MEASURES) == {Recall_NtR, Recall_NtN, Precision_NtN}
    assert ir_measures.parse_measure("Precision_NtN") == Precision_NtN
    assert pytest.approx(1.0) == scoring.cone_scores([True]).recall
