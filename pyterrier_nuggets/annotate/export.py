"""A project's annotations as the package's own files ([nugget-annotation §4] leaves scoring outside the tool; here
the outputs go straight into the measures and the meta-evaluation):

==============================  =========================================================================
``nuggets.jsonl``               the frozen nuggets (ManualNuggets, or post-edited pre-populated nuggets),
                                each with its answers and attesting documents (nugget JSONL)
``nuggets.qrels``               their nugget qrels (2 vital, 1 okay)
``nuggets.prefill.jsonl``       the pre-populated nuggets as imported (same ids: agreement by id)
``assignments.jsonl``           ManualAssign from stage 4: support when a sentence conveys the nugget
``support.human.jsonl``         stage 3 support labels (support JSONL, all runs, ``run_id`` per line)
``support.llm.jsonl``           the LLM pre-fill of the same citations, when the project had one
``runs/RUN.eval.run``           per run: the evaluation run (nugget, support, length and sentence content
                                rows) for V_strict ... A, SupportP/R, ArgueP/R on the ir_measures CLI
``runs/RUN.assignments.jsonl``  per run: its assignments; ``runs/RUN.support.jsonl`` its human support
``argue.jsonl``                 per sentence: content, nuggets, citation support, ARGUE label (an uncited
                                repetition of a nugget cited before is forgiven, [nugget-annotation §3.4])
``relevance.qrels``             stage 1 relevance grades of the pooled documents (TREC qrels, 0-3)
``relevance.inferred.qrels``    grades inferred from the nuggets a document attests (2 a vital one, 1 only
                                okay ones, 0 none; [nugget-annotation §3.1])
``relations.human.jsonl``       BioGen scale only: the stage 3 relations (BioGen relation JSONL), and
``relations.llm.jsonl``         the LLM pre-fill's, when the project had one
``missing_questions.jsonl``     nugget questions flagged as missing in stage 4 ([nugget-annotation §4]), with the
                                manager's review
``audit.jsonl``                 the audit trail; ``manifest.json`` what was exported, by whom, how
==============================  =========================================================================
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import replace

from ir_measures_ext import ids, scoring
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import formats
from pyterrier_nuggets.annotate import protocol
from pyterrier_nuggets.annotate.config import SCALES
from pyterrier_nuggets.annotate.store import Store, now
from pyterrier_nuggets.formats import AssignedAnswer
from pyterrier_nuggets.formats.folders import OutputFolder
from pyterrier_nuggets.records import Answer, Assignment, Nugget, Sentence, SupportJudgment, SupportRelation


class Unfinished(InvalidInput):
    """The project has topics whose four stages are not complete."""


def content_rows(qid: str, sentences: Iterable[tuple[int, str, Iterable[int]]]) -> list[formats.Row]:
    """The sentence content rows of one answer (ids in :mod:`ir_measures_ext.ids`): ``(sentence, content,
    nugget indices)`` -> ``{qid}:s{j}:n{i}`` rows (score 1), or one ``:irrelevant`` / ``:noinfo`` row."""
    rows: list[formats.Row] = []
    for j, content, nuggets in sentences:
        if content == ids.SOME_NUGGETS:
            rows += [(qid, ids.sentence_nugget_id(qid, j, i), 1.0) for i in sorted(nuggets)]
        else:
            rows.append((qid, ids.sentence_content_id(qid, j, content), 0.0))
    return rows


class Export:
    """Everything one export writes, computed from the database before any file is written."""

    def __init__(self, store: Store, finished_only: bool = False):
        self.store = store
        scale = SCALES[store.meta["support_scale"]]
        with store.read() as c:
            topics = c.execute("SELECT * FROM topics ORDER BY position").fetchall()
            done = {t["qid"]: protocol.progress(c, t["qid"]) for t in topics}
            unfinished = [q for q, p in done.items() if not p["complete"]]
            if unfinished and not finished_only:
                raise Unfinished(f"{len(unfinished)} topic(s) are not finished: " + "; ".join(
                    f"{q}: {_missing(done[q])}" for q in unfinished[:5]) + ". Finish them, or export the finished "
                    "topics only (--finished-only)")
            self.topics = [t for t in topics if t["qid"] not in unfinished]
            self.skipped = unfinished
            if not self.topics:
                raise Unfinished("no topic is finished: nothing to export")
            for run in sorted({r["run_id"] for r in c.execute("SELECT run_id FROM reports")}):
                problem = formats.run_tag_problem(run)
                if problem:  # init refuses such runs; a database made otherwise is refused before any write
                    raise InvalidInput(f"{store.path}: {problem}")
            self._read(c, scale)
            self._relevance(c)
            self.audit = [dict(r) for r in c.execute("SELECT * FROM audit ORDER BY id")]

    def _read(self, c, scale: dict[str, str]) -> None:
        self.nuggets: list[Nugget] = []
        self.prefill: list[Nugget] = []
        self.reports: list[Answer] = []
        self.assigned: list[AssignedAnswer] = []
        self.human: dict[str, list[SupportJudgment]] = {}
        self.llm: dict[str, list[SupportJudgment]] = {}
        self.content: dict[str, list[formats.Row]] = {}
        self.argue: list[dict] = []
        self.missing: list[dict] = []
        self.relations: dict[str, list[SupportRelation]] = {}
        self.llm_relations: dict[str, list[SupportRelation]] = {}
        self.people: dict[str, set[str]] = {"stage1": set(), "stage2": set(), "stage3": set(), "stage4": set()}
        for t in self.topics:
            qid, query = t["qid"], t["query"]
            by_row: dict[int, int] = {}
            nuggets = []
            for n in c.execute("SELECT * FROM nuggets WHERE qid = ? ORDER BY idx", (qid,)):
                if n["origin"] == "prefill" and n["prefill_importance"] is not None:
                    self.prefill.append(Nugget(qid, n["idx"], n["prefill_text"], n["prefill_importance"],
                                               json.loads(n["provenance"])))
                if n["status"] != "active":
                    continue
                answers = [{"text": a["text"], "documents": sorted(
                    r["docno"] for r in c.execute("SELECT docno FROM attestations WHERE answer_id = ?", (a["id"],)))}
                    for a in c.execute("SELECT * FROM nugget_answers WHERE nugget_id = ? ORDER BY id", (n["id"],))]
                provenance = {**json.loads(n["provenance"]), "origin": n["origin"], "answers": answers}
                if n["origin"] == "prefill":
                    provenance["edited"] = (n["text"], n["importance"]) != (n["prefill_text"], n["prefill_importance"])
                nuggets.append(Nugget(qid, n["idx"], n["text"], n["importance"], provenance))
                by_row[n["id"]] = n["idx"]
            self.nuggets += nuggets
            self.people["stage2"].add(t["frozen_by"])
            for r in c.execute("SELECT DISTINCT s1_done_by AS u FROM pool WHERE qid = ? AND s1_done_by IS NOT NULL", (qid,)):
                self.people["stage1"].add(r["u"])
            for r in c.execute("SELECT DISTINCT s3_done_by AS u FROM pool WHERE qid = ? AND s3_done_by IS NOT NULL", (qid,)):
                self.people["stage3"].add(r["u"])
            for rep in c.execute("SELECT * FROM reports WHERE qid = ? ORDER BY run_id", (qid,)).fetchall():
                self._report(c, rep, qid, query, nuggets, by_row, scale)

    def _report(self, c, rep, qid: str, query: str, nuggets: list[Nugget], by_row: dict[int, int],
                scale: dict[str, str]) -> None:
        run, rid = rep["run_id"], rep["id"]
        self.people["stage4"].add(rep["s4_done_by"])
        references = [r["docno"] for r in c.execute("SELECT docno FROM references_ WHERE report_id = ? ORDER BY idx",
                                                    (rid,))]
        cites: dict[int, list] = {}
        for r in c.execute("SELECT * FROM citations WHERE report_id = ? ORDER BY sentence, k", (rid,)):
            cites.setdefault(r["sentence"], []).append(r)
        aligned: dict[int, set[int]] = {}
        for r in c.execute("SELECT sentence, nugget_id FROM alignment_nuggets WHERE report_id = ?", (rid,)):
            aligned.setdefault(r["sentence"], set()).add(by_row[r["nugget_id"]])
        sentences, content, conveyed, judged = [], [], set(), []
        human, llm = self.human.setdefault(run, []), self.llm.setdefault(run, [])
        biogen = self.store.meta["support_scale"] == "biogen"
        for s in c.execute("SELECT * FROM sentences WHERE report_id = ? ORDER BY idx", (rid,)).fetchall():
            j, cs = s["idx"], cites.get(s["idx"], [])
            sentences.append(Sentence(s["text"], tuple(r["ref"] for r in cs)))
            if not cs:
                human.append(SupportJudgment(qid, j, None, None, ids.NONE))
                llm.append(SupportJudgment(qid, j, None, None, ids.NONE))
            for r in cs:
                human.append(SupportJudgment(qid, j, r["k"], r["docno"], scale[r["label"]]))
                if r["llm_label"] is not None:
                    llm.append(SupportJudgment(qid, j, r["k"], r["docno"], scale[r["llm_label"]]))
                if biogen:
                    self.relations.setdefault(run, []).append(SupportRelation(qid, j, r["k"], r["docno"], r["label"]))
                    if r["llm_label"] is not None:
                        self.llm_relations.setdefault(run, []).append(
                            SupportRelation(qid, j, r["k"], r["docno"], r["llm_label"]))
            nugget_idx = aligned.get(j, set())
            conveyed |= nugget_idx
            content.append((j, s["content"], nugget_idx))
            scores = tuple(ids.SUPPORT_LEVEL_TO_SCORE[scale[r["label"]]] for r in cs)
            judged.append(scoring.ArgueSentence(s["content"], scores, frozenset(nugget_idx)))
            self.argue.append({"qid": qid, "run_id": run, "sentence": j, "content": s["content"],
                               "nuggets": [ids.nugget_id(qid, i) for i in sorted(nugget_idx)],
                               "citation": scoring.citation_label(scores)})
            if s["missing_question"]:
                self.missing.append({"qid": qid, "run_id": run, "sentence": j, "sentence_text": s["text"],
                                     "question": s["missing_question"], "by": s["updated_by"],
                                     "review": s["missing_status"] or "open", "review_note": s["missing_note"],
                                     "reviewed_by": s["missing_by"]})
        for row, label, plain in zip(self.argue[-len(judged):] if judged else [], scoring.argue_labels(judged),
                                     scoring.argue_labels(judged, repeats="penalize")):
            row["argue"] = label
            if label != plain:
                row["forgiven_repeat"] = True  # hallucinated by Table 1 as printed, forgiven by §3.4
        answer = Answer(qid, run, tuple(sentences), tuple(references), query, json.loads(rep["source"]))
        self.reports.append(answer)
        self.assigned.append(AssignedAnswer(
            qid=qid, run_id=run, answer_text=answer.text, query=query, nuggets=nuggets,
            assignments=[Assignment(qid, n.index, ids.SUPPORT if n.index in conveyed else ids.NOT_SUPPORT)
                         for n in nuggets]))
        self.content.setdefault(run, []).extend(content_rows(qid, content))

    def _relevance(self, c) -> None:
        """Stage 1 grades ([nugget-annotation §3.1]: "the level of relevance can be recorded by the assessor"), and grades
        inferred from the frozen nuggets a document attests (§3.1: "inferred by the importance of the nuggets
        extracted from it"): 2 when it attests an answer of a vital nugget, 1 of okay nuggets only, else 0."""
        self.grades: list[tuple[str, str, int]] = []
        self.inferred: list[tuple[str, str, int]] = []
        for t in self.topics:
            qid = t["qid"]
            best: dict[str, int] = {}
            for r in c.execute("SELECT t.docno, n.importance FROM attestations t JOIN nugget_answers a ON a.id = "
                               "t.answer_id JOIN nuggets n ON n.id = a.nugget_id WHERE n.qid = ? AND n.status = "
                               "'active'", (qid,)):
                best[r["docno"]] = max(best.get(r["docno"], 0), ids.IMPORTANCE_TO_GRADE[r["importance"]])
            for p in c.execute("SELECT docno, relevance FROM pool WHERE qid = ? ORDER BY position", (qid,)):
                if p["relevance"] is not None:
                    self.grades.append((qid, p["docno"], p["relevance"]))
                self.inferred.append((qid, p["docno"], best.get(p["docno"], 0)))

    def runs(self) -> list[str]:
        return sorted({a.run_id for a in self.reports})

    def manifest(self) -> dict:
        meta = self.store.meta
        prefill_support = meta["has_support_prefill"]
        return {
            "project": self.store.name, "exported_at": now(), "topics": [t["qid"] for t in self.topics],
            "unfinished_topics_left_out": self.skipped, "runs": self.runs(),
            "nuggets": "post-edited pre-populated nuggets" if meta["has_nugget_prefill"] else "ManualNuggets",
            "assignments": "ManualAssign: a nugget is 'support' when a sentence of the answer conveys it "
                           "(stage 4 alignment), else 'not_support'",
            "support": "manual (stage 3), " + (("post-edited LLM pre-fill" if meta["show_support_prefill"] else
                                               "from scratch; LLM pre-fill kept apart") if prefill_support
                                              else "from scratch"),
            "support_scale": meta["support_scale"],
            "annotators": {k: sorted(u for u in v if u) for k, v in self.people.items()},
            "counts": {"nuggets": len(self.nuggets), "answers": len(self.reports),
                       "support_labels": sum(1 for js in self.human.values() for j in js if j.citation is not None),
                       "relevance_grades": len(self.grades), "pooled_documents": len(self.inferred),
                       "missing_questions": len(self.missing),
                       "missing_questions_reviewed": sum(1 for m in self.missing if m["review"] != "open")},
            "argue": "ARGUE labels of [nugget-annotation Table 1]; an uncited sentence whose nuggets an earlier valid sentence "
                     "conveyed is forgiven (ignored, [nugget-annotation §3.4]): ArgueP(repeats='penalize') scores without that",
            "relevance": "relevance.qrels: stage 1 grades 0-3 (TREC RAG 2024 scale); relevance.inferred.qrels: 2 "
                         "attests an answer of a vital nugget, 1 of okay nuggets only, 0 none",
            "audit_until": self.audit[-1]["id"] if self.audit else 0,
            "audit_note": "the export holds the annotations as of audit entry audit_until; a later change (the "
                          "manager may still correct a finished topic) is an audit entry with a higher id",
        }

    def write(self, out_dir: str, overwrite: bool = False) -> list[str]:
        """Write every file into ``out_dir``, all or none, by the rule of every output folder
        (:class:`~pyterrier_nuggets.formats.folders.OutputFolder`): the files are written into a staging folder
        beside it and flushed to the disk, then that folder takes the place of ``out_dir`` in one step. A process
        killed at any point leaves ``out_dir`` as it was or complete, never mixed.

        ``out_dir`` may be new or empty, or (``overwrite``) an export written before; a folder holding anything the
        package did not write (a web app with a ``manifest.json`` of its own, say) is refused, also with
        ``overwrite``, and left as it is."""
        folder = self.output_folder(out_dir, overwrite)
        folder.check()
        written: list[str] = []
        folder.write_all({}, [lambda stage: written.extend(self._write_all(stage))])
        return [os.path.join(folder.path, n) for n in written]

    def output_folder(self, out_dir: str, overwrite: bool = False) -> OutputFolder:
        """The export's folder ``out_dir`` (not inside the project, but its ``export`` folder)."""
        absolute = os.path.abspath(out_dir)
        if os.path.commonpath([absolute, self.store.directory]) == self.store.directory and \
                absolute != os.path.join(self.store.directory, "export"):
            raise InvalidInput(f"{absolute} is inside the project directory: export to another directory "
                               f"(or to {os.path.join(self.store.directory, 'export')})")
        return OutputFolder(out_dir, "annotate export", overwrite=overwrite)

    def _write_all(self, d: str) -> list[str]:
        os.makedirs(os.path.join(d, "runs"))
        queries = {t["qid"]: t["query"] for t in self.topics}
        names = ["nuggets.jsonl", "nuggets.qrels", "assignments.jsonl", "support.human.jsonl", "argue.jsonl",
                 "missing_questions.jsonl", "audit.jsonl", "manifest.json"]
        formats.write_nuggets(os.path.join(d, "nuggets.jsonl"), self.nuggets, queries)
        formats.write_nugget_qrels(os.path.join(d, "nuggets.qrels"), self.nuggets)
        formats.write_assignments(os.path.join(d, "assignments.jsonl"), self.assigned)
        _write_support(os.path.join(d, "support.human.jsonl"), self.human)
        if self.prefill:
            formats.write_nuggets(os.path.join(d, "nuggets.prefill.jsonl"), self.prefill, queries)
            names.append("nuggets.prefill.jsonl")
        if self.store.meta["has_support_prefill"]:
            _write_support(os.path.join(d, "support.llm.jsonl"), self.llm)
            names.append("support.llm.jsonl")
        formats.write_jsonl(os.path.join(d, "argue.jsonl"), self.argue)
        formats.write_qrels(os.path.join(d, "relevance.inferred.qrels"), self.inferred)
        names.append("relevance.inferred.qrels")
        if self.grades:
            formats.write_qrels(os.path.join(d, "relevance.qrels"), self.grades)
            names.append("relevance.qrels")
        if self.store.meta["support_scale"] == "biogen":
            formats.write_relations(os.path.join(d, "relations.human.jsonl"),
                                    (replace(r, run_id=run) for run in sorted(self.relations) for r in self.relations[run]))
            names.append("relations.human.jsonl")
            if self.store.meta["has_support_prefill"]:
                formats.write_relations(os.path.join(d, "relations.llm.jsonl"), (
                    replace(r, run_id=run) for run in sorted(self.llm_relations) for r in self.llm_relations[run]))
                names.append("relations.llm.jsonl")
        formats.write_jsonl(os.path.join(d, "missing_questions.jsonl"), self.missing)
        formats.write_jsonl(os.path.join(d, "audit.jsonl"), ({**r, "detail": json.loads(r["detail"])}
                                                            for r in self.audit))
        with formats.atomic_write(os.path.join(d, "manifest.json")) as f:
            json.dump(self.manifest(), f, indent=2, ensure_ascii=False)
        for run in self.runs():
            assigned = [a for a in self.assigned if a.run_id == run]
            answers = [a for a in self.reports if a.run_id == run]
            rows = formats.evaluation_rows(assigned, answers, self.human[run]) + self.content[run]
            files = {suffix: _run_file(d, run, suffix) for suffix in (".eval.run", ".assignments.jsonl", ".support.jsonl")}
            formats.write_run(files[".eval.run"], rows, run)
            formats.write_assignments(files[".assignments.jsonl"], assigned)
            formats.write_support(files[".support.jsonl"], self.human[run], run)
            names += [os.path.relpath(f, d) for f in files.values()]
        return names


def _run_file(d: str, run: str, suffix: str) -> str:
    """``d/runs/RUN{suffix}``, refused unless it is a plain file name inside ``d/runs`` (a run tag is file
    content: never a path)."""
    folder = os.path.join(d, "runs")
    path = os.path.join(folder, formats.check_run_tag(run) + suffix)
    if os.path.dirname(os.path.abspath(path)) != os.path.abspath(folder):
        raise InvalidInput(f"run {run!r:.80} would be written outside the export folder; refused")
    return path


def _write_support(path: str, by_run: dict[str, list[SupportJudgment]]) -> None:
    """Support JSONL of several runs in one file, ``run_id`` on every line (docs/formats.md)."""
    formats.write_jsonl(path, ({"qid": j.qid, "run_id": run, "sentence": j.sentence, "citation": j.citation,
                                "docno": j.docno, "support": j.support}
                               for run in sorted(by_run) for j in by_run[run]))


def _missing(p: dict) -> str:
    if not p["frozen"]:
        return f"stage 1 {p['s1']}/{p['pool']} documents, nuggets not frozen"
    return (f"stage 3 {p['s3']}/{p['pool']} documents and {p['labels']}/{p['citations']} labels, "
            f"stage 4 {p['s4']}/{p['reports']} answers")


def export_project(directory: str, out_dir: str, finished_only: bool = False, overwrite: bool = False) -> list[str]:
    """Export a project's annotations (see the module docstring); returns the files written.

    :param directory: the project directory.
    :param out_dir: the export's folder: new or empty, or (``overwrite``) an export written before.
    :param finished_only: export the finished topics, leave out the others.
    :param overwrite: replace an export written before (a folder holding anything else is refused all the same).
    """
    return Export(Store(directory), finished_only).write(out_dir, overwrite)
