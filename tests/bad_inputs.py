"""The bad-input corpus: a small valid project of every file the package reads, and over 100
cases that each corrupt one thing and run one reader or command on it.

Every case says what must happen: ``refused`` (an error whose message matches ``message``, naming file and
line / field or the row, exit code 2 for our command line, no output written or changed) or ``accepted``
(exit 0 and the exact scores computed by hand below). :func:`run_case` runs a case in-process and returns
what happened; ``tests/test_bad_inputs.py`` asserts each case and ``benchmarks/bad_input_verdicts.py``
counts the verdicts of any version of the package.

Hand-computed scores of the valid project ([autonuggetizer §3.5], [support24 §3.4] with the first citation):
  t1: nuggets vital/support, okay/partial_support, vital/not_support -> V_strict 1/2, A_strict 1/3,
      W (1 + 0.5*0.5 + 0) / 2.5 = 0.5; support s0 [full], s1 [partial, none] -> SupportP 1.5/2, SupportR 1.5/2;
      11 words.
  t2: nuggets vital/support, okay/not_support -> V_strict 1, A_strict 1/2, W 1/1.5; one uncited sentence ->
      SupportP 0, SupportR 0; 4 words.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

NUGGETS = {
    "t1": [("Paris is the capital", "vital", "support"), ("Louvre is in Paris", "okay", "partial_support"),
           ("France is in Europe", "vital", "not_support")],
    "t2": [("Cats sleep", "vital", "support"), ("Cats purr", "okay", "not_support")],
}
ANSWERS = {
    "t1": (["d1", "d2"], [("Paris is the capital of France.", [0]), ("It has the Louvre museum.", [0, 1])]),
    "t2": (["d3"], [("Cats sleep a lot.", [])]),
}
SUPPORT = [("t1", 0, 0, "d1", "full"), ("t1", 1, 0, "d1", "partial"), ("t1", 1, 1, "d2", "none"),
           ("t2", 0, None, None, "none")]
RUN_ROWS = [("t1", "t1:n0", 1), ("t1", "t1:n1", 0.5), ("t1", "t1:n2", 0), ("t1", "t1:s0:c0:d1", 1),
            ("t1", "t1:s1:c0:d1", 0.5), ("t1", "t1:s1:c1:d2", 0), ("t1", "t1:words", 11), ("t2", "t2:n0", 1),
            ("t2", "t2:n1", 0), ("t2", "t2:s0:uncited", 0), ("t2", "t2:words", 4)]
SEGMENT_QRELS = [("t1", "d1", 2), ("t1", "d2", 0), ("t2", "d3", 1)]
SEGMENT_RUN = [("t1", "d1", 3.0), ("t1", "d9", 2.0), ("t1", "d2", 1.0), ("t2", "d3", 5.0)]

# the means of the valid project (per topic above)
EXPECTED = {"V_strict": 0.75, "A_strict": (1 / 3 + 1 / 2) / 2, "W": (0.5 + 1 / 1.5) / 2, "SupportP": 0.375,
            "SupportR": 0.375, "AnswerWords": 7.5}
MEASURES = list(EXPECTED)


def _answer_text(qid: str) -> str:
    return " ".join(text for text, _ in ANSWERS[qid][1])


def _jsonl(objs) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


def write_project(d: Path) -> None:
    """The valid project: every file format the package reads, describing the same two answers of run r."""
    (d / "nuggets.jsonl").write_text(_jsonl(
        {"qid": q, "query": f"query {q}", "nuggets": [{"text": t, "importance": i} for t, i, _ in ns]}
        for q, ns in NUGGETS.items()))
    (d / "r.assignments.jsonl").write_text(_jsonl(
        {"qid": q, "query": f"query {q}", "run_id": "r", "answer_text": _answer_text(q),
         "nuggets": [{"text": t, "importance": i, "assignment": a} for t, i, a in ns]} for q, ns in NUGGETS.items()))
    (d / "r.answers.jsonl").write_text(_jsonl(
        {"run_id": "r", "topic_id": q, "topic": f"query {q}", "references": refs,
         "response_length": len(_answer_text(q).split()),
         "answer": [{"text": t, "citations": c} for t, c in sentences]} for q, (refs, sentences) in ANSWERS.items()))
    (d / "r.support.jsonl").write_text(_jsonl(
        {"qid": q, "run_id": "r", "sentence": s, "citation": c, "docno": doc, "support": lab}
        for q, s, c, doc, lab in SUPPORT))
    (d / "nuggets.qrels").write_text("".join(f"{q} 0 {q}:n{i} {2 if imp == 'vital' else 1}\n"
                                             for q, ns in NUGGETS.items() for i, (_, imp, _) in enumerate(ns)))
    (d / "r.eval.run").write_text("".join(f"{q} Q0 {doc} {k + 1} {s} r\n" for k, (q, doc, s) in enumerate(RUN_ROWS)))
    (d / "segments.qrels").write_text("".join(f"{q} 0 {doc} {rel}\n" for q, doc, rel in SEGMENT_QRELS))
    (d / "r.segments.run").write_text("".join(f"{q} Q0 {doc} {k + 1} {s} r\n" for k, (q, doc, s) in
                                              enumerate(SEGMENT_RUN)))
    col = d / "collection"
    col.mkdir()
    (col / "docs.jsonl").write_text(_jsonl({"docno": f"d{i}", "text": f"text {i}"} for i in range(1, 4)))
    (col / "topics.tsv").write_text("t1\tquery t1\nt2\tquery t2\n")
    (col / "segments.qrels").write_text((d / "segments.qrels").read_text())


# ------------------------------------------------------------------------------------------ edits

def edit(name: str, fn: Callable[[str], str]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        p = d / name
        p.write_bytes(fn(p.read_bytes().decode("utf-8")).encode("utf-8"))
    return apply


def edit_bytes(name: str, fn: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        p = d / name
        p.write_bytes(fn(p.read_bytes()))
    return apply


def edit_json(name: str, line: int, fn: Callable[[dict], object]) -> Callable[[Path], None]:
    """Change the object on (1-based) ``line`` of a JSONL file; ``fn`` edits it in place or returns a new one."""
    def text(s: str) -> str:
        lines = s.splitlines()
        obj = json.loads(lines[line - 1])
        new = fn(obj)
        lines[line - 1] = json.dumps(new if isinstance(new, dict) else obj)
        return "\n".join(lines) + "\n"
    return edit(name, text)


def replace(name: str, old: str, new: str, count: int = 1) -> Callable[[Path], None]:
    def text(s: str) -> str:
        assert old in s, (name, old)
        return s.replace(old, new, count)
    return edit(name, text)


def append(name: str, text: str) -> Callable[[Path], None]:
    return edit(name, lambda s: s + text)


def remove(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).unlink()


def nothing(d: Path) -> None:
    pass


def write(name: str, text: str) -> Callable[[Path], None]:
    return lambda d: (d / name).write_text(text)


def both(*edits) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        for e in edits:
            e(d)
    return apply


# ------------------------------------------------------------------------------------------ cases

@dataclass
class Case:
    name: str
    tool: str  # "cli" (pyterrier-nuggets), "ir_measures" (the plain ir_measures CLI), "python" (a reader)
    args: list[str] | Callable  # command-line arguments with {d} for the project folder, or a reader call
    mutate: Callable[[Path], None] = nothing
    message: str | None = None  # refused: a regex the error message must match; None: accepted
    scores: dict = field(default_factory=dict)  # accepted: measure -> expected mean
    klass: str = ""  # the class of defect: the group its case is added to ("arena inputs", ...)

    @property
    def refused(self) -> bool:
        return self.message is not None


@dataclass
class Outcome:
    code: int | None  # exit code (cli, ir_measures); 0 or None for python
    message: str  # the error message (stderr or exception), "" if none
    scores: dict  # measure -> mean, when the command printed or computed scores
    changed: list[str]  # files of the project created, changed or removed
    crashed: bool = False  # an exception of our own command line escaped (a traceback)


def snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _ir_measures(argv: list[str]) -> tuple[int, str, str]:
    import ir_measures.__main__ as cli

    import ir_measures_ext
    ir_measures_ext.register()
    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["ir_measures", *argv]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.main_cli()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except Exception as e:  # the plain ir_measures CLI prints a traceback ending in our message
        code, err = 1, io.StringIO(f"{type(e).__name__}: {e}")
    finally:
        sys.argv = old
    return code, out.getvalue(), err.getvalue()


def _cli(argv: list[str]) -> tuple[int, str, str, bool]:
    from pyterrier_nuggets.cli import main
    out, err = io.StringIO(), io.StringIO()
    crashed = False
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
        if not isinstance(e.code, int) and e.code:
            err.write(str(e.code))
    except Exception:
        code, crashed = 1, True
        err.write(traceback.format_exc())
    return code, out.getvalue(), err.getvalue(), crashed


def _means(stdout: str) -> dict[str, float]:
    """``Measure  value`` lines of the ir_measures CLI's TSV output."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 2:
            out[parts[0]] = float(parts[1])
    return out


def run_case(case: Case, d: Path) -> Outcome:
    """Build the project in the empty folder ``d``, apply the case's corruption and run it."""
    write_project(d)
    case.mutate(d)
    before = snapshot(d)
    crashed = False
    scores: dict = {}
    if case.tool == "python":
        code, message = 0, ""
        try:
            result = case.args(d)
            scores = result if isinstance(result, dict) else {}
        except Exception as e:  # a reader's refusal
            code, message = 2, f"{type(e).__name__}: {e}"
    else:
        argv = [a.format(d=d) for a in case.args]
        if case.tool == "cli":
            code, stdout, message, crashed = _cli(argv)
            if code == 0 and "--run" in argv and "export" in argv:  # score what export wrote
                ir_code, stdout, ir_err = _ir_measures([argv[argv.index("--qrels") + 1],
                                                        argv[argv.index("--run") + 1], *MEASURES])
                stdout = stdout if ir_code == 0 else ""
                code, message = (code, message) if ir_code == 0 else (ir_code, ir_err)
                scores = _means(stdout)
        else:
            code, stdout, message = _ir_measures(argv)
            scores = _means(stdout)
    after = snapshot(d)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return Outcome(code, message.strip(), scores, changed, crashed)


def _read(fn_name: str, file: str, **kwargs):
    def call(d: Path):
        from pyterrier_nuggets import formats
        getattr(formats, fn_name)(str(d / file), **kwargs)
    return call


def _collection(d: Path):
    from pyterrier_nuggets.pipeline import sample_collection
    sample_collection(str(d / "collection"))


def _read_2026(d: Path):
    from pyterrier_nuggets import formats
    formats.read_answers(str(d / "r26.answers.jsonl"), rules=formats.TREC_RAG_2026)


ANSWER_2026 = {"metadata": {"team_id": "us", "run_id": "r26", "type": "automatic", "narrative_id": "t1"},
               "references": ["shard_1", "shard_2"], "answer": [{"text": "Paris is the capital.", "citations": [0, 1]}]}
TOOLKIT_SUPPORT = {"topic_id": "t1", "run_id": "r", "sentences": [
    {"sentenceID": 0, "text": "Paris is the capital of France.", "citations": [
        {"citationID": 0, "reference": "d1", "support": "2"}]}]}
RUBRIC = {"qid": "t1", "criteria": [{"text": "Names the capital", "weight": 5, "tier": "mandatory"},
                                    {"text": "Names a museum", "weight": 2, "tier": "optional"}]}
RUBRIC_QRELS = "t1 0 t1:r0 5\nt1 0 t1:r0:mandatory 1\nt1 0 t1:r1 2\nt1 0 t1:r1:optional 1\n"


BATTLE = {"qid": "t1", "pair": ["r", "s"], "assistant_a_run_id": "s", "assistant_b_run_id": "r", "judge_verdict": "A",
          "preferred_run_id": "s", "status": "completed"}
BATTLES = [BATTLE, {**BATTLE, "qid": "t2", "judge_verdict": "B", "preferred_run_id": "r"},
           {**BATTLE, "qid": "t1", "pair": ["r", "u"], "assistant_a_run_id": "r", "assistant_b_run_id": "u",
            "judge_verdict": "Tie", "preferred_run_id": None},
           {**BATTLE, "qid": "t2", "pair": ["s", "u"], "assistant_a_run_id": "u", "assistant_b_run_id": "s",
            "judge_verdict": "A", "preferred_run_id": "u"}]
LEADERBOARD = "rank,run_id,arena_score,n_judgments,wins,losses,ties\n1,r,1010,3,2,1,0\n2,s,990,3,1,2,0\n"
ARENA = ["arena", "--battles", "{d}/b.jsonl", "--out", "{d}/arena", "--resamples", "20", "--no-plot"]


def _check_support(d: Path):
    from pyterrier_nuggets import formats
    formats.check_support(str(d / "r.support.jsonl"), formats.read_support(str(d / "r.support.jsonl")),
                          formats.read_answers(str(d / "r.answers.jsonl")))


EXPORT = ["export", "--assignments", "{d}/r.assignments.jsonl", "--answers", "{d}/r.answers.jsonl",
          "--support", "{d}/r.support.jsonl", "--qrels", "{d}/out.qrels", "--run", "{d}/out.run"]
SCORE = ["{d}/nuggets.qrels", "{d}/r.eval.run", *MEASURES]
TABLE = ["table", "--nugget-qrels", "{d}/nuggets.qrels", "--segment-qrels", "{d}/segments.qrels",
         "--system", "r", "{d}/r.eval.run", "{d}/r.segments.run", "--system", "s", "{d}/r.eval.run",
         "{d}/r.segments.run", "--out", "{d}/tab"]

TABLE_RS = ["table", "--nugget-qrels", "{d}/nuggets.qrels", "--system", "r", "{d}/r.eval.run", "--system", "s",
            "{d}/s.eval.run", "--measures", "V_strict", "--out", "{d}/tab"]


def _export_with(**changes) -> list[str]:
    argv = list(EXPORT)
    for option, value in changes.items():
        option = "--" + option.replace("_", "-")
        i = argv.index(option)
        if value is None:
            del argv[i:i + 2]
        else:
            argv[i + 1] = value
    return argv


def cases() -> list[Case]:
    c: list[Case] = []

    def add(klass: str, *items: Case) -> None:
        for item in items:
            item.klass = klass
            c.append(item)

    # ---- accepted: the valid project and harmless variations score exactly as by hand
    add("accepted inputs",
        Case("valid project, ir_measures", "ir_measures", SCORE, scores=EXPECTED),
        Case("valid project, export then ir_measures", "cli", EXPORT, scores=EXPECTED),
        Case("UTF-8 BOM at the start of a JSONL file", "cli", EXPORT,
             edit_bytes("r.assignments.jsonl", lambda b: b"\xef\xbb\xbf" + b), scores=EXPECTED),
        Case("UTF-8 BOM in nugget qrels, ir_measures", "ir_measures", SCORE,  # read as every route reads it
             edit_bytes("nuggets.qrels", lambda b: b"\xef\xbb\xbf" + b), scores=EXPECTED),
        Case("UTF-8 BOM in the run, ir_measures", "ir_measures", SCORE,
             edit_bytes("r.eval.run", lambda b: b"\xef\xbb\xbf" + b), scores=EXPECTED),
        Case("CRLF line ends in JSONL", "cli", EXPORT, edit("r.answers.jsonl", lambda s: s.replace("\n", "\r\n")),
             scores=EXPECTED),
        Case("blank lines in JSONL", "cli", EXPORT, edit("r.support.jsonl", lambda s: s.replace("\n", "\n\n")),
             scores=EXPECTED),
        Case("run rows in another order", "ir_measures", SCORE,
             edit("r.eval.run", lambda s: "".join(reversed(s.splitlines(True)))), scores=EXPECTED),
        Case("segment rows in the evaluation run are ignored", "ir_measures", SCORE,
             append("r.eval.run", "t1 Q0 d1 20 99 r\n"), scores=EXPECTED),
        Case("segment qrels mixed into the nugget qrels", "ir_measures", SCORE,
             append("nuggets.qrels", "t1 0 d1 2\nt2 0 d3 1\n"), scores=EXPECTED),
        Case("support judgments without run_id", "cli", EXPORT,
             edit("r.support.jsonl", lambda s: s.replace('"run_id": "r", ', "")), scores=EXPECTED),
        Case("evaluation rows scored below the segments", "ir_measures", SCORE,
             edit("r.eval.run", lambda s: "".join(
                 f"{q} Q0 {doc} {k} {float(v) - 1e9!r} r\n" for q, _, doc, k, v, _ in
                 (line.split() for line in s.splitlines()))), scores=EXPECTED),
        Case("a topic of the run without qrels is not evaluated", "ir_measures", SCORE,
             append("r.eval.run", "t9 Q0 t9:n0 1 1 r\n"), scores=EXPECTED),
        Case("nugget file with the 2025 fields", "python", _read("read_nuggets", "nuggets.jsonl"),
             edit_json("nuggets.jsonl", 1, lambda o: o["nuggets"][0].update(source="manual"))),
        Case("sample collection folder", "python", _collection),
        Case("support judgments consistent with the answers", "python", _check_support),
        Case("assignments with invalid labels, dropped on request", "cli",
             ["score", "--assignments", "{d}/r.assignments.jsonl", "--on-invalid", "drop"],
             edit_json("r.assignments.jsonl", 1, lambda o: o["nuggets"][1].update(importance="failed"))),
        )

    # ---- nugget qrels that do not name nuggets {qid}:n{i}
    add("nugget qrels ids",
        Case("NIST-style nugget ids t1_n0", "ir_measures", SCORE,
             edit("nuggets.qrels", lambda s: s.replace(":n", "_n")), r"no row has a nugget id.*t1_n0"),
        Case("nugget ids N123", "ir_measures", SCORE,
             edit("nuggets.qrels", lambda s: "".join(f"{ln.split()[0]} 0 N{k} {ln.split()[3]}\n"
                                                     for k, ln in enumerate(s.splitlines()))), r"no row has a nugget id"),
        Case("segment qrels given to the nugget measures", "ir_measures",
             ["{d}/segments.qrels", "{d}/r.eval.run", "V_strict"], message=r"no row has a nugget id.*Segment qrels"),
        Case("nugget qrels of another topic naming", "ir_measures", SCORE,
             edit("nuggets.qrels", lambda s: s.replace("t1:n", "T1:n")), r"t1 t1:n0.*topic t1 has no nugget in the qrels"),
        Case("nugget listed twice with two grades", "ir_measures", SCORE, append("nuggets.qrels", "t1 0 t1:n0 1\n"),
             r"t1 t1:n0.*listed twice"),
        Case("nugget listed twice with one grade", "ir_measures", SCORE, append("nuggets.qrels", "t1 0 t1:n0 2\n"),
             r"t1 t1:n0.*listed twice"),
        Case("nugget grade 3", "ir_measures", SCORE, replace("nuggets.qrels", "t1:n0 2", "t1:n0 3"),
             r"t1 t1:n0.*relevance 3.*2 = vital, 1 = okay"),
        Case("nugget grade 0", "ir_measures", SCORE, replace("nuggets.qrels", "t1:n0 2", "t1:n0 0"),
             r"t1 t1:n0.*relevance 0"),
        Case("qrels and run swapped", "ir_measures", ["{d}/r.eval.run", "{d}/nuggets.qrels", *MEASURES],
             message=r"r.eval.run line 1: 6 columns where the qrels go; it has the 6 columns of a run file: the "
                     r"qrels and the run seem swapped; give the qrels first"),
        Case("a run with 5 columns", "ir_measures", SCORE, replace("r.eval.run", " r\n", "\n"),
             r"r.eval.run line 1: 5 columns where the run goes; a run line has 6 columns"),
        Case("nugget qrels read by the reader: wrong id", "python", _read("read_nugget_qrels", "nuggets.qrels"),
             replace("nuggets.qrels", "t1:n1", "t1_n1"), r"nuggets.qrels:2: field 'nugget_id'"),
        Case("nugget qrels read by the reader: duplicate", "python", _read("read_nugget_qrels", "nuggets.qrels"),
             append("nuggets.qrels", "t2 0 t2:n0 2\n"), r"nuggets.qrels:6: field 'nugget_id'.*line 4"),
        Case("nugget qrels read by the reader: grade", "python", _read("read_nugget_qrels", "nuggets.qrels"),
             replace("nuggets.qrels", "t2:n1 1", "t2:n1 x"), r"nuggets.qrels:5: field 'relevance'"),
        Case("nugget qrels with 3 columns", "python", _read("read_nugget_qrels", "nuggets.qrels"),
             replace("nuggets.qrels", "t1 0 t1:n0 2", "t1 t1:n0 2"), r"nuggets.qrels:1: expected 4 columns"),
        )

    # ---- evaluation runs the provider used to overwrite or skip
    add("evaluation run rows",
        Case("assignment of a nugget not in the qrels", "ir_measures", SCORE, append("r.eval.run", "t1 Q0 t1:n7 9 1 r\n"),
             r"t1 t1:n7.*not in the nugget qrels"),
        Case("assignment score 0.7", "ir_measures", SCORE, replace("r.eval.run", "t1:n1 2 0.5", "t1:n1 2 0.7"),
             r"t1 t1:n1.*assignment score 0.7"),
        Case("assignment row twice", "ir_measures", SCORE, append("r.eval.run", "t1 Q0 t1:n2 20 0 r\n"),
             r"t1 t1:n2.*twice"),
        Case("assignment row twice, different scores", "ir_measures", SCORE, append("r.eval.run", "t1 Q0 t1:n2 20 1 r\n"),
             r"t1 t1:n2.*twice"),
        Case("negative words row", "ir_measures", SCORE, replace("r.eval.run", "t1:words 7 11", "t1:words 7 -11"),
             r"t1 t1:words.*answer length"),
        Case("fractional words row", "ir_measures", SCORE, replace("r.eval.run", "t1:words 7 11", "t1:words 7 11.5"),
             r"t1 t1:words.*answer length"),
        Case("words row twice", "ir_measures", SCORE, append("r.eval.run", "t1 Q0 t1:words 30 3 r\n"),
             r"t1 t1:words.*twice"),
        Case("support score 0.3", "ir_measures", SCORE, replace("r.eval.run", "t1:s0:c0:d1 4 1", "t1:s0:c0:d1 4 0.3"),
             r"t1 t1:s0:c0:d1.*support score 0.3"),
        Case("only the second citation judged", "ir_measures", SCORE,
             edit("r.eval.run", lambda s: s.replace("t1 Q0 t1:s1:c0:d1 5 0.5 r\n", "")), r"topic t1, sentence 1: citation 0"),
        Case("a citation judged as two segments", "ir_measures", SCORE, append("r.eval.run", "t1 Q0 t1:s0:c0:d7 30 1 r\n"),
             r"t1 t1:s0:c0:d7.*also judged as segment d1"),
        Case("uncited and cited rows for one sentence", "ir_measures", SCORE,
             append("r.eval.run", "t1 Q0 t1:s0:uncited 30 0 r\n"), r"t1 t1:s0:uncited.*citation rows"),
        Case("uncited row with score 1", "ir_measures", SCORE, replace("r.eval.run", "t2:s0:uncited 10 0", "t2:s0:uncited 10 1"),
             r"t2 t2:s0:uncited.*score 1"),
        Case("a sentence without support row", "ir_measures", SCORE,
             edit("r.eval.run", lambda s: s.replace("t1 Q0 t1:s0:c0:d1 4 1 r\n", "")), r"skip sentence\(s\) \[0\]"),
        Case("no support rows for a topic", "ir_measures", SCORE,
             edit("r.eval.run", lambda s: s.replace("t2 Q0 t2:s0:uncited 10 0 r\n", "")), r"no support rows.*t2"),
        Case("no words row for AnswerWords", "ir_measures", SCORE,
             edit("r.eval.run", lambda s: s.replace("t2 Q0 t2:words 11 4 r\n", "")), r"no 't2:words' row"),
        )

    # ---- every reader: JSONL structure, fields, types, values
    def reader(klass: str, fn: str, file: str, items: list[tuple[str, Callable, str]], **kwargs) -> None:
        add(klass, *(Case(f"{fn}: {name}", "python", _read(fn, file, **kwargs), mutate, message)
                     for name, mutate, message in items))

    f = "nuggets.jsonl"
    reader("nugget files", "read_nuggets", f, [
        ("pretty-printed JSON", edit(f, lambda s: json.dumps(json.loads(s.splitlines()[0]), indent=2)),
         r"nuggets.jsonl:1:.*not valid JSON.*multi-line"),
        ("a JSON array line", append(f, "[1, 2]\n"), r"nuggets.jsonl:3:.*expected a JSON object"),
        ("not UTF-8", edit_bytes(f, lambda b: b.replace(b"Paris", b"Par\xe9s", 1)), r"nuggets.jsonl:1:.*not UTF-8"),
        ("topic twice", append(f, json.dumps({"qid": "t1", "nuggets": []}) + "\n"),
         r"nuggets.jsonl:3: field 'qid'.*already appeared at line 1"),
        ("qid missing", edit_json(f, 2, lambda o: o.pop("qid")), r"nuggets.jsonl:2: field 'qid': missing"),
        ("qid with a space", edit_json(f, 2, lambda o: o.update(qid="t 2")), r"nuggets.jsonl:2: field 'qid'.*whitespace"),
        ("qid with a trailing space", edit_json(f, 2, lambda o: o.update(qid="t2 ")), r"nuggets.jsonl:2: field 'qid'"),
        ("qid a list", edit_json(f, 2, lambda o: o.update(qid=["t2"])), r"nuggets.jsonl:2: field 'qid'"),
        ("qid true", edit_json(f, 2, lambda o: o.update(qid=True)), r"nuggets.jsonl:2: field 'qid'"),
        ("nuggets not a list", edit_json(f, 1, lambda o: o.update(nuggets="x")), r"nuggets.jsonl:1: field 'nuggets'"),
        ("nugget text missing", edit_json(f, 1, lambda o: o["nuggets"][1].pop("text")),
         r"nuggets.jsonl:1: field 'nuggets\[1\].text': missing"),
        ("nugget text a number", edit_json(f, 1, lambda o: o["nuggets"][1].update(text=3)),
         r"nuggets.jsonl:1: field 'nuggets\[1\].text'"),
        ("importance missing", edit_json(f, 1, lambda o: o["nuggets"][2].pop("importance")),
         r"nuggets.jsonl:1: field 'nuggets\[2\].importance': missing"),
        ("importance 'failed'", edit_json(f, 1, lambda o: o["nuggets"][2].update(importance="failed")),
         r"topic t1: 1.*importance='failed'.*nuggets.jsonl:1"),
        ("importance 'Vital'", edit_json(f, 1, lambda o: o["nuggets"][2].update(importance="Vital")),
         r"importance='Vital'"),
        ("nugget id of another topic", edit_json(f, 1, lambda o: o["nuggets"][0].update(id="t2:n0")),
         r"nuggets.jsonl:1: field 'nuggets\[0\].id'"),
        ("nugget id twice", edit_json(f, 1, lambda o: [n.update(id="t1:n0") for n in o["nuggets"][:2]]),
         r"nuggets.jsonl:1: field 'nuggets\[1\].id'.*twice"),
        ("nugget not an object", edit_json(f, 1, lambda o: o["nuggets"].append("x")),
         r"nuggets.jsonl:1: field 'nuggets\[3\]'"),
    ])
    f = "r.assignments.jsonl"
    reader("assignment files", "read_assignments", f, [
        ("assignment missing", edit_json(f, 1, lambda o: o["nuggets"][0].pop("assignment")),
         r"assignments.jsonl:1: field 'nuggets\[0\].assignment': missing"),
        ("assignment 'supported'", edit_json(f, 1, lambda o: o["nuggets"][0].update(assignment="supported")),
         r"assignment='supported'.*assignments.jsonl:1"),
        ("answer_text a number", edit_json(f, 2, lambda o: o.update(answer_text=5)),
         r"assignments.jsonl:2: field 'answer_text'"),
        ("topic of one run twice", append(f, json.dumps({"qid": "t1", "run_id": "r", "nuggets": []}) + "\n"),
         r"assignments.jsonl:3: field 'qid'.*line 1"),
        ("truncated last line", edit(f, lambda s: s[:-30]), r"assignments.jsonl:2:.*not valid JSON"),
        ("topic id empty", edit_json(f, 1, lambda o: o.update(qid="")), r"assignments.jsonl:1: field 'qid'"),
    ])
    f = "r.answers.jsonl"
    reader("answer files", "read_answers", f, [
        ("references missing", edit_json(f, 1, lambda o: o.pop("references")), r"answers.jsonl:1: field 'references'"),
        ("citation out of range", edit_json(f, 1, lambda o: o["answer"][1].update(citations=[0, 2])),
         r"answers.jsonl:1: field 'answer\[1\].citations\[1\]'.*out of range"),
        ("negative citation", edit_json(f, 1, lambda o: o["answer"][0].update(citations=[-1])),
         r"answers.jsonl:1: field 'answer\[0\].citations\[0\]'"),
        ("citation a docid in 2024", edit_json(f, 1, lambda o: o["answer"][0].update(citations=["d1"])),
         r"answers.jsonl:1: field 'answer\[0\].citations\[0\]'.*indices"),
        ("citation true", edit_json(f, 1, lambda o: o["answer"][0].update(citations=[True])),
         r"answers.jsonl:1: field 'answer\[0\].citations\[0\]'"),
        ("sentence text missing", edit_json(f, 2, lambda o: o["answer"][0].pop("text")),
         r"answers.jsonl:2: field 'answer\[0\].text': missing"),
        ("answer not a list", edit_json(f, 2, lambda o: o.update(answer="Cats sleep.")),
         r"answers.jsonl:2: field 'answer'"),
        ("empty reference", edit_json(f, 1, lambda o: o.update(references=["d1", ""])),
         r"answers.jsonl:1: field 'references\[1\]'"),
        ("topic twice", append(f, json.dumps({"run_id": "r", "topic_id": "t2", "references": [], "answer": []}) + "\n"),
         r"answers.jsonl:3: field 'topic_id'.*line 2"),
        ("2025 docid not in references", edit_json(f, 1, lambda o: {
            "metadata": {"run_id": "r", "narrative_id": "t1"}, "references": ["d1"],
            "answer": [{"text": "x", "citations": ["d2"]}]}), r"answers.jsonl:1: field 'answer\[0\].citations\[0\]'"),
        ("2025 metadata not an object", edit_json(f, 1, lambda o: {"metadata": "x", "references": [], "answer": []}),
         r"answers.jsonl:1: field 'metadata'"),
    ])
    f = "r.support.jsonl"
    reader("support judgment files", "read_support", f, [
        ("negative sentence", edit_json(f, 1, lambda o: o.update(sentence=-1)), r"support.jsonl:1: field 'sentence'"),
        ("negative citation", edit_json(f, 1, lambda o: o.update(citation=-1)), r"support.jsonl:1: field 'citation'"),
        ("sentence a string", edit_json(f, 1, lambda o: o.update(sentence="0")), r"support.jsonl:1: field 'sentence'"),
        ("support 'yes'", edit_json(f, 1, lambda o: o.update(support="yes")), r"support.jsonl:1: field 'support'"),
        ("uncited sentence with support full", edit_json(f, 4, lambda o: o.update(support="full")),
         r"support.jsonl:4: field 'support'"),
        ("judged citation without docno", edit_json(f, 2, lambda o: o.pop("docno")), r"support.jsonl:2: field 'docno'"),
        ("citation judged twice", append(f, json.dumps({"qid": "t1", "run_id": "r", "sentence": 0, "citation": 0,
                                                        "docno": "d1", "support": "none"}) + "\n"),
         r"support.jsonl:5: field 'citation'.*line 1"),
        ("run_id a number", edit_json(f, 1, lambda o: o.update(run_id=3)), r"support.jsonl:1: field 'run_id'"),
    ])
    reader("TREC run files", "read_run_rows", "r.segments.run", [
        ("score not a number", replace("r.segments.run", "d9 2 2.0", "d9 2 high"), r"segments.run:2: field 'score'"),
        ("score NaN", replace("r.segments.run", "d9 2 2.0", "d9 2 nan"), r"segments.run:2: field 'score'.*not a finite number"),
        ("document twice", append("r.segments.run", "t1 Q0 d1 9 0.5 r\n"), r"segments.run:5: field 'docno'.*line 1"),
        ("5 columns", append("r.segments.run", "t1 d5 9 0.5 r\n"), r"segments.run:5: expected 6 columns"),
    ])
    reader("TREC qrels files", "read_qrels_rows", "segments.qrels", [
        ("relevance not a number", replace("segments.qrels", "d1 2", "d1 high"), r"segments.qrels:1: field 'relevance'"),
        ("document judged twice", append("segments.qrels", "t1 0 d1 1\n"), r"segments.qrels:4: field 'docno'.*line 1"),
    ])

    # ---- support judgments against the answers they judge
    f = "r.support.jsonl"
    add("support judgments vs answers",
        *(Case(f"support vs answers: {name}", "python", _check_support, mutate, message) for name, mutate, message in [
            ("last sentence missing", edit(f, lambda s: "".join(s.splitlines(True)[:3])), r"topic t2.*no support judgments"
             r"|support judgments for the answers of topic\(s\) t2"),
            ("a sentence beyond the answer", edit_json(f, 2, lambda o: o.update(sentence=5)),
             r"topic t1: sentence 5 is judged, but the answer has 2"),
            ("judgments of another run", edit(f, lambda s: s.replace('"run_id": "r"', '"run_id": "other"')),
             r"judges run 'other'.*\['r'\]"),
            ("judged docno not the cited segment", edit_json(f, 1, lambda o: o.update(docno="d2")),
             r"topic t1, sentence 0, citation 0: judged segment 'd2', but the sentence cites 'd1'"),
            ("only the second citation judged", edit(f, lambda s: "".join(
                ln for ln in s.splitlines(True) if '"sentence": 1, "citation": 0' not in ln)),
             r"topic t1, sentence 1: judged citations \[1\]"),
            ("first sentence not judged", edit(f, lambda s: "".join(s.splitlines(True)[1:])),
             r"topic t1: sentence 0 of the answer has no judgment"),
            ("a topic without answer", append(f, json.dumps({"qid": "t9", "sentence": 0, "citation": None,
                                                            "support": "none"}) + "\n"), r"judges topic t9"),
            ("cited sentence judged as uncited", edit_json(f, 1, lambda o: o.update(citation=None, docno=None,
                                                                                      support="none")),
             r"topic t1, sentence 0: judged citations \[None\]"),
            ("uncited sentence judged with a citation", edit_json(f, 4, lambda o: o.update(citation=0, docno="d3")),
             r"topic t2, sentence 0: judged citations \[0\]"),
        ]))

    # ---- export: cross-file checks, clobbering, all-or-nothing
    add("export",
        Case("answers of another run", "cli", EXPORT, edit("r.answers.jsonl", lambda s: s.replace('"run_id": "r"',
                                                                                                   '"run_id": "x"')),
             r"answers.jsonl: field 'run_id': is run 'x', not 'r'"),
        Case("answers file of two runs", "cli", EXPORT, edit_json("r.answers.jsonl", 2, lambda o: o.update(run_id="x")),
             r"answers.jsonl: field 'run_id': holds 2 runs"),
        Case("assignments file of two runs", "cli", EXPORT,
             edit_json("r.assignments.jsonl", 2, lambda o: o.update(run_id="x")), r"assignments.jsonl: field 'run_id': "
             r"holds 2 runs"),
        Case("answer text differs from the assigned answer", "cli", EXPORT,
             edit_json("r.answers.jsonl", 2, lambda o: o["answer"][0].update(text="Dogs bark.")),
             r"assignments.jsonl: field 'answer_text': topic t2"),
        Case("answers lack a topic that is assigned", "cli", EXPORT,
             edit("r.answers.jsonl", lambda s: s.splitlines(True)[0]), r"answers.jsonl: field 'topic_id': has no answer "
             r"of topic t2"),
        Case("missing answer_text without --answers", "cli", _export_with(answers=None, support=None),
             edit_json("r.assignments.jsonl", 1, lambda o: o.pop("answer_text")), r"topic t1.*no answer_text"),
        Case("support judgments of another answer", "cli", EXPORT, edit_json("r.support.jsonl", 1,
                                                                             lambda o: o.update(docno="d2")),
             r"support.jsonl: field 'docno'"),
        Case("--qrels equal to --assignments", "cli", _export_with(qrels="{d}/r.assignments.jsonl"),
             message=r"r.assignments.jsonl: field '--qrels': is also --assignments"),
        Case("--run equal to --answers", "cli", _export_with(run="{d}/r.answers.jsonl"),
             message=r"field '--run': is also --answers"),
        Case("--run equal to --qrels", "cli", _export_with(run="{d}/out.qrels"), message=r"field '--run': is also --qrels"),
        Case("--qrels equal to --nuggets", "cli", ["export", "--nuggets", "{d}/nuggets.jsonl", "--qrels",
                                                   "{d}/nuggets.jsonl"], message=r"'--qrels': is also --nuggets"),
        Case("output through a symlink to an input", "cli", _export_with(run="{d}/link.run"),
             lambda d: os.symlink(d / "r.support.jsonl", d / "link.run"), r"'--run': is also --support"),
        Case("output folder missing: created", "cli", _export_with(run="{d}/new/folder/out.run"), scores=EXPECTED),
        Case("output parent is a file", "cli", _export_with(run="{d}/r.eval.run/out.run"),
             message=r"r.eval.run is a file, not a folder"),
        Case("output is a folder", "cli", _export_with(run="{d}/collection"), message=r"'--run': is a folder"),
        Case("a later input fails: nothing written", "cli", EXPORT, append("r.support.jsonl", "{\n"),
             r"support.jsonl:5:.*not valid JSON"),
        Case("a bad row fails the run: qrels not written either", "cli", EXPORT,
             edit_json("r.assignments.jsonl", 2, lambda o: o.update(qid="t 2")), r"assignments.jsonl:2: field 'qid'"),
        Case("missing input file", "cli", _export_with(answers="{d}/nope.jsonl"), message=r"nope.jsonl.*No such file"),
        Case("invalid labels refused by default", "cli", EXPORT,
             edit_json("r.assignments.jsonl", 1, lambda o: o["nuggets"][1].update(importance="failed")),
             r"importance='failed'.*assignments.jsonl:1"),
        Case("--nuggets and --assignments together", "cli", EXPORT + ["--nuggets", "{d}/nuggets.jsonl"],
             message=r"exactly one of --nuggets or --assignments"),
        Case("--run with --nuggets", "cli", ["export", "--nuggets", "{d}/nuggets.jsonl", "--qrels", "{d}/o.qrels",
                                             "--run", "{d}/o.run"], message=r"--run writes the evaluation run of an "
                                                                             r"assignment file"),
        Case("--support without --answers", "cli", _export_with(answers=None),
             message=r"support judgments are checked against the answers"),
        Case("--answers without --run", "cli", _export_with(run=None, support=None), message=r"give --run"),
        Case("non-UTF-8 answers", "cli", EXPORT, edit_bytes("r.answers.jsonl", lambda b: b.replace(b"Cats", b"C\xff")),
             r"answers.jsonl:2:.*not UTF-8"),
        Case("--on-invalid bogus", "cli", _export_with() + ["--on-invalid", "skip"], message=r"invalid choice"),
        )

    # ---- table, score, demo
    add("table, score and demo",
        Case("table: --alpha 5", "cli", TABLE + ["--alpha", "5"], message=r"--alpha.*between 0 and 1"),
        Case("table: --alpha 0", "cli", TABLE + ["--alpha", "0"], message=r"--alpha.*between 0 and 1"),
        Case("table: --out over an input run", "cli", [a.replace("r.eval.run", "sys.csv") for a in TABLE[:-1]] +
             ["{d}/sys"], lambda d: (d / "sys.csv").write_bytes((d / "r.eval.run").read_bytes()),
             r"sys.csv: field '--out \(.csv\)': is also --system r"),
        Case("table: unknown measure", "cli", TABLE + ["--measures", "V_strictest"], message=r"V_strictest"),
        Case("table: missing run file", "cli", [a.replace("r.segments.run", "nope.run") for a in TABLE],
             message=r"nope.run.*No such file"),
        Case("table: run with a bad score", "cli", TABLE, replace("r.segments.run", "d9 2 2.0", "d9 2 x"),
             r"segments.run:2: field 'score'"),
        Case("table: qrels with NIST nugget ids", "cli", TABLE, edit("nuggets.qrels", lambda s: s.replace(":n", "_n")),
             r"no row has a nugget id"),
        Case("table: two systems of one name", "cli", [a if a != "s" else "r" for a in TABLE], message=r"names must differ"),
        Case("table: unknown baseline", "cli", TABLE + ["--baseline", "zz"], message=r"--baseline zz"),
        Case("table: --system with one field", "cli", TABLE[:5] + ["--system", "lonely"], message=r"--system takes"),
        Case("table: nugget qrels ir_datasets id unknown", "cli",
             [a if a != "{d}/nuggets.qrels" else "no-such/dataset-id" for a in TABLE], message=r"no-such/dataset-id"),
        Case("score: missing file", "cli", ["score", "--assignments", "{d}/nope.jsonl"], message=r"nope.jsonl.*No such"),
        Case("score: invalid label", "cli", ["score", "--assignments", "{d}/r.assignments.jsonl"],
             edit_json("r.assignments.jsonl", 2, lambda o: o["nuggets"][0].update(assignment="maybe")),
             r"assignment='maybe'"),
        Case("demo: --max-topics -1", "cli", ["demo", "--max-topics", "-1", "--out", "{d}/o"],
             message=r"--max-topics.*1 or more"),
        Case("demo: --max-topics 0", "cli", ["demo", "--max-topics", "0", "--out", "{d}/o"],
             message=r"--max-topics.*1 or more"),
        Case("demo: --max-rpm -5", "cli", ["demo", "--max-rpm", "-5", "--out", "{d}/o"],
             message=r"--max-rpm.*above 0"),
        Case("demo: --batch-discount 2", "cli", ["demo", "--batch-discount", "2", "--out", "{d}/o"],
             message=r"--batch-discount.*below 1"),
        Case("demo: --price negative", "cli", ["demo", "--price=-1,2", "--collection", "{d}/collection",
                                               "--out", "{d}/o", "--dry-run"], message=r"two numbers of 0 or more"),
        Case("demo: -k 0", "cli", ["demo", "-k", "0", "--out", "{d}/o"], message=r"-k.*1 or more"),
        Case("demo: unknown generator", "cli", ["demo", "--system", "bm25:3:gpt4", "--out", "{d}/o"],
             message=r"bm25:3:gpt4.*generator must be one of \('extractive', 'llm'\)"),
        Case("demo: offline on a collection without nuggets", "cli",
             ["demo", "--collection", "{d}/collection", "--llm", "offline", "--out", "{d}/o"],
             message=r"offline judges need nuggets.*--nuggets PATH"),
        Case("demo: collection without topics.tsv", "cli", ["demo", "--collection", "{d}/collection", "--out", "{d}/o"],
             remove("collection/topics.tsv"), r"topics.tsv.*missing"),
        Case("demo: topics.tsv with a topic twice", "cli", ["demo", "--collection", "{d}/collection", "--out", "{d}/o"],
             append("collection/topics.tsv", "t1\tagain\n"), r"topics.tsv:3: field 'qid'"),
        Case("demo: docs.jsonl without text", "cli", ["demo", "--collection", "{d}/collection", "--out", "{d}/o"],
             edit_json("collection/docs.jsonl", 2, lambda o: o.pop("text")), r"docs.jsonl:2: field 'text'"),
        Case("demo: unknown topic", "cli", ["demo", "--collection", "{d}/collection", "--topics", "t7", "--out", "{d}/o"],
             message=r"unknown topic id"),
        Case("demo: --out holds an input under an output name", "cli",
             ["demo", "--collection", "{d}/collection", "--nuggets", "{d}/nuggets.jsonl", "--assignments",
              "r={d}/r.assignments.jsonl", "--out", "{d}"], message=r"the input .*nuggets.jsonl is inside --out"),
        Case("demo: --nuggets do not match --assignments", "cli",
             ["demo", "--collection", "{d}/collection", "--nuggets", "{d}/nuggets.jsonl", "--assignments",
              "r={d}/r.assignments.jsonl", "--run", "r={d}/r.segments.run", "--out", "{d}/o", "--no-plots"],
             edit("nuggets.jsonl", lambda s: "".join(
                 json.dumps({**o, "nuggets": list(reversed(o["nuggets"]))}) + "\n"
                 for o in map(json.loads, s.splitlines()))), r"nuggets\[0\].*Paris is the capital.*France is in Europe"),
        Case("demo: --dataset and --collection", "cli", ["demo", "--dataset", "x/y", "--collection", "{d}/collection",
                                                         "--out", "{d}/o"], message=r"--dataset or --collection"),
        )
    # where a user slips, a refusal instead of a table of zeros with exit 0
    unprefixed = edit("r.eval.run", lambda s: "".join(line[1:].replace(" t", " ", 1) for line in s.splitlines(True)))
    add("silent zero",
        Case("table: run topic ids without the qrels' prefix", "cli", TABLE, unprefixed,
             r"only 0 of the 2 topics of .*r.eval.run are topics of the nugget qrels \(2 topics; e.g. .* has topic "
             r"'1', the nugget qrels has 't1'\).*--allow-topic-mismatch"),
        Case("table: segment run topic ids without the prefix", "cli", TABLE,
             edit("r.segments.run", lambda s: s.replace("t1 ", "1 ").replace("t2 ", "2 ")),
             r"r.segments.run are topics of the segment qrels"),
        Case("table: --system runs swapped", "cli", ["table", "--nugget-qrels", "{d}/nuggets.qrels", "--segment-qrels",
                                                     "{d}/segments.qrels", "--system", "r", "{d}/r.segments.run",
                                                     "{d}/r.eval.run", "--out", "{d}/tab"],
             message=r"r.segments.run: none of its 4 rows is an evaluation row.*look swapped: give --system r "
                     r"EVAL_RUN SEGMENT_RUN"),
        Case("table: a segment run as the evaluation run", "cli",
             ["table", "--nugget-qrels", "{d}/nuggets.qrels", "--system", "r", "{d}/r.segments.run", "--out", "{d}/tab"],
             message=r"none of its 4 rows is an evaluation row.*give the evaluation run"),
        Case("table: empty evaluation run", "cli", TABLE, edit("r.eval.run", lambda s: ""),
             r"r.eval.run has no rows: every one of the 2 topics of the nugget qrels scores 0"),
        Case("table: a cutoff on a nugget measure", "cli", TABLE + ["--measures", "V_strict@10"],
             message=r"measure 'V_strict@10': V_strict takes no cutoff \(@k\)"),
        Case("table: an unknown parameter value", "cli", TABLE + ["--measures", "SupportP(cite='last')"],
             message=r"SupportP\(cite='last'\): not a valid value; choose one of 'first', 'all_judged', 'all_pairs'"),
        Case("python: a cutoff on a nugget measure", "python",
             lambda d: __import__("ir_measures").parse_measure("A_strict@5"), message=r"A_strict takes no cutoff"),
        Case("table: --allow-topic-mismatch scores what matches", "cli",
             TABLE + ["--allow-topic-mismatch", "--measures", "V_strict"],
             edit("r.eval.run", lambda s: "".join(line for line in s.splitlines(True) if line.startswith("t1"))
                  + "x9 Q0 x9:n0 1 1 r\nx8 Q0 x8:n0 1 1 r\n")),
        )

    # ---- TREC RAG 2025/2026: answer rules, the toolkit's support files, rubrics, sub-narratives
    answers_2026 = "r26.answers.jsonl"
    add("TREC RAG 2025/2026 inputs",
        Case("2026 answers: four citations in one object", "python", _read_2026,
             write(answers_2026, _jsonl([{**ANSWER_2026, "answer": [{"text": "x", "citations": [0, 1, "shard_1", 0]}]}])),
             r"r26.answers.jsonl:1: field 'answer\[0\].citations'.*4 citations"),
        Case("2026 answers: more than 1,024 words", "python", _read_2026,
             write(answers_2026, _jsonl([{**ANSWER_2026, "answer": [{"text": "w " * 1025, "citations": []}]}])),
             r"r26.answers.jsonl:1: field 'answer'.*1025 words"),
        Case("2026 answers: the 2024 form", "python", _read_2026,
             lambda d: (d / answers_2026).write_text((d / "r.answers.jsonl").read_text()),
             r"r26.answers.jsonl:1: field 'metadata'"),
        Case("2026 answers: a document twice in references", "python", _read_2026,
             write(answers_2026, _jsonl([{**ANSWER_2026, "references": ["shard_1", "shard_1"]}])),
             r"r26.answers.jsonl:1: field 'references'.*listed twice"),
        Case("toolkit support file: a label 3", "python", _read("read_support_assignments", "ts.jsonl"),
             write("ts.jsonl", _jsonl([TOOLKIT_SUPPORT]).replace('"support": "2"', '"support": "3"')),
             r"ts.jsonl:1: field 'sentences\[0\].citations\[0\].support'"),
        Case("toolkit support file: sentence ids out of order", "python", _read("read_support_assignments", "ts.jsonl"),
             write("ts.jsonl", _jsonl([TOOLKIT_SUPPORT]).replace('"sentenceID": 0', '"sentenceID": 1')),
             r"ts.jsonl:1: field 'sentences\[0\].sentenceID'"),
        Case("rubric file: a fractional weight", "python", _read("read_rubrics", "rubric.jsonl"),
             write("rubric.jsonl", _jsonl([RUBRIC]).replace('"weight": 2', '"weight": 2.5')),
             r"rubric.jsonl:1: field 'criteria\[1\].weight'.*whole number"),
        Case("rubric file: an unknown tier", "python", _read("read_rubrics", "rubric.jsonl"),
             write("rubric.jsonl", _jsonl([RUBRIC]).replace('"optional"', '"nice"')),
             r"rubric.jsonl:1: field 'criteria\[1\].tier'"),
        Case("rubric verdicts: a criterion not in the qrels", "ir_measures",
             ["{d}/rubric.qrels", "{d}/v.run", "RubricScore"],
             both(write("rubric.qrels", RUBRIC_QRELS), write("v.run", "t1 Q0 t1:r0 1 1 r\nt1 Q0 t1:r1 2 0 r\n"
                                                                        "t1 Q0 t1:r5 3 1 r\n")),
             r"t1 t1:r5.*not in the rubric qrels"),
        Case("rubric verdicts: a criterion without verdict", "ir_measures",
             ["{d}/rubric.qrels", "{d}/v.run", "RubricScore"],
             both(write("rubric.qrels", RUBRIC_QRELS), write("v.run", "t1 Q0 t1:r0 1 1 r\n")),
             r"t1:r1 have no verdict"),
        Case("rubric verdicts: accepted", "ir_measures", ["{d}/rubric.qrels", "{d}/v.run", "RubricScore",
                                                          "RubricFailedMandatory"],
             both(write("rubric.qrels", RUBRIC_QRELS), write("v.run", "t1 Q0 t1:r0 1 0.5 r\nt1 Q0 t1:r1 2 1 r\n")),
             scores={"RubricScore": (2.5 + 2) / 7, "RubricFailedMandatory": 0.0}),
        Case("SubNarrativeCoverage on nugget qrels without sub-narratives", "ir_measures",
             ["{d}/nuggets.qrels", "{d}/r.eval.run", "SubNarrativeCoverage"], message=r"no sub-narrative rows"),
        Case("SubNarrativeCoverage: a nugget in two sub-narratives", "ir_measures",
             ["{d}/nuggets.qrels", "{d}/r.eval.run", "SubNarrativeCoverage"],
             append("nuggets.qrels", "t1 0 t1:n0:sn0 1\nt1 0 t1:n1:sn1 1\nt1 0 t1:n2:sn0 1\nt2 0 t2:n0:sn0 1\n"
                                     "t2 0 t2:n1:sn0 1\nt1 0 t1:n0:sn1 1\n"),
             r"t1 t1:n0:sn1.*already in sub-narrative sn0"),
        Case("SubNarrativeCoverage: accepted", "ir_measures",
             ["{d}/nuggets.qrels", "{d}/r.eval.run", "SubNarrativeCoverage"],
             append("nuggets.qrels", "t1 0 t1:n0:sn0 1\nt1 0 t1:n1:sn1 1\nt1 0 t1:n2:sn0 1\nt2 0 t2:n0:sn0 1\n"
                                     "t2 0 t2:n1:sn0 1\n"),
             scores={"SubNarrativeCoverage": (0.5 + 1.0) / 2}),  # t1: sn0 covered (n0), sn1 okay only; t2: 1
        Case("SupportP(cite='all'): ambiguous, refused", "python",  # the ir_measures CLI says "syntax error"
             lambda d: __import__("ir_measures").parse_measure("SupportP(cite='all')"), message=r"all_judged.*all_pairs"),
        Case("agree: a consensus of support files", "cli",
             ["agree", "{d}/r.support.jsonl", "{d}/r.support.jsonl", "--consensus", "majority", "--out", "{d}/c.qrels"],
             message=r"field '--consensus'.*qrels files"),
        Case("trec-rag: answers over the 2026 rules", "cli",
             ["trec-rag", "--answers", "{d}/r26.answers.jsonl", "--nuggets", "{d}/nuggets.jsonl", "--out", "{d}/o"],
             write(answers_2026, _jsonl([{**ANSWER_2026, "answer": [{"text": "x", "citations": [0, 1, 0, 1]}]}])),
             r"r26.answers.jsonl:1: field 'answer\[0\].citations'"),
        )
    # ---- arena: battle files, leaderboards, the arena command and the table's arena column
    add("arena inputs",
        Case("arena: a leaderboard of valid battles", "cli", ARENA, write("b.jsonl", _jsonl(BATTLES))),
        Case("battle file: an unknown verdict", "python", _read("read_battles", "b.jsonl"),
             write("b.jsonl", _jsonl([{**BATTLE, "judge_verdict": "[[C]]"}])),
             r"b.jsonl:1: field 'judge_verdict'.*not a verdict"),
        Case("battle file: the same battle twice, in the other order", "cli", ARENA,
             write("b.jsonl", _jsonl([BATTLE, {**BATTLE, "assistant_a_run_id": "r", "assistant_b_run_id": "s",
                                              "preferred_run_id": "r"}])),
             r"b.jsonl:2: field 'qid'.*already at line 1"),
        Case("battle file: preferred run contradicts the verdict", "python", _read("read_battles", "b.jsonl"),
             write("b.jsonl", _jsonl([{**BATTLE, "preferred_run_id": "r"}])),
             r"b.jsonl:1: field 'preferred_run_id'.*contradicts"),
        Case("battle file: a system against itself", "python", _read("read_battles", "b.jsonl"),
             write("b.jsonl", _jsonl([{**BATTLE, "assistant_b_run_id": "s"}])),
             r"b.jsonl:1: field 'assistant_b_run_id'.*same system"),
        Case("battle file: a pair that is not the two systems shown", "python", _read("read_battles", "b.jsonl"),
             write("b.jsonl", _jsonl([{**BATTLE, "pair": ["r", "x"]}])), r"b.jsonl:1: field 'pair'"),
        Case("arena: a system that won every battle", "cli", ARENA,
             write("b.jsonl", _jsonl([BATTLE, {**BATTLE, "qid": "t2"}])),
             r"system s won every battle.*--prior"),
        Case("arena: two groups that never met", "cli", ARENA,
             write("b.jsonl", _jsonl([BATTLE, {**BATTLE, "qid": "t2", "judge_verdict": "B", "preferred_run_id": "r"},
                                      {**BATTLE, "pair": ["x", "y"], "assistant_a_run_id": "x",
                                       "assistant_b_run_id": "y", "judge_verdict": "Tie", "preferred_run_id": None}])),
             r"disconnected: 2 groups"),
        Case("arena: a negative prior", "cli", ARENA + ["--prior", "-1"], write("b.jsonl", _jsonl(BATTLES)),
             r"--prior must be a number >= 0"),
        Case("arena: an unknown design", "cli",
             ["arena", "--answers", "{d}/r.answers.jsonl", "--answers", "{d}/s.answers.jsonl", "--out", "{d}/arena",
              "--judge", "baseline", "--nuggets", "{d}/nuggets.jsonl", "--design", "pairs:3"],
             lambda d: (d / "s.answers.jsonl").write_text((d / "r.answers.jsonl").read_text().replace('"r"', '"s"')),
             r"--design pairs:3: expected all, topics:N or appearances:K"),
        Case("arena: the baseline judge without nuggets", "cli",
             ["arena", "--answers", "{d}/r.answers.jsonl", "--out", "{d}/arena", "--judge", "baseline"],
             message=r"--judge baseline counts the nuggets"),
        Case("arena: design options with --battles", "cli", ARENA + ["--both-orders"], write("b.jsonl", _jsonl(BATTLES)),
             r"--both-orders is for judging answers"),
        Case("leaderboard: a rating that is not a number", "python", _read("read_leaderboard", "lb.csv"),
             write("lb.csv", LEADERBOARD.replace("1010", "high")), r"lb.csv:2: field 'arena_score'.*not a number"),
        Case("leaderboard: no arena_score column", "python", _read("read_leaderboard", "lb.csv"),
             write("lb.csv", LEADERBOARD.replace("arena_score", "score")), r"lb.csv:1: field 'arena_score'.*missing"),
        Case("leaderboard: a system twice", "cli", TABLE + ["--arena", "{d}/lb.csv"],
             write("lb.csv", LEADERBOARD.replace("2,s,", "2,r,")), r"lb.csv:3: field 'run_id'.*already at line 2"),
        Case("table: an arena of other systems", "cli", TABLE + ["--arena", "{d}/lb.csv"],
             write("lb.csv", LEADERBOARD.replace(",r,", ",x,").replace(",s,", ",y,")),
             r"--arena .*none of its systems"),
        )
    # ---- combined parts and the 2026-era readers (decisions.md, decision 13): no last-wins keys, no silent drops
    rubric_line = json.dumps(RUBRIC)
    twice_rubric = rubric_line.replace('"weight": 5,', '"weight": 3, "weight": -3,', 1)
    trec_rag = ["trec-rag", "--answers", "{d}/r26.answers.jsonl", "--out", "{d}/o"]
    add("2026 readers: keys twice, empty files, ids",
        Case("rubric file: a key given twice", "python", _read("read_rubrics", "rubric.jsonl"),
             write("rubric.jsonl", twice_rubric + "\n"),
             r"rubric.jsonl:1: field 'criteria\[0\]': key 'weight' appears more than once"),
        Case("2026 answers: a key given twice", "python", _read_2026,
             write(answers_2026, json.dumps(ANSWER_2026).replace('"references": ', '"references": ["x"], '
                                                                   '"references": ', 1) + "\n"),
             r"r26.answers.jsonl:1: key 'references' appears more than once"),
        Case("toolkit support file: a key given twice", "python", _read("read_support_assignments", "ts.jsonl"),
             write("ts.jsonl", json.dumps(TOOLKIT_SUPPORT).replace('"support": "2"', '"support": "0", "support": "2"')
                   + "\n"), r"ts.jsonl:1: field 'sentences\[0\].citations\[0\]': key 'support' appears more than once"),
        Case("battle file: a key given twice", "python", _read("read_battles", "b.jsonl"),
             write("b.jsonl", json.dumps(BATTLE).replace('"judge_verdict": "A"', '"judge_verdict": "B", '
                                                          '"judge_verdict": "A"') + "\n"),
             r"b.jsonl:1: key 'judge_verdict' appears more than once"),
        Case("labelled pairs: a key given twice", "python", _read("read_labelled_pairs", "pairs.jsonl"),
             write("pairs.jsonl", '{"premise": "a", "hypothesis": "b", "label": "no", "label": "yes"}\n'),
             r"pairs.jsonl:1: key 'label' appears more than once"),
        Case("labelled pairs of one class", "cli", ["calibrate", "{d}/pairs.jsonl", "--split", "none"],
             write("pairs.jsonl", '{"premise": "a", "hypothesis": "b", "label": "yes"}\n'
                                  '{"premise": "c", "hypothesis": "d", "label": "yes"}\n'),
             r"pairs.jsonl: field 'label': every one of the 2 pairs is labelled yes"),
        Case("rubric file: a weight of 1e300", "python", _read("read_rubrics", "rubric.jsonl"),
             write("rubric.jsonl", rubric_line.replace('"weight": 2', '"weight": 1e300') + "\n"),
             r"rubric.jsonl:1: field 'criteria\[1\].weight': 1e\+300 is beyond"),
        Case("rubric file: an empty list of criteria", "python", _read("read_rubrics", "rubric.jsonl"),
             write("rubric.jsonl", json.dumps({"qid": "t1", "criteria": []}) + "\n"),
             r"rubric.jsonl:1: field 'criteria': is empty"),
        Case("rubric file: no positive weight", "python", _read("read_rubrics", "rubric.jsonl"),
             write("rubric.jsonl", json.dumps({"qid": "t1", "criteria": [{"text": "a flaw", "weight": -2}]}) + "\n"),
             r"rubric.jsonl:1: field 'criteria': no criterion of topic t1 has a positive weight"),
        Case("rubric qrels: no positive weight", "ir_measures", ["{d}/rubric.qrels", "{d}/v.run", "RubricScore"],
             both(write("rubric.qrels", "t1 0 t1:r0 -2\n"), write("v.run", "t1 Q0 t1:r0 1 1 r\n")),
             r"topic\(s\) t1: no criterion has a positive weight"),
        Case("rubric file: empty", "python", _read("read_rubrics", "rubric.jsonl"), write("rubric.jsonl", ""),
             r"rubric.jsonl: holds no rubric"),
        Case("support file: empty", "cli", EXPORT, write("r.support.jsonl", "\n"),
             r"r.support.jsonl: field 'qid': holds no judgment \(an empty file\): none for the answers of topic\(s\) t1, t2"),
        Case("toolkit support file: empty", "python", _read("read_support_assignments", "ts.jsonl"),
             write("ts.jsonl", ""), r"ts.jsonl: holds no support assignment"),
        Case("trec-rag: support assignments of one run of two", "cli",
             [*trec_rag, "--answers", "{d}/r27.answers.jsonl", "--support-assignments", "{d}/ts.jsonl", "--nuggets",
              "{d}/nuggets.jsonl"],
             both(write(answers_2026, _jsonl([ANSWER_2026])),
                  write("r27.answers.jsonl", _jsonl([{**ANSWER_2026, "metadata": {**ANSWER_2026["metadata"],
                                                                                   "run_id": "r27"}}])),
                  write("ts.jsonl", _jsonl([{"topic_id": "t1", "run_id": "r26", "sentences": [
                      {"sentenceID": 0, "text": "Paris is the capital.", "citations": [
                          {"citationID": 0, "reference": "shard_1", "support": "2"},
                          {"citationID": 1, "reference": "shard_2", "support": "1"}]}]}]))),
             r"ts.jsonl: field 'run_id': no support assignment of run r27; they judge run\(s\) r26"),
        Case("2026 answers: an integer narrative_id", "python", _read_2026,
             write(answers_2026, json.dumps({**ANSWER_2026, "metadata": {**ANSWER_2026["metadata"],
                                                                         "narrative_id": 58}}) + "\n"),
             r"r26.answers.jsonl:1: field 'metadata.narrative_id': a number \(58\)"),
        Case("2026 answers: a run id with a space", "python", _read_2026,
             write(answers_2026, json.dumps({**ANSWER_2026, "metadata": {**ANSWER_2026["metadata"],
                                                                         "run_id": "my run"}}) + "\n"),
             r"r26.answers.jsonl:1: field 'metadata.run_id': run tag 'my run'"),
        Case("2026 answers: a run id with a slash", "python", _read_2026,
             write(answers_2026, json.dumps({**ANSWER_2026, "metadata": {**ANSWER_2026["metadata"],
                                                                         "run_id": "a/b"}}) + "\n"),
             r"r26.answers.jsonl:1: field 'metadata.run_id': run tag 'a/b' contains a path separator"),
        Case("2026 answers: a reference id with a space", "python", _read_2026,
             write(answers_2026, json.dumps({**ANSWER_2026, "references": ["shard_1", "shard 2"]}) + "\n"),
             r"r26.answers.jsonl:1: field 'references\[1\]': document id 'shard 2' holds whitespace"),
        Case("2026 answers: a reference cited twice in one object: counted once", "python",
             lambda d: {"citations": len(__import__("pyterrier_nuggets.formats", fromlist=["x"]).read_answers(
                 str(d / answers_2026), rules=__import__("pyterrier_nuggets.formats", fromlist=["x"]).TREC_RAG_2026)[0]
                 .sentences[0].citations)},
             write(answers_2026, json.dumps({**ANSWER_2026, "answer": [{"text": "x", "citations": [0, 1, "shard_1"]}]})
                   + "\n"), scores={"citations": 2}),
        Case("trec-rag: an empty answer file", "cli", [*trec_rag, "--nuggets", "{d}/nuggets.jsonl"],
             write(answers_2026, ""), r"r26.answers.jsonl: holds no answer"),
        Case("trec-rag: answer topic ids of another case than the nuggets'", "cli",
             [*trec_rag, "--nuggets", "{d}/nuggets.jsonl"],
             write(answers_2026, json.dumps({**ANSWER_2026, "metadata": {**ANSWER_2026["metadata"],
                                                                         "narrative_id": "T1"}}) + "\n"),
             r"r26.answers.jsonl: field 'metadata.narrative_id': none of the 1 topics of the answers is a topic of "
             r"--nuggets .*nuggets.jsonl .*e.g. the answers have 'T1', --nuggets has 't1'.*same topic ids"),
        Case("trec-rag: rubric ids in upper case", "cli", [*trec_rag, "--rubrics", "{d}/rubric.jsonl"],
             both(write(answers_2026, _jsonl([ANSWER_2026])),
                  write("rubric.jsonl", rubric_line.replace('"qid": "t1"', '"qid": "T1"') + "\n")),
             r"r26.answers.jsonl: field 'metadata.narrative_id': none of the 1 topics of the answers is a topic of "
             r"--rubrics .*rubric.jsonl"),
        Case("trec-rag: one run answers none of the nuggets' topics", "cli",
             [*trec_rag, "--answers", "{d}/r27.answers.jsonl", "--nuggets", "{d}/nuggets.jsonl"],
             both(write(answers_2026, _jsonl([ANSWER_2026])),
                  write("r27.answers.jsonl", _jsonl([{**ANSWER_2026, "metadata": {**ANSWER_2026["metadata"],
                                                                                  "run_id": "r27", "narrative_id": "T1"}}]))),
             r"r27.answers.jsonl: field 'metadata.narrative_id': run r27 answers none of the topics of --nuggets "
             r".*nuggets.jsonl"),
        Case("trec-rag: two files of one run id", "cli",
             [*trec_rag, "--answers", "{d}/r26b.answers.jsonl", "--nuggets", "{d}/nuggets.jsonl"],
             both(write(answers_2026, _jsonl([ANSWER_2026])),
                  write("r26b.answers.jsonl", _jsonl([{**ANSWER_2026, "metadata": {**ANSWER_2026["metadata"],
                                                                                   "narrative_id": "t2"}}]))),
             r"r26b.answers.jsonl: field 'run_id': run r26 is also in .*r26.answers.jsonl"),
        )

    # ---- empty files and empty topics are refused where nothing would be scored
    empty_file = write("empty.jsonl", "")
    add("empty inputs",
        Case("export --nuggets: an empty file", "cli", ["export", "--nuggets", "{d}/empty.jsonl", "--qrels",
                                                         "{d}/out.qrels"], empty_file,
             r"empty.jsonl: no nugget in the file \(an empty file\)"),
        Case("export --nuggets: every topic's list empty", "cli",
             ["export", "--nuggets", "{d}/nuggets.jsonl", "--qrels", "{d}/out.qrels"],
             edit("nuggets.jsonl", lambda t: "".join(json.dumps({**json.loads(ln), "nuggets": []}) + "\n"
                                                     for ln in t.splitlines())),
             r"nuggets.jsonl: no nugget in the file \(every topic's list is empty\)"),
        Case("export --assignments: an empty file", "cli", _export_with(assignments="{d}/empty.jsonl", answers=None,
                                                                        support=None), empty_file,
             r"empty.jsonl: no assigned answer in the file \(an empty file\)"),
        Case("score --assignments: an empty file", "cli", ["score", "--assignments", "{d}/empty.jsonl"], empty_file,
             r"empty.jsonl: no assigned answer in the file \(an empty file\)"),
        Case("trec-rag --nuggets: an empty file", "cli", [*trec_rag, "--nuggets", "{d}/empty.jsonl"],
             both(write(answers_2026, _jsonl([ANSWER_2026])), empty_file),
             r"empty.jsonl: no nugget in the file \(an empty file\)"),
        )

    # ---- errors that name the file, the line and the field
    add("errors that name the file",
        Case("export: a run id with a space in the assignments", "cli", EXPORT,
             edit("r.assignments.jsonl", lambda t: t.replace('"run_id": "r"', '"run_id": "my run"')),
             r"r.assignments.jsonl:1: field 'run_id': run tag 'my run' is empty or contains whitespace"),
        Case("read_assignments: a run id with a space", "python", _read("read_assignments", "r.assignments.jsonl"),
             edit("r.assignments.jsonl", lambda t: t.replace('"run_id": "r"', '"run_id": "my run"')),
             r"r.assignments.jsonl:1: field 'run_id': run tag 'my run'"),
        Case("export --run-tag with a space", "cli", [*EXPORT, "--run-tag", "my tag"], nothing,
             r"--run-tag: .*run tag 'my tag' is empty or contains whitespace"),
        Case("table: nugget qrels with a grade 3", "cli", TABLE, replace("nuggets.qrels", "t1:n0 2", "t1:n0 3"),
             r"nuggets.qrels:1: field 'relevance': relevance 3; nugget qrels use 2 = vital, 1 = okay"),
        Case("table: nugget qrels listing a nugget twice", "cli", TABLE, append("nuggets.qrels", "t2 0 t2:n1 2\n"),
             r"nuggets.qrels:6: field 'docno': t2:n1 of topic t2 is already judged at line 5"),
        Case("table: which --system file holds a bad assignment score", "cli",
             TABLE_RS,
             edit_copy("r.eval.run", "s.eval.run", lambda t: t.replace("t1:n1 2 0.5", "t1:n1 2 0.7")),
             r"s.eval.run:2: field 'score': assignment score 0.7 is not a valid value.*system s"),
        Case("table: a --system file assigning a nugget not in the qrels", "cli",
             TABLE_RS,
             edit_copy("r.eval.run", "s.eval.run", lambda t: t + "t1 Q0 t1:n7 20 1 s\n"),
             r"s.eval.run:12: field 'docno': .*not in the nugget qrels"),
        )

    # ---- test-endpoint: every option refused where it enters (one line, exit 2), never a traceback
    add("test endpoint options",
        *(Case(f"test-endpoint {' '.join(argv)}", "python", _parsed(["test-endpoint", *argv]), nothing, message)
          for argv, message in [
              (["--port", "99999"], r"--port: .*99999 is not a port: ports are 0 to 65535"),
              (["--port", "-1"], r"--port: .*must be 0 or more"),
              (["--latency", "-1"], r"--latency: .*-1 is not a number of 0 or more"),
              (["--latency", "nan"], r"--latency: .*nan is not a number of 0 or more"),
              (["--latency", "inf"], r"--latency: .*inf is not a number of 0 or more"),
              (["--retry-after", "nan"], r"--retry-after: .*nan is not a number above 0"),
              (["--quota-window", "0"], r"--quota-window: .*0 is not a number above 0"),
              (["--max-in-flight", "0"], r"--max-in-flight: .*must be 1 or more")]),
        Case("TestEndpoint(latency=nan)", "python", _test_endpoint(latency=float("nan")), nothing,
             r"TestEndpoint\(latency=nan\): seconds, a finite number of 0 or more"),
        Case("TestEndpoint(port=70000)", "python", _test_endpoint(port=70000), nothing,
             r"TestEndpoint\(port=70000\): a port is 0 to 65535"),
        )
    return c


def edit_copy(name: str, copy: str, fn: Callable[[str], str]) -> Callable[[Path], None]:
    """Write ``copy``: the project's file ``name`` changed by ``fn`` (``name`` stays as it is)."""
    return lambda d: (d / copy).write_text(fn((d / name).read_text()))


def _parsed(argv: list[str]):
    """The command line ``argv`` parsed only (an accepted ``test-endpoint`` would serve until interrupted): a refusal
    is argparse's exit code 2 with one line, raised as a ValueError of that line."""
    def call(d: Path):
        from pyterrier_nuggets.cli import build_parser
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                build_parser().parse_args(argv)
        except SystemExit as e:
            assert e.code == 2 and "Traceback" not in err.getvalue(), err.getvalue()
            raise ValueError(err.getvalue().strip().splitlines()[-1]) from None
    return call


def _test_endpoint(**options):
    def call(d: Path):
        from pyterrier_nuggets.testing import TestEndpoint
        with TestEndpoint(**options):  # refused before it serves
            pass
    return call
