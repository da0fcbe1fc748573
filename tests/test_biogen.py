"""BioGen relations ([nugget-annotation §3.3]): BioGenJudge against the fake OpenAI-compatible server, the relation file
format, and an annotation project on the BioGen scale with the judge's pre-fill, through the export and the
agreement command; the embedded model runs the judge for real (slow)."""
import json
import re

import pandas as pd
import pytest
from embedded import embedded_client, needs_model

from pyterrier_nuggets import formats
from pyterrier_nuggets.judges import LLMStepError
from pyterrier_nuggets.judges.biogen import BioGenJudge, parse_relation
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.records import Answer, Sentence, SupportRelation
from pyterrier_nuggets.testing import INVALID
from tests.annotate_project import ANSWERS, DOCS, annotate_by_api, make_project, needs_annotate, write_project

RULES = [("Sunsets", "Contradicts"), ("scatter", "Supports"), ("scattered", "Supports")]
PROMPTS: list[str] = []


def relation_reply(body):
    """A judge that reads the statement: Supports for scattering, Contradicts for sunsets, else Not Relevant."""
    prompt = body["messages"][-1]["content"]
    PROMPTS.append(prompt)
    statement = re.search(r"Statement: (.*)\n", prompt).group(1)
    if "Respond as either" not in prompt:
        return INVALID
    return next((label for word, label in RULES if word in statement), "Not Relevant")


@pytest.fixture
def responder():
    return relation_reply


def _answers():
    return [Answer(a["topic_id"], a["run_id"], tuple(Sentence(s["text"], tuple(s["citations"])) for s in a["answer"]),
                   tuple(a["references"]), a["topic"]) for a in ANSWERS]


def _frame():
    frame = formats.answers_to_frame(_answers())
    frame["reference_texts"] = frame["references"].map(lambda refs: [DOCS[d] for d in refs])
    return frame


@pytest.mark.parametrize("reply,relation", [
    ("Supports", "supports"), ("**Contradicts**.", "contradicts"), ("not_relevant", "not_relevant"),
    ('{"relation": "Not Relevant"}', "not_relevant"), ("The passage is Neutral here.", "neutral"),
    ("irrelevant", "not_relevant")])
def test_parse_relation_accepts(reply, relation):
    assert parse_relation(reply) == relation


@pytest.mark.parametrize("reply", ["", "Full Support", "Supports or contradicts", "[1, 2]", '{"a": "x", "b": "y"}'])
def test_parse_relation_refuses(reply):
    with pytest.raises(OutputError):
        parse_relation(reply)


def test_judge_first_citations_and_the_relation_file(llm, server, tmp_path):
    out = BioGenJudge(llm)(_frame())
    # first citations of the cited sentences; uncited sentences give no row
    assert list(out.columns[:5]) == ["qid", "sentence", "citation", "docno", "relation"]
    assert [tuple(r) for r in out[["run_id", "sentence", "citation", "docno", "relation"]].itertuples(index=False)] == [
        ("runA", 0, 0, "d1", "supports"), ("runA", 1, 0, "d2", "contradicts"), ("runB", 0, 0, "d3", "supports")]
    assert any("Statement: Sunsets look red.\nCitation: " + DOCS["d2"] in p for p in PROMPTS)  # one passage a call
    both = BioGenJudge(llm, citations="all")(_frame())
    assert len(both) == 4 and both.iloc[-1]["docno"] == "d1"
    records = formats.frame_to_relations(out)
    formats.write_relations(str(tmp_path / "r.jsonl"), records)
    assert formats.read_relations(str(tmp_path / "r.jsonl")) == records
    assert records[0] == SupportRelation("t1", 0, 0, "d1", "supports", "runA")
    with pytest.raises(ValueError, match="no valid BioGen relation"):
        formats.frame_to_relations(pd.DataFrame([{"qid": "t1", "sentence": 0, "citation": 0, "docno": "d1",
                                                  "relation": "failed"}]))


def test_a_relation_file_and_a_support_file_never_pass_for_each_other(tmp_path):
    (tmp_path / "support.jsonl").write_text(json.dumps({"qid": "t1", "sentence": 0, "citation": 0, "docno": "d1",
                                                        "support": "full"}) + "\n")
    with pytest.raises(formats.InputError, match="this is a support file"):
        formats.read_relations(str(tmp_path / "support.jsonl"))
    (tmp_path / "rel.jsonl").write_text(json.dumps({"qid": "t1", "sentence": 0, "citation": 0, "docno": "d1",
                                                    "relation": "supports"}) + "\n")
    with pytest.raises(formats.InputError, match="support"):
        formats.read_support(str(tmp_path / "rel.jsonl"))
    (tmp_path / "bad.jsonl").write_text(json.dumps({"qid": "t1", "sentence": 0, "citation": 0, "docno": "d1",
                                                    "relation": "full"}) + "\n")
    with pytest.raises(formats.InputError, match=r"bad.jsonl:1.*relation"):
        formats.read_relations(str(tmp_path / "bad.jsonl"))


def test_unusable_replies_are_reasked_then_failures(tmp_path):
    from pyterrier_nuggets.testing import TestEndpoint
    from tests.conftest import fake_client
    with TestEndpoint(responder=lambda body: "I cannot tell.") as s:
        llm = fake_client(s, None)
        with pytest.raises(LLMStepError, match="3 BioGen relation judgment"):
            BioGenJudge(llm, max_reasks=1)(_frame())
        marked = BioGenJudge(llm, max_reasks=0, on_failure="mark")(_frame())
    assert set(marked["relation"]) == {"failed"}  # never a relation by default


@needs_annotate
def test_a_biogen_project_with_the_judges_prefill(llm, tmp_path, capsys):
    """The judge's relations are the pre-fill of a project on the BioGen scale: pre-selected in stage 3, the
    people's labels exported beside them, both as relation files the agreement command compares."""
    from pyterrier_nuggets import cli
    from pyterrier_nuggets.annotate import export_project
    from tests import annotate_project
    relations = BioGenJudge(llm)(_frame())
    inp = tmp_path / "sky-input"
    write_project(inp)
    for run in ("runA", "runB"):
        formats.write_relations(str(inp / f"{run}.relations.jsonl"),
                                formats.frame_to_relations(relations[relations["run_id"] == run]), run)
    people = {("runA", 0, 0): "supports", ("runA", 1, 0): "neutral", ("runB", 0, 0): "contradicts",
              ("runB", 0, 1): "supports"}
    old = annotate_project.STAGE3
    annotate_project.STAGE3 = people
    try:
        store = make_project(tmp_path, support_scale="biogen", support={"runA": "runA.relations.jsonl",
                                                                         "runB": "runB.relations.jsonl"})
        from pyterrier_nuggets.annotate import protocol
        alice = {u["name"]: u for u in store.users()}["alice"]
        with store.write() as c:
            c.execute("UPDATE topics SET frozen_at = 'now'")
        cites = protocol.document_view(store, alice, 0, 3, 1)["citing"]
        assert [(c["run_id"], c["llm_label"]) for c in cites] == [("runA", "contradicts")]
        with store.write() as c:
            c.execute("UPDATE topics SET frozen_at = NULL")
        annotate_by_api(store)
    finally:
        annotate_project.STAGE3 = old
    out = tmp_path / "out"
    export_project(store.directory, str(out))
    human = {(r.run_id, r.sentence, r.citation): r.relation for r in formats.read_relations(str(out / "relations.human.jsonl"))}
    assert human == people
    llm_relations = formats.read_relations(str(out / "relations.llm.jsonl"))
    assert [(r.run_id, r.relation) for r in llm_relations] == [("runA", "supports"), ("runA", "contradicts"),
                                                               ("runB", "supports")]
    # support files: only Supports is support
    support = {(j["run_id"], j["sentence"], j["citation"]): j["support"]
               for j in map(json.loads, (out / "support.human.jsonl").read_text().splitlines()) if j["citation"] is not None}
    assert support == {("runA", 0, 0): "full", ("runA", 1, 0): "none", ("runB", 0, 0): "none", ("runB", 0, 1): "full"}
    assert cli.main(["agree", str(out / "relations.human.jsonl"), str(out / "relations.llm.jsonl"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "biogen" and result["n_items"] == 3 and result["exact_agreement"] == pytest.approx(1 / 3)


@pytest.mark.slow
@needs_model
def test_the_embedded_model_judges_biogen_relations(tmp_path):
    """The judge end to end with the embedded SmolLM2-135M: every judged citation gets one of the four relations or
    is a reported failure, never a guess (its labels mean nothing: the check of the code path only)."""
    llm = embedded_client(tmp_path / "cache.sqlite", 2, 20)
    judge = BioGenJudge(llm, on_failure="mark")
    out = judge(_frame())
    assert len(out) == 3 and set(out["relation"]) <= {"supports", "contradicts", "neutral", "not_relevant", "failed"}
    assert (out["relation"] == "failed").sum() == len(judge.failures)
    assert llm.stats["calls"] >= 3
