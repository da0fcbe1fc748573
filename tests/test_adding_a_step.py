"""docs/architecture.md, "Adding a step", followed as written: the page's four blocks (the judge's module, its prompt,
its one registration and its test) are taken from the page, put in a temporary module, and the step runs in
``trec-rag``, its table, ``judging.json`` and the report, with nothing else changed. The registration is removed
afterwards, so no other test sees the step."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import ir_measures
import pandas as pd
import pytest

import ir_measures_ext as M
from pyterrier_nuggets import cli, steps
from pyterrier_nuggets.formats.judging_io import read_judging
from pyterrier_nuggets.formats.label_io import read_answer_labels
from pyterrier_nuggets.testing import TestEndpoint

ROOT = Path(__file__).resolve().parent.parent
MODULE = "pyterrier_nuggets.judges.conciseness"  # where the page puts the judge
HERE = "conciseness_step_of_the_docs"  # where this test puts it (a temporary module)


def page_blocks() -> dict[str, str]:
    """The code blocks of the section "Adding a step", by the file their first line names."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Adding a step\n", 1)[1].split("\n## ", 1)[0]
    blocks = {}
    for body in re.findall(r"^```\w*\n(.*?)^```", section, re.S | re.M):
        first = body.splitlines()[0]
        if first.startswith("# ") and "/" in first:
            blocks[first[2:].split()[0]] = body
    return blocks


@pytest.fixture
def step(tmp_path, monkeypatch, private_cache):
    """The page's judge as a temporary module, its prompt, and its registration; all removed afterwards."""
    blocks = page_blocks()
    assert set(blocks) == {"pyterrier_nuggets/judges/conciseness.py", "pyterrier_nuggets/prompts/conciseness.txt",
                           "pyterrier_nuggets/steps.py", "tests/test_conciseness.py"}
    registration = blocks["pyterrier_nuggets/steps.py"]
    assert registration.count("register(") == 1  # one registration, nothing else
    (tmp_path / f"{HERE}.py").write_text(blocks["pyterrier_nuggets/judges/conciseness.py"], encoding="utf-8")
    prompt = tmp_path / "conciseness.txt"
    prompt.write_text(blocks["pyterrier_nuggets/prompts/conciseness.txt"], encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "conciseness" not in steps.STEPS
    try:
        module = __import__(HERE)
        # the packaged prompt folder holds no conciseness.txt: the class reads the page's prompt from here
        monkeypatch.setattr(module.ConcisenessJudge, "default_prompt", str(prompt))
        exec(compile(registration.replace(MODULE, HERE), "architecture.md", "exec"), {})  # noqa: S102
        yield module, blocks["tests/test_conciseness.py"].replace(MODULE, HERE)
    finally:
        steps.STEPS.pop("conciseness", None)
        sys.modules.pop(HERE, None)


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path / "llm-cache.sqlite"))


def _jsonl(path: Path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _answer(run: str, qid: str, text: str) -> dict:
    return {"metadata": {"team_id": "us", "run_id": run, "type": "automatic", "narrative_id": qid},
            "references": ["d1"], "answer": [{"text": text, "citations": [0]}]}


SHORT, LONG = "Paris is the capital.", ("Paris is the capital of France, and the capital of France is Paris, which is "
                                        "the city that is the capital.")


def test_the_page_s_test_passes_on_the_page_s_judge(step, tmp_path):
    _, test_module = step
    namespace: dict = {}
    exec(compile(test_module, "architecture.md", "exec"), namespace)  # noqa: S102
    namespace["test_conciseness"](tmp_path)


def test_the_step_runs_in_trec_rag_its_table_judging_json_and_the_report(step, tmp_path, capsys):
    answers = _jsonl(tmp_path / "answers.jsonl", [_answer("A", "t1", SHORT), _answer("A", "t2", LONG),
                                                  _answer("B", "t1", LONG), _answer("B", "t2", SHORT)])
    nuggets = _jsonl(tmp_path / "nuggets.jsonl", [
        {"qid": q, "query": f"the capital, {q}", "nuggets": [{"text": "Paris capital", "importance": "vital"}]}
        for q in ("t1", "t2")])
    out = tmp_path / "out"
    with TestEndpoint() as server:
        code = cli.main(["trec-rag", "--answers", answers, "--nuggets", nuggets, "--conciseness", "--base-url",
                         server.base_url, "--model", "judge", "--out", str(out)])
        printed = capsys.readouterr()
        assert code == 0, printed.err
    name = "AnswerLabel(step='conciseness')"
    # its file, one per run
    labels = {(a.run_id, a.qid): (a.label, a.value) for run in "AB"
              for a in read_answer_labels(str(out / f"{run}.conciseness.labels.jsonl"))}
    assert labels == {("A", "t1"): ("yes", 1.0), ("A", "t2"): ("no", 0.0), ("B", "t1"): ("no", 0.0),
                      ("B", "t2"): ("yes", 1.0)}
    # its scores, beside the others, and the printed table's column
    scores = pd.read_csv(out / "scores.tsv", sep="\t", dtype={"qid": str})
    mine = {(r.run, r.qid): r.value for r in scores[scores["measure"] == name].itertuples()}
    assert mine == {("A", "t1"): 1.0, ("A", "t2"): 0.0, ("A", "all"): 0.5, ("B", "t1"): 0.0, ("B", "t2"): 1.0,
                    ("B", "all"): 0.5}
    assert {"V_strict", "AnswerWords"} <= set(scores["measure"])
    assert name in printed.out and "Means over 2 topics" in printed.out  # a column, or a row where the terminal is narrow
    # its rows in the evaluation run: plain ir_measures scores them as the command did
    run = ir_measures.read_trec_run(str(out / "A.eval.run"))
    assert ir_measures.calc_aggregate([M.AnswerLabel(step="conciseness")], list(ir_measures.read_trec_qrels(
        str(out / "qrels.txt"))), run) == {M.AnswerLabel(step="conciseness"): 0.5}
    # the joint table of the runs (pyterrier-nuggets table), as of any measure
    table = tmp_path / "table"
    assert cli.main(["table", "--nugget-qrels", str(out / "qrels.txt"), "--system", "A", str(out / "A.eval.run"),
                     "--system", "B", str(out / "B.eval.run"), "--measures", "V_strict", name, "--out",
                     str(table)]) == 0, capsys.readouterr().err
    assert pd.read_csv(f"{table}.csv", index_col=0)[name].tolist() == [0.5, 0.5]
    # judging.json names the step, its measure, its judge and its file
    record = read_judging(str(out / "judging.json")).judge_of(name)
    assert (record.step, record.measures, record.files) == ("conciseness", [name], ["{run}.conciseness.labels.jsonl"])
    assert record.judge.kind == "test endpoint" and record.judge.label.startswith("ConcisenessJudge on judge")
    # the report: the column, with its judge
    report = tmp_path / "report"
    assert cli.main(["report", str(out), "--out", str(report)]) == 0, capsys.readouterr().err
    index = _data(report / "data" / "index.js")
    shown = {m["name"]: m for m in index["measures"]}
    assert shown[name]["judge"]["step"] == "conciseness" and shown[name]["judge"]["kind"] == "test endpoint"
    assert shown[name]["judge"]["label"].startswith("ConcisenessJudge")


def test_the_registration_is_gone_afterwards():
    """No other test sees the page's step: not in the registry, not an option of trec-rag."""
    assert "conciseness" not in steps.STEPS and HERE not in sys.modules
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["trec-rag", "--answers", "a", "--out", "o", "--conciseness"])


def _data(path: Path):
    """The JSON a report's data script hands to PNReport.receive(kind, key, data)."""
    text = path.read_text(encoding="utf-8")
    kind_end = text.index(",", len("PNReport.receive("))
    key_end = text.index(",", kind_end + 1)
    return json.loads(text[key_end + 1:-3])


def test_a_failed_judgment_of_the_step_leaves_its_topic_out_and_is_recorded(step, tmp_path, capsys):
    """The step runs under the command's failure policy as the package's own: an answer the judge cannot label
    (an unusable reply, re-asked) leaves its topic out for every run, named in judging.json; never a 'no'."""
    from pyterrier_nuggets.testing import first_prompt
    answers = _jsonl(tmp_path / "answers.jsonl", [_answer("A", "t1", SHORT), _answer("A", "t2", LONG),
                                                  _answer("B", "t1", LONG), _answer("B", "t2", SHORT)])
    nuggets = _jsonl(tmp_path / "nuggets.jsonl", [
        {"qid": q, "query": f"the capital, {q}", "nuggets": [{"text": "Paris capital", "importance": "vital"}]}
        for q in ("t1", "t2")])

    def unusable_for_a_t2(body):
        prompt = first_prompt(body)
        return "perhaps" if "concise" in prompt and "the capital, t2" in prompt and "France, and" in prompt else None

    out = tmp_path / "out"
    with TestEndpoint(responder=unusable_for_a_t2) as server:
        assert cli.main(["trec-rag", "--answers", answers, "--nuggets", nuggets, "--conciseness", "--base-url",
                         server.base_url, "--model", "judge", "--max-failed-share", "0.5", "--out", str(out)]) == 0
    assert "1 topic(s) left out" in capsys.readouterr().out
    manifest = read_judging(str(out / "judging.json"))
    assert manifest.left_out == {"t2": "conciseness"}
    [failed] = manifest.judge_of("AnswerLabel(step='conciseness')").failed
    assert failed["qid"] == "t2" and "perhaps" in failed["error"]
    scores = pd.read_csv(out / "scores.tsv", sep="\t", dtype={"qid": str})
    assert set(scores["qid"]) == {"t1", "all"}  # t2 scored for no run, by no measure
    assert {a.qid for run in "AB" for a in read_answer_labels(str(out / f"{run}.conciseness.labels.jsonl"))} == {"t1"}
