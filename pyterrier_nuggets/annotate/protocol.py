"""The four stages of the annotation protocol ([nugget-annotation §3]) on a project's database: what each page
shows, and every write, with the protocol's rules, access checks, optimistic concurrency and audit.

1. Nugget creation and attribution (§3.1): per pooled document, once: write nugget questions with short
   answers, link the document to existing answers, add answers, grade the document's relevance;
   pre-populated nuggets are editable.
2. Nugget revision (§3.2, the manager): reword, set vital/okay, delete, merge (and undo both); then freeze
   the questions (and unfreeze them while no answer is aligned in stage 4).
3. Document support assessment (§3.3): per pooled document, the second and last visit: label the support
   of every answer sentence that cites it; attach new answers (never new questions) to the frozen nuggets.
4. Nugget alignment (§3.4): per answer, each sentence conveys some nuggets (which), only irrelevant
   information, or no information; a missing nugget question can be flagged, and the manager reviews the
   flags (§4).

Every page has one form, saved by one function here in one transaction: all of it or nothing
(:class:`~.store.Refused` and :class:`~.store.Conflict` roll everything back). Each form carries an id,
recorded with it, so a form sent twice is saved once (:class:`~.store.Duplicate`). An item a form shows
carries the version and a fingerprint of the values shown: a value the user did not change is not written,
a value already saved as the user wants it is not written either, and a change to an item someone else
changed since the form was loaded is a conflict.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Hashable
from dataclasses import dataclass, field

from ir_measures_ext import ids
from pyterrier_nuggets.annotate.config import RELEVANCE_GRADES, SCALES
from pyterrier_nuggets.annotate.store import Conflict, Refused, Store, audit, claim_form, now

STAGES = (1, 2, 3, 4)
CONTENTS = ids.CONTENT_LABELS  # nuggets / irrelevant / no_information
MAX_TEXT = 2000
REVIEW_STATUSES = {"open": "not reviewed", "accepted": "a gap: it should have been a nugget",
                   "rejected": "not a gap: covered by a nugget, or not needed"}


class Forbidden(Exception):
    """The user may not see or change this (another project's or topic's item, or a manager's page)."""


class NotFound(Exception):
    pass


def fingerprint(*values) -> str:
    """A short digest of the values a form showed for one item (sets in any order)."""
    norm = [sorted(v) if isinstance(v, (set, frozenset)) else v for v in values]
    return hashlib.sha1(json.dumps(norm, ensure_ascii=False).encode()).hexdigest()[:16]


def _text(value: str | None, what: str, field_name: str | None = None, required: bool = True) -> str:
    text = " ".join((value or "").split())
    if required and not text:
        raise Refused(f"{what} is empty", field_name)
    if len(text) > MAX_TEXT:
        raise Refused(f"{what} is longer than {MAX_TEXT} characters", field_name)
    return text


# ----------------------------------------------------------------------------------------------- forms

@dataclass
class Edit:
    """A change a form asks for to one editable item. ``field``: the form field (a refusal points there);
    ``version`` and ``shown``: the item's version and the fingerprint of the values the form showed;
    ``values``: what the form sends now."""

    field: str
    item: Hashable
    version: int
    shown: str
    values: tuple

    @property
    def changed(self) -> bool:
        return fingerprint(*self.values) != self.shown


@dataclass
class DocumentForm:
    """The one form of a stage 1 or stage 3 document page."""

    form_id: str
    done: bool = False
    relevance: Edit | None = None  # stage 1: values (grade or None,)
    labels: list[Edit] = field(default_factory=list)  # stage 3: item (report, sentence, k), values (label,)
    question_edits: list[Edit] = field(default_factory=list)  # stage 1: item nugget, values (text,)
    answer_edits: list[Edit] = field(default_factory=list)  # item answer, values (text,)
    answer_deletes: list[tuple[str, int, int]] = field(default_factory=list)  # (field, answer, version shown)
    seen: set[int] = field(default_factory=set)  # answers the form showed linked to the document
    links: set[int] = field(default_factory=set)  # answers ticked
    new_answers: list[tuple[str, int, str]] = field(default_factory=list)  # (field, nugget, text)
    new_nugget: tuple[str, str] | None = None  # stage 1: (question, answer)


@dataclass
class NuggetChange:
    """A stage 2 row: the nugget's text and importance, and ``action`` keep / delete / merge (``into``)."""

    field: str
    nugget: int
    version: int
    shown: str
    text: str
    importance: str | None
    action: str = "keep"
    into: int | None = None


@dataclass
class RevisionForm:
    """The one form of the stage 2 page."""

    form_id: str
    nuggets: list[NuggetChange] = field(default_factory=list)
    answer_edits: list[Edit] = field(default_factory=list)
    answer_deletes: list[tuple[str, int, int]] = field(default_factory=list)  # (field, answer, version shown)
    restores: list[tuple[str, int]] = field(default_factory=list)  # (field, nugget) deleted or merged
    freeze: bool = False


@dataclass
class AlignmentForm:
    """The one form of a stage 4 answer page: per sentence j ``(content, nugget ids, missing question,
    version, fingerprint shown)``."""

    form_id: str
    rows: dict[int, tuple[str | None, set[int], str, int, str]] = field(default_factory=dict)
    done: bool = False


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


def _manager(user: dict) -> None:
    if user["role"] != "manager":
        raise Forbidden("this page is the manager's")


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


def _locked(c: sqlite3.Connection, topic: sqlite3.Row, user: dict) -> bool:
    """A finished topic (all four stages complete) is read-only for annotators: its numbers may have been
    exported and published. The manager may still correct it; every change is in the audit trail, after the
    audit id an export's manifest records (docs/annotation.md, "Finished topics")."""
    return user["role"] != "manager" and progress(c, topic["qid"])["complete"]


def _check_open(c: sqlite3.Connection, topic: sqlite3.Row, user: dict) -> None:
    if _locked(c, topic, user):
        raise Refused(f"topic {topic['qid']} is finished (its four stages are complete, its annotations may be "
                      "exported): nothing of this form was saved; ask the project manager to make the change")


def progress(c: sqlite3.Connection, qid: str) -> dict:
    one = c.execute(
        "SELECT count(*) AS pool, count(s1_done_at) AS s1, count(s3_done_at) AS s3 FROM pool WHERE qid = ?",
        (qid,)).fetchone()
    cit = c.execute("SELECT count(*) AS n, count(c.label) AS done FROM citations c JOIN reports r ON r.id = "
                    "c.report_id WHERE r.qid = ?", (qid,)).fetchone()
    rep = c.execute("SELECT count(*) AS n, count(s4_done_at) AS done FROM reports WHERE qid = ?", (qid,)).fetchone()
    nug = c.execute("SELECT count(*) AS n, count(importance) AS rated FROM nuggets WHERE qid = ? AND status = "
                    "'active'", (qid,)).fetchone()
    flags = c.execute("SELECT count(*) AS n, count(s.missing_status) AS reviewed FROM sentences s JOIN reports r ON "
                      "r.id = s.report_id WHERE r.qid = ? AND s.missing_question IS NOT NULL", (qid,)).fetchone()
    frozen = c.execute("SELECT frozen_at FROM topics WHERE qid = ?", (qid,)).fetchone()["frozen_at"] is not None
    return {"pool": one["pool"], "s1": one["s1"], "s3": one["s3"], "citations": cit["n"], "labels": cit["done"],
            "reports": rep["n"], "s4": rep["done"], "nuggets": nug["n"], "rated": nug["rated"], "frozen": frozen,
            "missing": flags["n"], "missing_open": flags["n"] - flags["reviewed"],
            "complete": frozen and one["s3"] == one["pool"] and cit["done"] == cit["n"] and rep["done"] == rep["n"]}


def overview(store: Store, user: dict) -> list[dict]:
    """The topics the user may work on, with the progress of each stage."""
    with store.read() as c:
        return [{"position": t["position"], "qid": t["qid"], "query": t["query"], **progress(c, t["qid"])}
                for t in _visible(c, user)]


# ---------------------------------------------------------------------------------------- nuggets

def _answers(c: sqlite3.Connection, nugget_row_id: int, docno: str | None = None) -> list[dict]:
    out = []
    for a in c.execute("SELECT * FROM nugget_answers WHERE nugget_id = ? ORDER BY id", (nugget_row_id,)):
        docs = [r["docno"] for r in c.execute("SELECT docno FROM attestations WHERE answer_id = ? ORDER BY docno",
                                              (a["id"],))]
        out.append({"id": a["id"], "text": a["text"], "documents": docs, "linked": docno in docs,
                    "stage": a["stage"], "created_by": a["created_by"], "version": a["version"],
                    "fingerprint": fingerprint(a["text"])})
    return out


def _nuggets(c: sqlite3.Connection, qid: str, docno: str | None = None) -> list[dict]:
    """Active nuggets of a topic with their answers (and whether ``docno`` attests each answer)."""
    return [{"id": n["id"], "nugget_id": ids.nugget_id(qid, n["idx"]), "text": n["text"],
             "importance": n["importance"], "origin": n["origin"], "version": n["version"],
             "fingerprint": fingerprint(n["text"], n["importance"]), "text_fingerprint": fingerprint(n["text"]),
             "prefill_text": n["prefill_text"], "updated_by": n["updated_by"], "answers": _answers(c, n["id"], docno)}
            for n in c.execute("SELECT * FROM nuggets WHERE qid = ? AND status = 'active' ORDER BY idx", (qid,))]


def _nugget_row(c: sqlite3.Connection, qid: str, nugget_id: int, field_name: str | None = None) -> sqlite3.Row:
    row = c.execute("SELECT * FROM nuggets WHERE id = ? AND qid = ?", (nugget_id, qid)).fetchone()
    if row is None:
        raise NotFound(f"no nugget {nugget_id} in this topic")
    if row["status"] != "active":
        raise Refused(f"nugget {ids.nugget_id(qid, row['idx'])} was {row['status']} by {row['updated_by']} after "
                      "the page was loaded: what you typed for it is not saved", field_name)
    return row


def _name(qid: str, row: sqlite3.Row) -> str:
    return ids.nugget_id(qid, row["idx"])


def _update_nugget(c: sqlite3.Connection, row: sqlite3.Row, version: int, user: str, changes: dict, what: str) -> None:
    sets = ", ".join(f"{k} = ?" for k in changes)
    cur = c.execute(f"UPDATE nuggets SET {sets}, version = version + 1, updated_by = ?, updated_at = ? "
                    "WHERE id = ? AND version = ?", (*changes.values(), user, now(), row["id"], version))
    if cur.rowcount != 1:
        theirs = c.execute("SELECT * FROM nuggets WHERE id = ?", (row["id"],)).fetchone()
        raise Conflict(what, dict(changes), {"text": theirs["text"], "importance": theirs["importance"],
                                             "status": theirs["status"], "updated_by": theirs["updated_by"],
                                             "updated_at": theirs["updated_at"]})


def _edit_nugget(c: sqlite3.Connection, user: dict, qid: str, stage: int, edit: Edit, row: sqlite3.Row) -> bool:
    """Reword a nugget (stages 1 and 2; ``edit.values`` (text,), or (text, importance or None) in stage 2);
    True when it was written (its version went up by one)."""
    if not edit.changed:
        return False
    text = _text(edit.values[0], f"the question of {_name(qid, row)}", edit.field)
    changes: dict = {"text": text}
    if stage == 2 and edit.values[1] is not None:
        if edit.values[1] not in ids.IMPORTANCE_TO_GRADE:
            raise Refused(f"{_name(qid, row)}: choose vital or okay", edit.field)
        changes["importance"] = edit.values[1]
    if all(row[k] == v for k, v in changes.items()):
        return False  # already so
    what = f"nugget {_name(qid, row)}"
    _update_nugget(c, row, edit.version, user["name"], changes, what)
    audit(c, user["name"], f"s{stage}_edit_nugget", what,
          {"before": {"text": row["text"], "importance": row["importance"]}, "after": changes})
    return True


def _topic_answer(c: sqlite3.Connection, qid: str, answer_id: int, field_name: str) -> sqlite3.Row | None:
    """An answer of an active nugget of the topic; None when it was deleted meanwhile."""
    row = c.execute("SELECT a.*, n.idx, n.status FROM nugget_answers a JOIN nuggets n ON n.id = a.nugget_id WHERE "
                    "a.id = ? AND n.qid = ?", (answer_id, qid)).fetchone()
    if row is not None and row["status"] != "active":
        raise Refused(f"the nugget of answer {row['text']!r} was {row['status']} after the page was loaded",
                      field_name)
    return row


def _delete_answers(c: sqlite3.Connection, user: dict, qid: str, stage: int,
                    deletes: list[tuple[str, int, int]]) -> set[int]:
    """Delete answers ``(field, answer, version shown)``. An answer someone changed after the page was loaded
    is a conflict, as an edit is: deleting it would discard their correction unseen."""
    done = set()
    for field_name, answer_id, version in deletes:
        row = _topic_answer(c, qid, answer_id, field_name)
        if row is None:
            continue  # deleted by someone else already
        if row["version"] != version:
            raise Conflict(f"an answer of nugget {ids.nugget_id(qid, row['idx'])}", {"text": "(deleted)"},
                           {"text": row["text"], "updated_by": row["updated_by"], "updated_at": row["updated_at"]})
        docs = [r["docno"] for r in c.execute("SELECT docno FROM attestations WHERE answer_id = ?", (answer_id,))]
        c.execute("DELETE FROM attestations WHERE answer_id = ?", (answer_id,))
        c.execute("DELETE FROM nugget_answers WHERE id = ?", (answer_id,))
        audit(c, user["name"], f"s{stage}_delete_answer", ids.nugget_id(qid, row["idx"]),
              {"text": row["text"], "documents": docs})
        done.add(answer_id)
    return done


def _edit_answers(c: sqlite3.Connection, user: dict, qid: str, stage: int, edits: list[Edit], deleted: set[int]) -> None:
    for edit in edits:
        if edit.item in deleted or not edit.changed:
            continue
        row = _topic_answer(c, qid, edit.item, edit.field)
        if row is None:
            raise Refused("this answer was deleted by someone else after the page was loaded", edit.field)
        text = _text(edit.values[0], "the answer", edit.field, required=False)
        if not text:
            raise Refused("an answer cannot be empty: tick 'delete' to remove it", edit.field)
        if text == row["text"]:
            continue
        cur = c.execute("UPDATE nugget_answers SET text = ?, version = version + 1, updated_by = ?, updated_at = ? "
                        "WHERE id = ? AND version = ?", (text, user["name"], now(), edit.item, edit.version))
        if cur.rowcount != 1:
            raise Conflict(f"an answer of nugget {ids.nugget_id(qid, row['idx'])}", {"text": text},
                           {"text": row["text"], "updated_by": row["updated_by"], "updated_at": row["updated_at"]})
        audit(c, user["name"], f"s{stage}_edit_answer", ids.nugget_id(qid, row["idx"]),
              {"before": row["text"], "after": text})


def _add_answer(c: sqlite3.Connection, user: dict, qid: str, stage: int, docno: str, field_name: str,
                nugget_id: int, text: str) -> None:
    """A new answer to a nugget question, attested by the document. The same answer written again (a form
    sent twice, or two people typing it) is not a second answer: the document is linked to the first."""
    text = _text(text, "the new answer", field_name)
    row = _nugget_row(c, qid, nugget_id, field_name)
    same = next((a for a in c.execute("SELECT id, text FROM nugget_answers WHERE nugget_id = ?", (row["id"],))
                 if a["text"].casefold() == text.casefold()), None)
    if same is not None:
        c.execute("INSERT OR IGNORE INTO attestations(answer_id, docno, stage, created_by) VALUES (?, ?, ?, ?)",
                  (same["id"], docno, stage, user["name"]))
        audit(c, user["name"], f"s{stage}_links", f"{qid} {docno}", {"added": [same["id"]], "removed": [],
                                                                       "as": "answer typed again"})
        return
    _insert_answer(c, row["id"], text, docno, stage, user["name"])
    audit(c, user["name"], f"s{stage}_add_answer", f"{_name(qid, row)} {docno}", {"text": text})


def _insert_answer(c: sqlite3.Connection, nugget_id: int, text: str, docno: str, stage: int, user: str) -> None:
    cur = c.execute("INSERT INTO nugget_answers(nugget_id, home, text, stage, created_by, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)", (nugget_id, nugget_id, text, stage, user, now()))
    c.execute("INSERT INTO attestations(answer_id, docno, stage, created_by) VALUES (?, ?, ?, ?)",
              (cur.lastrowid, docno, stage, user))


def _add_nugget(c: sqlite3.Connection, user: dict, topic: sqlite3.Row, docno: str, question: str, answer: str) -> None:
    """Stage 1: a new nugget question with its short answer, attested by the document ([nugget-annotation §3.1])."""
    qid = topic["qid"]
    question = _text(question, "the new nugget's question", "question", required=False)
    answer = _text(answer, "the new nugget's answer", "qanswer", required=False)
    if not question and not answer:
        return
    if not question:
        raise Refused("the new nugget has an answer but no question: write the stand-alone question it answers",
                      "question")
    if not answer:
        raise Refused("the new nugget's answer is empty: write the short answer (a word or phrase) this document "
                      "gives", "qanswer")
    same = next((n for n in c.execute("SELECT idx, text FROM nuggets WHERE qid = ? AND status = 'active'", (qid,))
                 if n["text"].casefold() == question.casefold()), None)
    if same is not None:
        raise Refused(f"this question is nugget {ids.nugget_id(qid, same['idx'])} already: type the answer under it",
                      "question")
    idx = c.execute("SELECT next_index FROM topics WHERE qid = ?", (qid,)).fetchone()["next_index"]
    cur = c.execute("INSERT INTO nuggets(qid, idx, text, origin, created_by, updated_by, updated_at) "
                    "VALUES (?, ?, ?, 'annotator', ?, ?, ?)", (qid, idx, question, user["name"], user["name"], now()))
    c.execute("UPDATE topics SET next_index = next_index + 1 WHERE qid = ?", (qid,))
    _insert_answer(c, cur.lastrowid, answer, docno, 1, user["name"])
    audit(c, user["name"], "s1_add_nugget", ids.nugget_id(qid, idx), {"text": question, "answer": answer,
                                                                      "docno": docno})


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
                    "fingerprint": fingerprint(r["label"]), "updated_by": r["updated_by"],
                    "report": _report_sentences(c, r["report_id"])})
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
                "done_by": doc[f"s{stage}_done_by"], "done_at": doc[f"s{stage}_done_at"],
                "relevance_fingerprint": fingerprint(doc["relevance"]), "locked": _locked(c, topic, user)}
        if stage == 3:
            view["citing"] = _citing(c, topic["qid"], doc["docno"])
        return view


def save_document(store: Store, user: dict, position: int, stage: int, d: int, form: DocumentForm) -> None:
    """The document page's form (stages 1 and 3) in one transaction: question edits (stage 1), answers edited
    and deleted, links of the document to answers, new answers, a new nugget (stage 1), support labels
    (stage 3), the relevance grade (stage 1), and "done with this document". Refused or in conflict: nothing
    is written. Sent twice: :class:`~.store.Duplicate`, nothing written the second time."""
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, stage)
        _check_open(c, topic, user)
        qid = topic["qid"]
        doc = _pool_row(c, qid, d)
        claim_form(c, form.form_id, user["name"])
        if stage == 1:
            for edit in form.question_edits:
                _edit_nugget(c, user, qid, 1, edit, _nugget_row(c, qid, edit.item, edit.field))
        elif form.question_edits or form.new_nugget:
            raise Refused("the nugget questions are frozen: stage 3 adds answers, never questions")
        deleted = _delete_answers(c, user, qid, stage, form.answer_deletes)
        _edit_answers(c, user, qid, stage, form.answer_edits, deleted)
        _set_links(c, user, qid, stage, doc["docno"], form.seen - deleted, form.links - deleted)
        for field_name, nugget_id, text in form.new_answers:
            _add_answer(c, user, qid, stage, doc["docno"], field_name, nugget_id, text)
        if form.new_nugget:
            _add_nugget(c, user, topic, doc["docno"], *form.new_nugget)
        if stage == 3:
            _save_labels(c, user, store.meta["support_scale"], qid, doc["docno"], form.labels)
        if stage == 1 and form.relevance is not None:
            _save_relevance(c, user, qid, doc, form.relevance)
        if form.done:
            _mark_done(c, user, qid, stage, doc, form)
    store.write_nuggets_json()


def _set_links(c: sqlite3.Connection, user: dict, qid: str, stage: int, docno: str, seen: set[int],
               checked: set[int]) -> None:
    """Link the document to exactly the checked answers, as a three-way merge with what the form showed:
    a link is added if checked and not shown linked, removed if shown linked and unchecked; links others
    made meanwhile are kept (no lost write)."""
    known = {r["id"] for r in c.execute("SELECT a.id FROM nugget_answers a JOIN nuggets n ON n.id = a.nugget_id "
                                        "WHERE n.qid = ? AND n.status = 'active'", (qid,))}
    if not checked <= known:
        raise Refused("an answer ticked in the form is no longer an answer of this topic's nuggets (its nugget was "
                      "merged or deleted, or the answer deleted, after the page was loaded)")
    current = {r["answer_id"] for r in c.execute("SELECT answer_id FROM attestations WHERE docno = ?", (docno,))
               if r["answer_id"] in known}
    add = checked - current - seen
    remove = (seen - checked) & current
    for a in sorted(add):
        c.execute("INSERT OR IGNORE INTO attestations(answer_id, docno, stage, created_by) VALUES (?, ?, ?, ?)",
                  (a, docno, stage, user["name"]))
    for a in sorted(remove):
        c.execute("DELETE FROM attestations WHERE answer_id = ? AND docno = ?", (a, docno))
    if add or remove:
        audit(c, user["name"], f"s{stage}_links", f"{qid} {docno}", {"added": sorted(add), "removed": sorted(remove)})


def _save_labels(c: sqlite3.Connection, user: dict, scale_name: str, qid: str, docno: str, labels: list[Edit]) -> None:
    """Stage 3: the support labels of the sentences citing the document. A label the user did not change is
    not written, nor one already saved with the same value (two people accepting the same pre-selected LLM
    label do not conflict); a label changed by someone else since the page was loaded is a conflict."""
    scale = SCALES[scale_name]
    for edit in labels:
        (label,) = edit.values
        if label is None or not edit.changed:
            continue
        if label not in scale:
            raise Refused(f"{label!r:.40} is not a label of the scale ({', '.join(scale)})", edit.field)
        rid, j, k = edit.item
        row = c.execute("SELECT c.*, r.run_id FROM citations c JOIN reports r ON r.id = c.report_id WHERE "
                        "c.report_id = ? AND c.sentence = ? AND c.k = ? AND r.qid = ? AND c.docno = ?",
                        (rid, j, k, qid, docno)).fetchone()
        if row is None:
            raise Refused(f"answer {rid} sentence {j + 1} does not cite this document", edit.field)
        if row["label"] == label:
            continue
        if row["version"] != edit.version:
            raise Conflict(f"the support label of sentence {j + 1} of {row['run_id']}", {"label": label},
                           {"label": row["label"], "updated_by": row["updated_by"], "updated_at": row["updated_at"]})
        c.execute("UPDATE citations SET label = ?, version = version + 1, updated_by = ?, updated_at = ? WHERE "
                  "report_id = ? AND sentence = ? AND k = ?", (label, user["name"], now(), rid, j, k))
        audit(c, user["name"], "s3_label", f"{qid} {row['run_id']} s{j} c{k} {docno}",
              {"before": row["label"], "after": label, "llm": row["llm_label"]})


def _save_relevance(c: sqlite3.Connection, user: dict, qid: str, doc: sqlite3.Row, edit: Edit) -> None:
    """Stage 1: the document's relevance grade ([nugget-annotation §3.1]), 0-3 (``config.RELEVANCE_GRADES``)."""
    (grade,) = edit.values
    if grade is None or not edit.changed or grade == doc["relevance"]:
        return
    if grade not in RELEVANCE_GRADES:
        raise Refused(f"the relevance grade must be one of {sorted(RELEVANCE_GRADES)}", edit.field)
    if edit.shown != fingerprint(doc["relevance"]):
        raise Conflict(f"the relevance grade of {doc['docno']}", {"grade": grade},
                       {"grade": doc["relevance"], "updated_by": doc["relevance_by"], "updated_at": doc["relevance_at"]})
    c.execute("UPDATE pool SET relevance = ?, relevance_by = ?, relevance_at = ? WHERE qid = ? AND position = ?",
              (grade, user["name"], now(), qid, doc["position"]))
    audit(c, user["name"], "s1_relevance", f"{qid} {doc['docno']}", {"before": doc["relevance"], "after": grade})


def _mark_done(c: sqlite3.Connection, user: dict, qid: str, stage: int, doc: sqlite3.Row, form: DocumentForm) -> None:
    """The user has finished this document for the stage ([nugget-annotation §3]: it is not shown again in the stage)."""
    if stage == 3:
        open_ = c.execute("SELECT report_id, sentence, k FROM citations c WHERE docno = ? AND label IS NULL AND "
                          "report_id IN (SELECT id FROM reports WHERE qid = ?) ORDER BY report_id, sentence, k",
                          (doc["docno"], qid)).fetchall()
        if open_:
            first = open_[0]
            raise Refused(f"{len(open_)} citing sentence(s) have no support label yet: choose one for each",
                          f"label-{first['report_id']}-{first['sentence']}-{first['k']}")
    else:
        grade = c.execute("SELECT relevance FROM pool WHERE qid = ? AND position = ?", (qid, doc["position"])).fetchone()
        if grade["relevance"] is None:
            raise Refused("the document has no relevance grade yet: choose one ([nugget-annotation §3.1])", "relevance")
    if doc[f"s{stage}_done_at"] is None:
        c.execute(f"UPDATE pool SET s{stage}_done_by = ?, s{stage}_done_at = ? WHERE qid = ? AND position = ?",
                  (user["name"], now(), qid, doc["position"]))
        audit(c, user["name"], f"s{stage}_done", f"{qid} {doc['docno']}", {})


# ------------------------------------------------------------------------------------- stage 2

def revision_view(store: Store, user: dict, position: int) -> dict:
    with store.read() as c:
        topic = _topic(c, user, position)
        if user["role"] != "manager":
            raise Forbidden("stage 2 (nugget revision) is the manager's")
        qid = topic["qid"]
        removed = []
        for n in c.execute("SELECT * FROM nuggets WHERE qid = ? AND status != 'active' ORDER BY idx", (qid,)):
            into = c.execute("SELECT idx FROM nuggets WHERE id = ?", (n["merged_into"],)).fetchone() \
                if n["merged_into"] else None
            removed.append({"id": n["id"], "nugget_id": _name(qid, n), "text": n["text"], "status": n["status"],
                            "into": ids.nugget_id(qid, into["idx"]) if into else None, "updated_by": n["updated_by"],
                            "updated_at": n["updated_at"]})
        return {"topic": dict(topic), "nuggets": _nuggets(c, qid), "removed": removed,
                "progress": progress(c, qid), "aligned": _aligned(c, qid)}


def _aligned(c: sqlite3.Connection, qid: str) -> int:
    """Sentences of the topic's answers with a stage 4 judgment (alignment or a flagged missing question)."""
    return c.execute("SELECT count(*) FROM sentences s JOIN reports r ON r.id = s.report_id WHERE r.qid = ? AND "
                     "(s.content IS NOT NULL OR s.missing_question IS NOT NULL)", (qid,)).fetchone()[0]


def save_revision(store: Store, user: dict, position: int, form: RevisionForm, dry_run: bool = False) -> list[str]:
    """Stage 2's form in one transaction: rewordings and importance, answers edited or deleted, nuggets
    deleted or merged (their answers move to the target), deleted or merged nuggets restored (their answers
    come back), then the freeze. Returns what cannot simply be typed over again (deletions, merges, the
    freeze; a restore can be undone by deleting again), for the confirmation page; ``dry_run`` checks
    everything and writes nothing."""
    with store.write(dry_run) as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 2)
        qid = topic["qid"]
        claim_form(c, form.form_id, user["name"])
        weighty: list[str] = []
        for nugget_field, nugget_id in form.restores:  # undoing is not weighty: no confirmation
            _restore(c, user, qid, nugget_field, nugget_id)
        leaving = {ch.nugget for ch in form.nuggets if ch.action in ("delete", "merge")}
        version = {}  # the version each nugget has when the form's own rewording is written
        for ch in form.nuggets:
            row = _nugget_row(c, qid, ch.nugget, ch.field)
            wrote = _edit_nugget(c, user, qid, 2, Edit(ch.field, ch.nugget, ch.version, ch.shown,
                                                       (ch.text, ch.importance)), row)
            version[ch.nugget] = ch.version + wrote
        deleted = _delete_answers(c, user, qid, 2, form.answer_deletes)
        _edit_answers(c, user, qid, 2, form.answer_edits, deleted)
        for ch in form.nuggets:
            if ch.action == "keep":
                continue
            row = c.execute("SELECT * FROM nuggets WHERE id = ?", (ch.nugget,)).fetchone()
            if ch.action == "delete":
                weighty.append(_delete_nugget(c, user, qid, row, version[ch.nugget], ch.field))
            elif ch.action == "merge":
                if ch.into is None:
                    raise Refused(f"{_name(qid, row)}: choose the nugget to merge it into", ch.field)
                if ch.into in leaving:
                    raise Refused(f"{_name(qid, row)} cannot be merged into a nugget this form deletes or merges",
                                  ch.field)
                weighty.append(_merge_nugget(c, user, qid, row, version[ch.nugget], ch.into, ch.field))
            else:
                raise Refused(f"unknown action {ch.action!r:.20}", ch.field)
        if form.freeze:
            weighty.append(_freeze(c, user, topic))
    if not dry_run:
        store.write_nuggets_json()
    return weighty


def _delete_nugget(c: sqlite3.Connection, user: dict, qid: str, row: sqlite3.Row, version: int, field_name: str) -> str:
    what = f"nugget {_name(qid, row)}"
    if row["status"] != "active":
        raise Refused(f"{what} was {row['status']} meanwhile", field_name)
    _update_nugget(c, row, version, user["name"], {"status": "deleted"}, what)
    n = c.execute("SELECT count(*) FROM nugget_answers WHERE nugget_id = ?", (row["id"],)).fetchone()[0]
    audit(c, user["name"], "s2_delete_nugget", what, {"text": row["text"]})
    return f"Delete {_name(qid, row)} “{row['text']}” and its {n} answer(s) (restorable until the freeze)"


def _merge_nugget(c: sqlite3.Connection, user: dict, qid: str, row: sqlite3.Row, version: int, into: int,
                  field_name: str) -> str:
    what = f"nugget {_name(qid, row)}"
    target = _nugget_row(c, qid, into, field_name)
    if target["id"] == row["id"]:
        raise Refused("a nugget cannot be merged into itself", field_name)
    _update_nugget(c, row, version, user["name"], {"status": "merged", "merged_into": target["id"]}, what)
    moved = c.execute("UPDATE nugget_answers SET nugget_id = ? WHERE nugget_id = ?", (target["id"], row["id"])).rowcount
    c.execute("UPDATE nuggets SET version = version + 1, updated_by = ?, updated_at = ? WHERE id = ?",
              (user["name"], now(), target["id"]))
    audit(c, user["name"], "s2_merge_nugget", what, {"into": _name(qid, target), "text": row["text"]})
    return (f"Merge {_name(qid, row)} “{row['text']}” into {_name(qid, target)} “{target['text']}”: its {moved} "
            "answer(s) move there (restorable until the freeze)")


def _restore(c: sqlite3.Connection, user: dict, qid: str, field_name: str, nugget_id: int) -> None:
    """Undo a deletion or a merge: the nugget is active again, with the answers that were written under it."""
    row = c.execute("SELECT * FROM nuggets WHERE id = ? AND qid = ?", (nugget_id, qid)).fetchone()
    if row is None:
        raise NotFound(f"no nugget {nugget_id} in this topic")
    if row["status"] == "active":
        return  # restored by someone else already
    c.execute("UPDATE nuggets SET status = 'active', merged_into = NULL, version = version + 1, updated_by = ?, "
              "updated_at = ? WHERE id = ?", (user["name"], now(), row["id"]))
    back = c.execute("UPDATE nugget_answers SET nugget_id = ? WHERE home = ? AND nugget_id != ?",
                     (row["id"], row["id"], row["id"])).rowcount
    audit(c, user["name"], "s2_restore_nugget", _name(qid, row), {"was": row["status"], "answers_back": back})


def _freeze(c: sqlite3.Connection, user: dict, topic: sqlite3.Row) -> str:
    """Stage 2 ends: the nugget questions of the topic are fixed ([nugget-annotation §3.2])."""
    qid = topic["qid"]
    p = progress(c, qid)
    if p["s1"] < p["pool"]:
        raise Refused(f"stage 1 has {p['pool'] - p['s1']} pooled document(s) to go: the questions cannot be frozen yet",
                      "freeze")
    if p["nuggets"] == 0:
        raise Refused("the topic has no nugget: nothing to freeze", "freeze")
    if p["rated"] < p["nuggets"]:
        raise Refused(f"{p['nuggets'] - p['rated']} nugget(s) have no importance: set vital or okay", "freeze")
    c.execute("UPDATE topics SET frozen_by = ?, frozen_at = ? WHERE qid = ?", (user["name"], now(), qid))
    audit(c, user["name"], "s2_freeze", qid, {"nuggets": p["nuggets"]})
    return (f"Freeze the {p['nuggets']} nugget questions of {qid}: stages 3 and 4 start (the manager can unfreeze "
            "them while no answer sentence is aligned)")


def unfreeze(store: Store, user: dict, position: int, form_id: str, dry_run: bool = False) -> list[str]:
    """Undo a freeze, back to stage 2, while no sentence of the topic is aligned in stage 4 (its alignments
    name the frozen nuggets). Stage 3 labels and answers are kept."""
    with store.write(dry_run) as c:
        topic = _topic(c, user, position)
        _manager(user)
        qid = topic["qid"]
        claim_form(c, form_id, user["name"])
        if topic["frozen_at"] is None:
            raise Refused("the nuggets of this topic are not frozen")
        aligned = _aligned(c, qid)
        if aligned:
            raise Refused(f"{aligned} answer sentence(s) of {qid} are aligned in stage 4 (they name the frozen "
                          "nuggets): the questions cannot be unfrozen", "unfreeze")
        c.execute("UPDATE topics SET frozen_by = NULL, frozen_at = NULL WHERE qid = ?", (qid,))
        audit(c, user["name"], "s2_unfreeze", qid, {"was_frozen_by": topic["frozen_by"], "at": topic["frozen_at"]})
    if not dry_run:
        store.write_nuggets_json()
    return [f"Unfreeze the nugget questions of {qid}: back to stage 2 (revision); stage 3 work is kept, stage 4 "
            "waits for the next freeze"]


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
                      "fingerprint": fingerprint(s["content"], aligned.get(s["idx"], set()), s["missing_question"] or ""),
                      "missing_question": s["missing_question"] or "", "nuggets": aligned.get(s["idx"], set()),
                      "citations": cites.get(s["idx"], []), "updated_by": s["updated_by"]}
                     for s in c.execute("SELECT * FROM sentences WHERE report_id = ? ORDER BY idx", (report_id,))]
        return {"topic": dict(topic), "report": dict(report), "sentences": sentences,
                "nuggets": _nuggets(c, topic["qid"]), "progress": progress(c, topic["qid"]),
                "locked": _locked(c, topic, user)}


def save_alignment(store: Store, user: dict, position: int, report_id: int, form: AlignmentForm) -> None:
    """Stage 4's form in one transaction: per sentence, content and nuggets and a missing question; a row the
    user did not change is not written. With ``done`` the answer is finished, which needs every sentence
    aligned."""
    with store.write() as c:
        topic = _topic(c, user, position)
        _check_stage(topic, user, 4)
        _check_open(c, topic, user)
        report = _report(c, topic["qid"], report_id)
        claim_form(c, form.form_id, user["name"])
        active = {r["id"] for r in c.execute("SELECT id FROM nuggets WHERE qid = ? AND status = 'active'",
                                             (topic["qid"],))}
        for j, (content, nuggets, missing, version, shown) in sorted(form.rows.items()):
            _align(c, user, topic["qid"], report, active, j, content, nuggets, missing, version, shown)
        if form.done:
            open_ = [r["idx"] for r in c.execute("SELECT idx FROM sentences WHERE report_id = ? AND content IS NULL "
                                                 "ORDER BY idx", (report_id,))]
            if open_:
                raise Refused(f"{len(open_)} sentence(s) are not aligned yet (sentence "
                              f"{', '.join(str(j + 1) for j in open_[:5])}): choose for each", f"content-{open_[0]}")
            if report["s4_done_at"] is None:
                c.execute("UPDATE reports SET s4_done_by = ?, s4_done_at = ? WHERE id = ?", (user["name"], now(), report_id))
                audit(c, user["name"], "s4_done", f"{topic['qid']} {report['run_id']}", {})


def _align(c: sqlite3.Connection, user: dict, qid: str, report: sqlite3.Row, active: set[int], j: int,
           content: str | None, nuggets: set[int], missing: str, version: int, shown: str) -> None:
    report_id = report["id"]
    row = c.execute("SELECT * FROM sentences WHERE report_id = ? AND idx = ?", (report_id, j)).fetchone()
    if row is None:
        raise Refused(f"the answer has no sentence {j + 1}")
    missing = _text(missing, f"the missing question of sentence {j + 1}", f"missing-{j}", required=False)
    if fingerprint(content, nuggets, missing) == shown:
        return  # not changed by this user
    if content is None and not nuggets and not missing:
        return  # left open
    if nuggets and content in (None, ids.SOME_NUGGETS):
        content = ids.SOME_NUGGETS
    if content not in CONTENTS:
        raise Refused(f"sentence {j + 1}: choose the nuggets it conveys, 'irrelevant' or 'no information'",
                      f"content-{j}")
    if content == ids.SOME_NUGGETS and not nuggets:
        raise Refused(f"sentence {j + 1}: tick the nugget(s) it conveys", f"nugget-{j}")
    if content != ids.SOME_NUGGETS and nuggets:
        raise Refused(f"sentence {j + 1}: marked {content.replace('_', ' ')} but nuggets are ticked", f"nugget-{j}")
    if not nuggets <= active:
        raise Refused(f"sentence {j + 1}: a ticked nugget is not a nugget of this topic", f"nugget-{j}")
    before = {r["nugget_id"] for r in c.execute("SELECT nugget_id FROM alignment_nuggets WHERE report_id = ? "
                                                "AND sentence = ?", (report_id, j))}
    if (row["content"], before, row["missing_question"] or "") == (content, nuggets, missing):
        return  # already so
    cur = c.execute("UPDATE sentences SET content = ?, missing_question = ?, version = version + 1, updated_by = ?, "
                    "updated_at = ?, missing_status = CASE WHEN ? = coalesce(missing_question, '') THEN missing_status "
                    "END WHERE report_id = ? AND idx = ? AND version = ?",
                    (content, missing or None, user["name"], now(), missing, report_id, j, version))
    if cur.rowcount != 1:
        raise Conflict(f"the alignment of sentence {j + 1} of {report['run_id']}",
                       {"content": content, "nuggets": _names(c, nuggets), "missing": missing},
                       {"content": row["content"], "nuggets": _names(c, before), "missing": row["missing_question"],
                        "updated_by": row["updated_by"], "updated_at": row["updated_at"]})
    c.execute("DELETE FROM alignment_nuggets WHERE report_id = ? AND sentence = ?", (report_id, j))
    c.executemany("INSERT INTO alignment_nuggets(report_id, sentence, nugget_id) VALUES (?, ?, ?)",
                  [(report_id, j, n) for n in sorted(nuggets)])
    audit(c, user["name"], "s4_align", f"{qid} {report['run_id']} s{j}",
          {"content": content, "nuggets": _names(c, nuggets), "missing": missing})


def _names(c: sqlite3.Connection, nugget_ids: set[int]) -> list[str]:
    if not nugget_ids:
        return []
    rows = c.execute(f"SELECT qid, idx FROM nuggets WHERE id IN ({','.join('?' * len(nugget_ids))}) ORDER BY idx",
                     sorted(nugget_ids)).fetchall()
    return [ids.nugget_id(r["qid"], r["idx"]) for r in rows]


# ----------------------------------------------------------------------- the manager: missing questions

def missing_view(store: Store, user: dict) -> list[dict]:
    """The nugget questions flagged as missing in stage 4, for the manager to review ([nugget-annotation §4]: "to
    investigate annotation results post hoc and assess whether the gold nugget set is complete")."""
    _manager(user)
    with store.read() as c:
        rows = c.execute("SELECT s.*, r.qid, r.run_id, t.position FROM sentences s JOIN reports r ON r.id = "
                         "s.report_id JOIN topics t ON t.qid = r.qid WHERE s.missing_question IS NOT NULL ORDER BY "
                         "t.position, r.run_id, s.idx").fetchall()
        out = []
        for r in rows:
            out.append({"key": f"{r['report_id']}-{r['idx']}", "report_id": r["report_id"], "sentence": r["idx"],
                        "qid": r["qid"], "position": r["position"], "run_id": r["run_id"], "text": r["text"],
                        "question": r["missing_question"], "by": r["updated_by"], "at": r["updated_at"],
                        "status": r["missing_status"] or "open", "note": r["missing_note"] or "",
                        "reviewed_by": r["missing_by"], "reviewed_at": r["missing_at"],
                        "fingerprint": fingerprint(r["missing_question"], r["missing_status"] or "open",
                                                   r["missing_note"] or ""),
                        "nuggets": [n["nugget_id"] + " " + n["text"] for n in _nuggets(c, r["qid"])]})
        return out


def save_missing_reviews(store: Store, user: dict, form_id: str, reviews: list[Edit]) -> None:
    """The manager's review of flagged questions: ``item`` (report, sentence), ``values`` (question as shown,
    status, note). A review of a question its annotator changed since the page was loaded is a conflict."""
    _manager(user)
    with store.write() as c:
        claim_form(c, form_id, user["name"])
        for edit in reviews:
            question, status, note = edit.values
            if not edit.changed:
                continue
            if status not in REVIEW_STATUSES:
                raise Refused(f"choose one of {', '.join(REVIEW_STATUSES)}", edit.field)
            note = _text(note, "the note", f"note-{edit.field}", required=False)
            rid, j = edit.item
            row = c.execute("SELECT s.*, r.qid, r.run_id FROM sentences s JOIN reports r ON r.id = s.report_id "
                            "WHERE s.report_id = ? AND s.idx = ?", (rid, j)).fetchone()
            if row is None:
                raise NotFound(f"no sentence {j} of answer {rid}")
            saved = fingerprint(row["missing_question"], row["missing_status"] or "open", row["missing_note"] or "")
            if saved != edit.shown:
                if (row["missing_question"], row["missing_status"] or "open", row["missing_note"] or "") == \
                        (question, status, note):
                    continue
                raise Conflict(f"the missing question of sentence {j + 1} of {row['run_id']}",
                               {"question": question, "status": status, "note": note},
                               {"question": row["missing_question"], "status": row["missing_status"] or "open",
                                "note": row["missing_note"], "updated_by": row["missing_by"] or row["updated_by"],
                                "updated_at": row["missing_at"] or row["updated_at"]})
            c.execute("UPDATE sentences SET missing_status = ?, missing_note = ?, missing_by = ?, missing_at = ? WHERE "
                      "report_id = ? AND idx = ?", (None if status == "open" else status, note or None, user["name"],
                                                    now(), rid, j))
            audit(c, user["name"], "review_missing", f"{row['qid']} {row['run_id']} s{j}",
                  {"question": question, "status": status, "note": note})


# ---------------------------------------------------------------------------------- the manager: users

def save_users(store: Store, user: dict, form_id: str, changes: list[Edit]) -> None:
    """The Users page: per user ``item`` name, ``values`` (assigned topics (a frozenset), disabled)."""
    _manager(user)
    from pyterrier_nuggets.annotate import store as store_module

    with store.write() as c:
        claim_form(c, form_id, user["name"])
        current = {u["name"]: u for u in store_module.users(c)}
        for edit in changes:
            topics, disabled = edit.values
            if not edit.changed:
                continue
            u = current.get(edit.item)
            if u is None:
                raise NotFound(f"no user {edit.item!r}")
            if fingerprint(frozenset(u["topics"]), u["disabled"]) != edit.shown:
                last = c.execute("SELECT user, at FROM audit WHERE target = ? AND action IN ('assign_topics', "
                                 "'disable_user', 'enable_user') ORDER BY id DESC LIMIT 1", (edit.item,)).fetchone()
                raise Conflict(f"user {edit.item}", {"topics": sorted(topics), "disabled": disabled},
                               {"topics": u["topics"], "disabled": u["disabled"],
                                "updated_by": last["user"] if last else None, "updated_at": last["at"] if last else None})
            if u["role"] == "annotator" and set(topics) != set(u["topics"]):
                ordered = [r["qid"] for r in c.execute("SELECT qid FROM topics ORDER BY position") if r["qid"] in topics]
                unknown = set(topics) - set(ordered)
                if unknown:
                    raise Refused(f"unknown topic(s) {sorted(unknown)}", edit.field)
                store_module.assign_topics(c, store.name, edit.item, ordered, user["name"])
            if disabled != u["disabled"]:
                if edit.item == user["name"] and disabled:
                    raise Refused("you cannot disable yourself", edit.field)
                try:
                    store_module.set_disabled(c, store.name, edit.item, disabled, user["name"])
                except Refused as e:
                    raise Refused(str(e), edit.field) from None
