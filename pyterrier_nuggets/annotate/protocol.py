"""The four stages of the annotation protocol (seed 002 §3) on a project's database: what each page
shows, and every write, with the protocol's rules, access checks, optimistic concurrency and audit.

1. Nugget creation and attribution (§3.1): per pooled document, once: write nugget questions with short
   answers, link the document to existing answers, add answers; pre-populated nuggets are editable.
2. Nugget revision (§3.2, the manager): reword, set vital/okay, delete, merge; then freeze the questions.
3. Document support assessment (§3.3): per pooled document, the second and last visit: label the support
   of every answer sentence that cites it; attach new answers (never new questions) to the frozen nuggets.
4. Nugget alignment (§3.4): per answer, each sentence conveys some nuggets (which), only irrelevant
   information, or no information; a missing nugget question can be flagged.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3

from ir_measures_ext import ids
from pyterrier_nuggets.annotate.config import SCALES
from pyterrier_nuggets.annotate.store import Conflict, Refused, Store, audit, now, write_nuggets_json

STAGES = (1, 2, 3, 4)
CONTENTS = ids.CONTENT_LABELS  # nuggets / irrelevant / no_information
MAX_TEXT = 2000


class Forbidden(Exception):
    """The user may not see or change this (another project's or topic's item, or a manager's page)."""


class NotFound(Exception):
    pass


def _text(value: str | None, what: str, required: bool = True) -> str:
    text = " ".join((value or "").split())
    if required and not text:
        raise Refused(f"{what} is empty")
    if len(text) > MAX_TEXT:
        raise Refused(f"{what} is longer than {MAX_TEXT} characters")
    return text


# ------------------------------------------------------------------------------------- topics, access

def _visible(c: sqlite3.Connection, user: dict) -> list[sqlite3.Row]:
    if user["role"] == "manager":
        return c.execute("SELECT * FROM topics ORDER BY position").fetchall()
    return c.execute("SELECT t.* FROM topics t JOIN topic_users u ON u.qid = t.qid WHERE u.user_id = ? "
                     "ORDER BY t.position", (user["id"],)).fetchall()


def _topic(c: sqlite3.Connection, user: dict, position: int) -> sqlite3.Row:
    row = c.execute("SELECT * FROM topics WHERE position = ?", (position,)).fetchone()
    if row is None:
        raise NotFound(f"no topic {position}")
    if user["role"] != "manager" and not c.execute(
            "SELECT 1 FROM topic_users WHERE qid = ? AND user_id = ?", (row["qid"], user["id"])).fetchone():
        raise Forbidden("this topic is not assigned to you")
    return row


def _check_stage(topic: sqlite3.Row, user: dict, stage: int) -> None:
    frozen = topic["frozen_at"] is not None
    if stage == 1 and frozen:
        raise Refused("the nuggets of this topic are frozen: stage 1 is over (stage 3 can still add answers)")
    if stage == 2 and user["role"] != "manager":
        raise Forbidden("stage 2 (nugget revision) is the manager's")
    if stage == 2 and frozen:
        raise Refused("the nuggets of this topic are frozen")
    if stage in (3, 4) and not frozen:
        raise Refused(f"stage {stage} starts when the manager has frozen the nuggets (stage 2)")


def progress(c: sqlite3.Connection, qid: str) -> dict:
    one = c.execute(
        "SELECT count(*) AS pool, count(s1_done_at) AS s1, count(s3_done_at) AS s3 FROM pool WHERE qid = ?",
        (qid,)).fetchone()
    cit = c.execute("SELECT count(*) AS n, count(c.label) AS done FROM citations c JOIN reports r ON r.id = "
                    "c.report_id WHERE r.qid = ?", (qid,)).fetchone()
    rep = c.execute("SELECT count(*) AS n, count(s4_done_at) AS done FROM reports WHERE qid = ?", (qid,)).fetchone()
    nug = c.execute("SELECT count(*) AS n, count(importance) AS rated FROM nuggets WHERE qid = ? AND status = "
                    "'active'", (qid,)).fetchone()
    frozen = c.execute("SELECT frozen_at FROM topics WHERE qid = ?", (qid,)).fetchone()["frozen_at"] is not None
    return {"pool": one["pool"], "s1": one["s1"], "s3": one["s3"], "citations": cit["n"], "labels": cit["done"],
            "reports": rep["n"], "s4": rep["done"], "nuggets": nug["n"], "rated": nug["rated"], "frozen": frozen,
            "complete": frozen and one["s3"] == one["pool"] and cit["done"] == cit["n"] and rep["done"] == rep["n"]}


def overview(store: Store, user: dict) -> list[dict]:
    """The topics the user may work on, with the progress of each stage."""
    with store.read() as c:
        return [{"position": t["position"], "qid": t["qid"], "query": t["query"], **progress(c, t["qid"])}
                for t in _visible(c, user)]


# ---------------------------------------------------------------------------------------- nuggets

def _nuggets(c: sqlite3.Connection, qid: str, docno: str | None = None) -> list[dict]:
    """Active nuggets of a topic with their answers (and whether ``docno`` attests each answer)."""
    out = []
    for n in c.execute("SELECT * FROM nuggets WHERE qid = ? AND status = 'active' ORDER BY idx", (qid,)):
        answers = []
        for a in c.execute("SELECT * FROM nugget_answers WHERE nugget_id = ? ORDER BY id", (n["id"],)):
            docs = [r["docno"] for r in c.execute("SELECT docno FROM attestations WHERE answer_id = ? ORDER BY docno",
                                                  (a["id"],))]
            answers.append({"id": a["id"], "text": a["text"], "documents": docs, "linked": docno in docs,
                            "stage": a["stage"], "created_by": a["created_by"]})
        out.append({"id": n["id"], "nugget_id": ids.nugget_id(qid, n["idx"]), "text": n["text"],
                    "importance": n["importance"], "origin": n["origin"], "version": n["version"],
                    "prefill_text": n["prefill_text"], "updated_by": n["updated_by"], "answers": answers})
    return out


def _nugget_row(c: sqlite3.Connection, qid: str, nugget_id: int) -> sqlite3.Row:
    row = c.execute("SELECT * FROM nuggets WHERE id = ? AND qid = ?", (nugget_id, qid)).fetchone()
    if row is None:
        raise NotFound(f"no nugget {nugget_id} in this topic")
    if row["status"] != "active":
        raise Refused(f"nugget {ids.nugget_id(qid, row['idx'])} was {row['status']} by {row['updated_by']}")
    return row


def _bump_nugget(c: sqlite3.Connection, row: sqlite3.Row, version: int, user: str, changes: dict, what: str) -> None:
    sets = ", ".join(f"{k} = ?" for k in changes)
    cur = c.execute(f"UPDATE nuggets SET {sets}, version = version + 1, updated_by = ?, updated_at = ? "
                    "WHERE id = ? AND version = ?", (*changes.values(), user, now(), row["id"], version))
    if cur.rowcount != 1:
        theirs = c.execute("SELECT * FROM nuggets WHERE id = ?", (row["id"],)).fetchone()
        raise Conflict(what, {k: v for k, v in changes.items()},
                       {"text": theirs["text"], "importance": theirs["importance"], "status": theirs["status"],
                        "updated_by": theirs["updated_by"], "updated_at": theirs["updated_at"]})


def edit_nugget(store: Store, user: dict, position: int, stage: int, nugget_id: int, version: int,
                text: str, importance: str | None = None) -> None:
    """Reword a nugget (stages 1 and 2); in stage 2 also set its importance (vital / okay)."""
    text = _text(text, "the nugget")
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, stage)
        row = _nugget_row(c, topic["qid"], nugget_id)
        changes: dict = {"text": text}
        if stage == 2:
            if importance not in ids.IMPORTANCE_TO_GRADE:
                raise Refused("choose vital or okay")
            changes["importance"] = importance
        what = f"nugget {ids.nugget_id(topic['qid'], row['idx'])}"
        _bump_nugget(c, row, version, user["name"], changes, what)
        audit(c, user["name"], f"s{stage}_edit_nugget", what, {"before": {"text": row["text"], "importance":
                                                                         row["importance"]}, "after": changes})
        write_nuggets_json(c, store.directory)


def remove_nugget(store: Store, user: dict, position: int, nugget_id: int, version: int,
                  merge_into: int | None = None) -> None:
    """Stage 2: delete a nugget, or merge it into another (its answers move there)."""
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 2)
        qid = topic["qid"]
        row = _nugget_row(c, qid, nugget_id)
        what = f"nugget {ids.nugget_id(qid, row['idx'])}"
        if merge_into is None:
            _bump_nugget(c, row, version, user["name"], {"status": "deleted"}, what)
            audit(c, user["name"], "s2_delete_nugget", what, {"text": row["text"]})
        else:
            target = _nugget_row(c, qid, merge_into)
            if target["id"] == row["id"]:
                raise Refused("a nugget cannot be merged into itself")
            _bump_nugget(c, row, version, user["name"], {"status": "merged", "merged_into": target["id"]}, what)
            c.execute("UPDATE nugget_answers SET nugget_id = ? WHERE nugget_id = ?", (target["id"], row["id"]))
            c.execute("UPDATE nuggets SET version = version + 1, updated_by = ?, updated_at = ? WHERE id = ?",
                      (user["name"], now(), target["id"]))
            audit(c, user["name"], "s2_merge_nugget", what, {"into": ids.nugget_id(qid, target["idx"]),
                                                             "text": row["text"]})
        write_nuggets_json(c, store.directory)


def freeze(store: Store, user: dict, position: int) -> None:
    """Stage 2 ends: the nugget questions of the topic are fixed (seed 002 §3.2)."""
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 2)
        p = progress(c, topic["qid"])
        if p["s1"] < p["pool"]:
            raise Refused(f"stage 1 has {p['pool'] - p['s1']} pooled document(s) to go")
        if p["nuggets"] == 0:
            raise Refused("the topic has no nugget")
        if p["rated"] < p["nuggets"]:
            raise Refused(f"{p['nuggets'] - p['rated']} nugget(s) have no importance: set vital or okay")
        c.execute("UPDATE topics SET frozen_by = ?, frozen_at = ? WHERE qid = ?", (user["name"], now(), topic["qid"]))
        audit(c, user["name"], "s2_freeze", topic["qid"], {"nuggets": p["nuggets"]})
        write_nuggets_json(c, store.directory)


def revision_view(store: Store, user: dict, position: int) -> dict:
    with store.read() as c:
        topic = _topic(c, user, position)
        if user["role"] != "manager":
            raise Forbidden("stage 2 (nugget revision) is the manager's")
        return {"topic": dict(topic), "nuggets": _nuggets(c, topic["qid"]), "progress": progress(c, topic["qid"])}


# ------------------------------------------------------------------------------ stages 1 and 3: documents

def _pool_row(c: sqlite3.Connection, qid: str, d: int) -> sqlite3.Row:
    row = c.execute("SELECT p.*, doc.text FROM pool p JOIN documents doc ON doc.docno = p.docno "
                    "WHERE p.qid = ? AND p.position = ?", (qid, d)).fetchone()
    if row is None:
        raise NotFound(f"no pooled document {d}")
    return row


def _order(stage: int) -> str:
    # stage 3 visits the cited documents first (they carry the support judgments), then the rest of the pool
    return "position" if stage == 1 else "cited DESC, position"


def next_document(store: Store, user: dict, position: int, stage: int) -> int | None:
    """The next pooled document of the stage not yet done, or None when the stage is done for the topic."""
    with store.read() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, stage)
        row = c.execute(f"SELECT position FROM pool WHERE qid = ? AND s{stage}_done_at IS NULL ORDER BY "
                        f"{_order(stage)} LIMIT 1", (topic["qid"],)).fetchone()
        return None if row is None else row["position"]


def _citing(c: sqlite3.Connection, qid: str, docno: str) -> list[dict]:
    """Every answer sentence of the topic that cites ``docno`` (stage 3), with its whole answer."""
    out = []
    rows = c.execute("SELECT c.*, r.run_id, s.text FROM citations c JOIN reports r ON r.id = c.report_id JOIN "
                     "sentences s ON s.report_id = c.report_id AND s.idx = c.sentence WHERE r.qid = ? AND "
                     "c.docno = ? ORDER BY r.run_id, c.sentence, c.k", (qid, docno)).fetchall()
    for r in rows:
        out.append({"report_id": r["report_id"], "run_id": r["run_id"], "sentence": r["sentence"], "k": r["k"],
                    "text": r["text"], "llm_label": r["llm_label"], "label": r["label"], "version": r["version"],
                    "updated_by": r["updated_by"], "report": _report_sentences(c, r["report_id"])})
    return out


def _report_sentences(c: sqlite3.Connection, report_id: int) -> list[dict]:
    cites: dict[int, list[str]] = {}
    for r in c.execute("SELECT sentence, docno FROM citations WHERE report_id = ? ORDER BY sentence, k", (report_id,)):
        cites.setdefault(r["sentence"], []).append(r["docno"])
    return [{"idx": s["idx"], "text": s["text"], "citations": cites.get(s["idx"], [])}
            for s in c.execute("SELECT idx, text FROM sentences WHERE report_id = ? ORDER BY idx", (report_id,))]


def document_view(store: Store, user: dict, position: int, stage: int, d: int) -> dict:
    with store.read() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, stage)
        doc = _pool_row(c, topic["qid"], d)
        view = {"topic": dict(topic), "doc": dict(doc), "nuggets": _nuggets(c, topic["qid"], doc["docno"]),
                "progress": progress(c, topic["qid"]), "stage": stage,
                "done_by": doc[f"s{stage}_done_by"], "done_at": doc[f"s{stage}_done_at"]}
        if stage == 3:
            view["citing"] = _citing(c, topic["qid"], doc["docno"])
        return view


def set_links(store: Store, user: dict, position: int, stage: int, d: int, seen: set[int], checked: set[int]) -> None:
    """Link the document to exactly the checked answers, as a three-way merge with what the form showed:
    a link is added if checked and not shown linked, removed if shown linked and unchecked; links others
    made meanwhile are kept (no lost write)."""
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, stage)
        doc = _pool_row(c, topic["qid"], d)
        known = {r["id"] for r in c.execute("SELECT a.id FROM nugget_answers a JOIN nuggets n ON n.id = a.nugget_id "
                                            "WHERE n.qid = ? AND n.status = 'active'", (topic["qid"],))}
        if not checked <= known:
            raise Refused("an answer of the form is not an answer of this topic's nuggets (any more)")
        current = {r["answer_id"] for r in c.execute("SELECT answer_id FROM attestations WHERE docno = ?",
                                                     (doc["docno"],)) if r["answer_id"] in known}
        add = checked - current - seen
        remove = (seen - checked) & current
        for a in sorted(add):
            c.execute("INSERT OR IGNORE INTO attestations(answer_id, docno, stage, created_by) VALUES (?, ?, ?, ?)",
                      (a, doc["docno"], stage, user["name"]))
        for a in sorted(remove):
            c.execute("DELETE FROM attestations WHERE answer_id = ? AND docno = ?", (a, doc["docno"]))
        if add or remove:
            audit(c, user["name"], f"s{stage}_links", f"{topic['qid']} {doc['docno']}",
                  {"added": sorted(add), "removed": sorted(remove)})
            write_nuggets_json(c, store.directory)


def add_answer(store: Store, user: dict, position: int, stage: int, d: int, nugget_id: int, text: str) -> None:
    """A new answer to an existing nugget question, attested by this document (stages 1 and 3)."""
    text = _text(text, "the answer")
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, stage)
        doc = _pool_row(c, topic["qid"], d)
        row = _nugget_row(c, topic["qid"], nugget_id)
        _insert_answer(c, row["id"], text, doc["docno"], stage, user["name"])
        audit(c, user["name"], f"s{stage}_add_answer", f"{ids.nugget_id(topic['qid'], row['idx'])} {doc['docno']}",
              {"text": text})
        write_nuggets_json(c, store.directory)


def _insert_answer(c: sqlite3.Connection, nugget_id: int, text: str, docno: str, stage: int, user: str) -> None:
    cur = c.execute("INSERT INTO nugget_answers(nugget_id, text, stage, created_by, created_at) VALUES (?, ?, ?, ?, ?)",
                    (nugget_id, text, stage, user, now()))
    c.execute("INSERT INTO attestations(answer_id, docno, stage, created_by) VALUES (?, ?, ?, ?)",
              (cur.lastrowid, docno, stage, user))


def add_nugget(store: Store, user: dict, position: int, d: int, text: str, answer: str) -> None:
    """Stage 1: a new nugget question with its short answer, attested by this document (seed 002 §3.1)."""
    text, answer = _text(text, "the question"), _text(answer, "the answer")
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 1)
        doc = _pool_row(c, topic["qid"], d)
        idx = topic["next_index"]
        cur = c.execute("INSERT INTO nuggets(qid, idx, text, origin, created_by, updated_by, updated_at) "
                        "VALUES (?, ?, ?, 'annotator', ?, ?, ?)", (topic["qid"], idx, text, user["name"],
                                                                   user["name"], now()))
        c.execute("UPDATE topics SET next_index = next_index + 1 WHERE qid = ?", (topic["qid"],))
        _insert_answer(c, cur.lastrowid, answer, doc["docno"], 1, user["name"])
        audit(c, user["name"], "s1_add_nugget", ids.nugget_id(topic["qid"], idx),
              {"text": text, "answer": answer, "docno": doc["docno"]})
        write_nuggets_json(c, store.directory)


def save_labels(store: Store, user: dict, position: int, d: int,
                labels: dict[tuple[int, int, int], tuple[str, int, str | None]]) -> None:
    """Stage 3: the support labels of the sentences citing this document, ``(report, sentence, k) ->
    (label, version, label as the form showed it)``. A label the user did not change is not written; all or
    none: if another user changed a label this user changed too, nothing is written and the conflict names
    both versions."""
    scale = SCALES[store.meta["support_scale"]]
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 3)
        doc = _pool_row(c, topic["qid"], d)
        for (rid, j, k), (label, version, shown) in sorted(labels.items()):
            if label == shown:
                continue
            if label not in scale:
                raise Refused(f"{label!r} is not a label of the scale ({', '.join(scale)})")
            row = c.execute("SELECT c.*, r.run_id FROM citations c JOIN reports r ON r.id = c.report_id WHERE "
                            "c.report_id = ? AND c.sentence = ? AND c.k = ? AND r.qid = ? AND c.docno = ?",
                            (rid, j, k, topic["qid"], doc["docno"])).fetchone()
            if row is None:
                raise Refused(f"answer {rid} sentence {j} does not cite this document")
            if row["version"] != version:
                raise Conflict(f"the support label of sentence {j + 1} of {row['run_id']}", {"label": label},
                               {"label": row["label"], "updated_by": row["updated_by"], "updated_at": row["updated_at"]})
            if row["label"] == label:
                continue
            c.execute("UPDATE citations SET label = ?, version = version + 1, updated_by = ?, updated_at = ? WHERE "
                      "report_id = ? AND sentence = ? AND k = ?", (label, user["name"], now(), rid, j, k))
            audit(c, user["name"], "s3_label", f"{topic['qid']} {row['run_id']} s{j} c{k} {doc['docno']}",
                  {"before": row["label"], "after": label, "llm": row["llm_label"]})


def mark_document_done(store: Store, user: dict, position: int, stage: int, d: int) -> None:
    """The user has finished this document for the stage (seed 002 §3: it is not shown again)."""
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, stage)
        doc = _pool_row(c, topic["qid"], d)
        if stage == 3:
            open_ = c.execute("SELECT count(*) AS n FROM citations c JOIN reports r ON r.id = c.report_id WHERE "
                              "r.qid = ? AND c.docno = ? AND c.label IS NULL", (topic["qid"], doc["docno"])).fetchone()
            if open_["n"]:
                raise Refused(f"{open_['n']} citing sentence(s) have no support label yet")
        if doc[f"s{stage}_done_at"] is None:
            c.execute(f"UPDATE pool SET s{stage}_done_by = ?, s{stage}_done_at = ? WHERE qid = ? AND position = ?",
                      (user["name"], now(), topic["qid"], d))
            audit(c, user["name"], f"s{stage}_done", f"{topic['qid']} {doc['docno']}", {})


# ------------------------------------------------------------------------------------ stage 4: alignment

def next_report(store: Store, user: dict, position: int) -> int | None:
    with store.read() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 4)
        row = c.execute("SELECT id FROM reports WHERE qid = ? AND s4_done_at IS NULL ORDER BY run_id LIMIT 1",
                        (topic["qid"],)).fetchone()
        return None if row is None else row["id"]


def _report(c: sqlite3.Connection, qid: str, report_id: int) -> sqlite3.Row:
    row = c.execute("SELECT * FROM reports WHERE id = ? AND qid = ?", (report_id, qid)).fetchone()
    if row is None:
        raise NotFound(f"no answer {report_id} in this topic")
    return row


def report_view(store: Store, user: dict, position: int, report_id: int) -> dict:
    with store.read() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 4)
        report = _report(c, topic["qid"], report_id)
        aligned: dict[int, set[int]] = {}
        for r in c.execute("SELECT sentence, nugget_id FROM alignment_nuggets WHERE report_id = ?", (report_id,)):
            aligned.setdefault(r["sentence"], set()).add(r["nugget_id"])
        cites = {s["idx"]: s["citations"] for s in _report_sentences(c, report_id)}
        sentences = [{"idx": s["idx"], "text": s["text"], "content": s["content"], "version": s["version"],
                      "fingerprint": fingerprint(s["content"], aligned.get(s["idx"], set()), s["missing_question"]),
                      "missing_question": s["missing_question"] or "", "nuggets": aligned.get(s["idx"], set()),
                      "citations": cites.get(s["idx"], []), "updated_by": s["updated_by"]}
                     for s in c.execute("SELECT * FROM sentences WHERE report_id = ? ORDER BY idx", (report_id,))]
        return {"topic": dict(topic), "report": dict(report), "sentences": sentences,
                "nuggets": _nuggets(c, topic["qid"]), "progress": progress(c, topic["qid"])}


def fingerprint(content: str | None, nuggets: set[int], missing: str | None) -> str:
    """A short digest of a sentence's alignment as a form showed it (unchanged rows are not written)."""
    return hashlib.sha1(dumps([content, sorted(nuggets), missing or ""]).encode()).hexdigest()[:16]


def save_alignment(store: Store, user: dict, position: int, report_id: int,
                   rows: dict[int, tuple[str | None, set[int], str, int, str]], done: bool) -> None:
    """Stage 4: per sentence ``j -> (content, nugget ids, missing question, version, fingerprint of what the
    form showed)``; a row the user did not change is not written; all or none. With ``done`` the answer is
    finished, which needs every sentence labelled."""
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 4)
        report = _report(c, topic["qid"], report_id)
        active = {r["id"] for r in c.execute("SELECT id FROM nuggets WHERE qid = ? AND status = 'active'",
                                             (topic["qid"],))}
        for j, (content, nuggets, missing, version, shown) in sorted(rows.items()):
            row = c.execute("SELECT * FROM sentences WHERE report_id = ? AND idx = ?", (report_id, j)).fetchone()
            if row is None:
                raise Refused(f"the answer has no sentence {j + 1}")
            missing = _text(missing, "the missing question", required=False)
            if fingerprint(content, nuggets, missing) == shown:
                continue  # not changed by this user
            if content is None and not nuggets and not missing:
                continue  # left open
            if nuggets and content in (None, ids.SOME_NUGGETS):
                content = ids.SOME_NUGGETS
            if content not in CONTENTS:
                raise Refused(f"sentence {j + 1}: choose the nuggets it conveys, 'irrelevant' or 'no information'")
            if content == ids.SOME_NUGGETS and not nuggets:
                raise Refused(f"sentence {j + 1}: tick the nugget(s) it conveys")
            if content != ids.SOME_NUGGETS and nuggets:
                raise Refused(f"sentence {j + 1}: marked {content.replace('_', ' ')} but nuggets are ticked")
            if not nuggets <= active:
                raise Refused(f"sentence {j + 1}: a ticked nugget is not a nugget of this topic")
            before = {r["nugget_id"] for r in c.execute("SELECT nugget_id FROM alignment_nuggets WHERE report_id = ? "
                                                        "AND sentence = ?", (report_id, j))}
            if (row["content"], before, row["missing_question"] or "") == (content, nuggets, missing):
                continue  # already so
            cur = c.execute("UPDATE sentences SET content = ?, missing_question = ?, version = version + 1, "
                            "updated_by = ?, updated_at = ? WHERE report_id = ? AND idx = ? AND version = ?",
                            (content, missing or None, user["name"], now(), report_id, j, version))
            if cur.rowcount != 1:
                raise Conflict(f"the alignment of sentence {j + 1} of {report['run_id']}",
                               {"content": content, "nuggets": _names(c, nuggets), "missing": missing},
                               {"content": row["content"], "nuggets": _names(c, before),
                                "missing": row["missing_question"], "updated_by": row["updated_by"],
                                "updated_at": row["updated_at"]})
            c.execute("DELETE FROM alignment_nuggets WHERE report_id = ? AND sentence = ?", (report_id, j))
            c.executemany("INSERT INTO alignment_nuggets(report_id, sentence, nugget_id) VALUES (?, ?, ?)",
                          [(report_id, j, n) for n in sorted(nuggets)])
            audit(c, user["name"], "s4_align", f"{topic['qid']} {report['run_id']} s{j}",
                  {"content": content, "nuggets": _names(c, nuggets), "missing": missing})
        if done:
            open_ = c.execute("SELECT count(*) AS n FROM sentences WHERE report_id = ? AND content IS NULL",
                              (report_id,)).fetchone()["n"]
            if open_:
                raise Refused(f"{open_} sentence(s) are not aligned yet")
            if report["s4_done_at"] is None:
                c.execute("UPDATE reports SET s4_done_by = ?, s4_done_at = ? WHERE id = ?", (user["name"], now(), report_id))
                audit(c, user["name"], "s4_done", f"{topic['qid']} {report['run_id']}", {})


def _names(c: sqlite3.Connection, nugget_ids: set[int]) -> list[str]:
    if not nugget_ids:
        return []
    rows = c.execute(f"SELECT qid, idx FROM nuggets WHERE id IN ({','.join('?' * len(nugget_ids))}) ORDER BY idx",
                     sorted(nugget_ids)).fetchall()
    return [ids.nugget_id(r["qid"], r["idx"]) for r in rows]


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)
