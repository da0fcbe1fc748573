"""TREC RAG 2026 answers: the format read, validated and written (one reader), CitedGenerator under the 2026
rules, and the support path on a docstore of whole documents (ClimbMix-like ids)."""
import json
from collections import namedtuple

import ir_measures
import pandas as pd
import pytest

from ir_measures_ext import SupportP, SupportR
from pyterrier_nuggets import formats
from pyterrier_nuggets.formats import TREC_RAG_2026, InputError
from pyterrier_nuggets.judges.generation import CitedGenerator, parse_cited_answer
from pyterrier_nuggets.judges.support import SupportJudge
from pyterrier_nuggets.records import Answer, Sentence

META = {"team_id": "us", "run_id": "r26", "type": "automatic", "narrative_id": "rag2026-0"}
ANSWER = {"metadata": META, "references": ["shard_00007_65846", "shard_00014_54354", "shard_00024_68217"],
          "answer": [
              {"text": "## Priorities", "citations": []},
              {"text": "Mentoring programmes help retention.", "citations": [0, "shard_00024_68217"]},
              {"text": "- Pipeline partnerships with nursing schools", "citations": [1]},
              {"text": "| outcome | measure |", "citations": []},
              {"text": "Three sources agree.", "citations": [0, 1, 2]}]}


def _write(tmp_path, *rows, name="answers.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_2026_answers_round_trip(tmp_path):
    answers = formats.read_answers(_write(tmp_path, ANSWER), rules=TREC_RAG_2026)
    (a,) = answers
    assert a.qid == "rag2026-0" and a.run_id == "r26" and len(a.sentences) == 5
    assert [s.citations for s in a.sentences] == [(), (0, 2), (1,), (), (0, 1, 2)]  # docids -> indices
    assert a.metadata["team_id"] == "us" and a.metadata["type"] == "automatic"
    out = tmp_path / "back.jsonl"
    formats.write_answers_2026(str(out), answers)
    again = formats.read_answers(str(out), rules=TREC_RAG_2026)
    assert again == answers and again[0].metadata == {**a.metadata}
    written = json.loads(out.read_text())
    assert written["metadata"] == META and written["references"] == ANSWER["references"]
    assert written["answer"][1] == {"text": "Mentoring programmes help retention.", "citations": [0, 2]}
    formats.write_answers_2026(str(out), answers, citations_as_docids=True)
    assert json.loads(out.read_text())["answer"][2]["citations"] == ["shard_00014_54354"]
    assert formats.read_answers(str(out), rules=TREC_RAG_2026) == answers


def _change(**edits):
    row = json.loads(json.dumps(ANSWER))
    for key, value in edits.items():
        if key == "sentence":
            row["answer"].append(value)
        else:
            row[key] = value
    return row


@pytest.mark.parametrize("row, field, message", [
    (_change(sentence={"text": "x", "citations": [0, 1, 2, 0]}), "answer[5].citations", "4 citations"),
    (_change(sentence={"text": " ".join(["word"] * 1005), "citations": []}), "answer", "1025 words"),
    (_change(references=ANSWER["references"] + ["shard_00007_65846"]), "references", "listed twice"),
    (_change(sentence={"text": "x", "citations": ["shard_99"]}), "answer[5].citations[0]", "not in references"),
    (_change(sentence={"text": "x", "citations": [3]}), "answer[5].citations[0]", "out of range"),
    ({"topic_id": "t", "references": [], "answer": []}, "metadata", "2026 answers have the form"),
])
def test_2026_rules_refuse_with_line_and_field(tmp_path, row, field, message):
    path = _write(tmp_path, ANSWER, row)
    with pytest.raises(InputError, match=message) as e:
        formats.read_answers(path, rules=TREC_RAG_2026)
    assert e.value.line == 2 and e.value.field == field
    if field in ("answer", "answer[5].citations", "references"):  # the limits are the rules', not the format's
        assert len(formats.read_answers(_write(tmp_path, row, name="alone.jsonl"))) == 1


def test_exactly_1024_words_is_allowed_and_the_writer_refuses(tmp_path):
    row = _change(answer=[{"text": " ".join(["w"] * 1024), "citations": [0, 1, 2]}])
    (a,) = formats.read_answers(_write(tmp_path, row), rules=TREC_RAG_2026)
    too_many = formats.read_answers(_write(tmp_path, _change(references=ANSWER["references"] + ["shard_9"],
                                                             sentence={"text": "x", "citations": [0, 1, 2, 3]}),
                                           name="b.jsonl"))
    with pytest.raises(ValueError, match="4 citations"):
        formats.write_answers_2026(str(tmp_path / "out.jsonl"), too_many)
    assert not (tmp_path / "out.jsonl").exists()
    formats.write_answers_2026(str(tmp_path / "ok.jsonl"), [a])


def test_a_reference_cited_twice_in_one_object_counts_once_and_is_reported(tmp_path):
    """A real TREC RAG 2024 GPT-4o answer cites one reference twice in a sentence (5 of its 4,029 answer objects):
    the track's rules do not forbid it; read once (its support would count twice), and named in a warning. Four
    citations as written are still more than the 2026 rules allow, repeats or not."""
    path = _write(tmp_path, _change(sentence={"text": "x", "citations": [1, "shard_00014_54354", 2]}))
    with pytest.warns(formats.RepeatedCitationWarning, match=r"1 citation\(s\) repeat.*answers.jsonl:1: field "
                      r"'answer\[5\].citations\[1\]': reference 1 \(shard_00014_54354\) again"):
        (a,) = formats.read_answers(path, rules=TREC_RAG_2026)
    assert a.sentences[5].citations == (1, 2)
    with pytest.raises(InputError, match="4 citations"):
        formats.read_answers(_write(tmp_path, _change(sentence={"text": "x", "citations": [0, 1, 2, 0]}), name="c"),
                             rules=TREC_RAG_2026)
    with pytest.raises(ValueError, match="cites a reference twice"):  # what the package writes never repeats one
        formats.write_answers_2026(str(tmp_path / "out.jsonl"), [Answer(a.qid, a.run_id, (Sentence("x", (0, 0)),),
                                                                        a.references)])


def test_parse_keeps_the_first_citations_and_reports_the_rest():
    sentences, problems = parse_cited_answer("A [1][2][3][4][5]. B [2].", 5, max_citations=3)
    assert [s.citations for s in sentences] == [(0, 1, 2), (1,)]
    assert [(p["kind"], p["sentence"]) for p in problems] == [("too_many_citations", 0)] * 2


# ------------------------------------------------------------------ documents instead of segments

Doc = namedtuple("Doc", "doc_id title text")
DOCS = {f"shard_{i:05d}_{i * 7}": Doc(f"shard_{i:05d}_{i * 7}", f"Title {i}", f"Document {i} says fact {i}. More.")
        for i in range(6)}


class DocStore:
    """An ir_datasets-like docs store of whole documents (ClimbMix ids, no segment structure)."""

    def get_many(self, ids):
        return {i: DOCS[i] for i in ids if i in DOCS}


@pytest.fixture
def responder():
    return None  # the fake server's default replies


def test_generator_under_2026_rules_on_documents_then_support(server, llm, tmp_path):
    results = pd.DataFrame([{"qid": "rag2026-1", "query": "what do the documents say", "docno": d, "rank": r}
                            for r, d in enumerate(DOCS)])
    gen = CitedGenerator(llm, rules=TREC_RAG_2026, k=5, docstore=DocStore(), run_id="r26")
    assert gen.max_words == 1024 and repr(gen).startswith("CitedGenerator(rules='TREC RAG 2026', k=5, max_words=1024")
    answers = gen(results)
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "at most 1024 words" in prompt and "at most 3 per sentence" in prompt and "[5] Document 4" in prompt
    assert answers["references"][0] == list(DOCS)[:5]
    path = tmp_path / "run.jsonl"
    formats.write_answers_2026(str(path), formats.frame_to_answers(answers))
    read = formats.read_answers(str(path), rules=TREC_RAG_2026)
    support = SupportJudge(llm, citations="all", docstore=DocStore())(formats.answers_to_frame(read))
    judgments = formats.frame_to_judgments(support)
    formats.check_support(str(path), judgments, read)
    assert {j.docno for j in judgments if j.docno} <= set(DOCS)
    rows = pd.DataFrame(list(formats.support_rows(judgments)), columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame({"query_id": ["rag2026-1"], "doc_id": ["rag2026-1:n0"], "relevance": [2]})
    got = {str(m.measure): m.value for m in ir_measures.iter_calc([SupportP, SupportR], qrels, rows)}
    cited = [s for s in read[0].sentences if s.citations]
    assert got["SupportR"] == pytest.approx(got["SupportP"] * len(cited) / len(read[0].sentences))
    out = tmp_path / "support_assignments.jsonl"
    formats.write_support_assignments(str(out), read, judgments)
    assert formats.read_support_assignments(str(out)) == [
        type(j)(j.qid, j.sentence, j.citation, j.docno, j.support, "r26") for j in judgments]


def test_rules_and_max_words_together():
    with pytest.raises(ValueError, match="above the 1024 words"):
        CitedGenerator(rules=TREC_RAG_2026, max_words=2000)
    assert CitedGenerator(rules=TREC_RAG_2026, max_words=300).max_words == 300
    assert CitedGenerator().max_words == 400 and CitedGenerator().max_citations is None
