"""The annotation tool without a browser: configuration checks, the protocol's rules (one form = one
transaction, resubmission, optimistic concurrency), the export round trip through the plain ir_measures
command line (hand-worked values in tests/annotate_project.py) and the command line. The server over HTTP is
tested in tests/test_annotate_security.py, the pages in a real browser in tests/test_annotate_browser.py."""
import json
import os
import sqlite3
import subprocess
import sys

import pytest

from ir_measures_ext.errors import InvalidInput
from tests.annotate_project import (
    EXPECTED,
    INFERRED,
    RELEVANCE,
    annotate_by_api,
    form_id,
    make_project,
    needs_annotate,
    write_project,
)

pytestmark = needs_annotate
CLI = [sys.executable, "-c", "import sys; from pyterrier_nuggets.cli import main; sys.exit(main())"]


def _cli(*args, stdin=None):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.run(CLI + [str(a) for a in args], input=stdin, capture_output=True, text=True, env=env)


def _modules():
    from pyterrier_nuggets.annotate import protocol, store
    return protocol, store


def _users(store):
    return {u["name"]: u for u in store.users()}


def _nuggets(store, user=None):
    """The active nuggets of topic t1 by text, as the pages show them."""
    protocol, _ = _modules()
    with store.read() as c:
        return {n["text"]: n for n in protocol._nuggets(c, "t1")}


def _doc(**kw):
    protocol, _ = _modules()
    return protocol.DocumentForm(form_id(), **kw)


def _grade(d, grade, shown=None):
    protocol, _ = _modules()
    return protocol.Edit("relevance", d, 0, protocol.fingerprint(shown), (grade,))


def _finish_stage1(store, user, grades=(1, 1, 1, 1)):
    protocol, _ = _modules()
    for d, grade in enumerate(grades):
        protocol.save_document(store, user, 0, 1, d, _doc(done=True, relevance=_grade(d, grade)))


# ------------------------------------------------------------------------------------ configuration

def test_config_loads_and_pools(tmp_path):
    from pyterrier_nuggets.annotate import load_config
    inp = load_config(str(write_project(tmp_path)))
    assert inp.topics == {"t1": "why is the sky blue"}
    assert inp.pool["t1"] == ["d1", "d2", "d3", "d4"]  # cited first, then the pool file (d5 has relevance 0)
    assert set(inp.documents) == {"d1", "d2", "d3", "d4"}
    assert inp.support[("runA", "t1", 1, 0)] == "none" and len(inp.support) == 3  # uncited sentences left out
    assert [n.text for n in inp.nuggets] == ["Blue light is scattered more than red light", "Sunsets are red"]


@pytest.mark.parametrize("change,message", [
    ({"name": "a b"}, "'name'"),
    ({"documents": None}, "'documents'"),
    ({"answers": ["nope.jsonl"]}, "does not exist"),
    ({"support_scale": "stars"}, "support_scale"),
    ({"colour": "blue"}, "unknown key"),
    ({"support_scale": "biogen"}, "this is a support file"),  # a BioGen project takes BioGen relations
    ({"support": {"runZ": "llm.runA.support.jsonl"}}, "no answer file has run"),
    ({"support": {"runA": "llm.runB.support.jsonl"}}, "judges 'd3'"),
    ({"skip_nugget_creation": True, "nuggets": "empty.jsonl"}, "stages 1-2 can only be skipped"),
])
def test_config_errors_name_the_key(tmp_path, change, message):
    from pyterrier_nuggets.annotate import load_config
    path = write_project(tmp_path)
    (tmp_path / "empty.jsonl").write_text("")
    cfg = json.loads(path.read_text())
    cfg.update(change)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    path.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=message):
        load_config(str(path))


def test_missing_document_text_is_an_error(tmp_path):
    from pyterrier_nuggets.annotate import load_config
    path = write_project(tmp_path)
    (tmp_path / "docs.jsonl").write_text(json.dumps({"docno": "d1", "text": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"segment\(s\) are not in"):
        load_config(str(path))


def test_init_refuses_a_used_directory(tmp_path):
    from pyterrier_nuggets.annotate import init_project
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        init_project(str(write_project(tmp_path / "in")), str(tmp_path / "proj"))
    assert (tmp_path / "proj" / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("run_id,problem", [("../../../PWNED", "path separator"), ("run A", "whitespace"),
                                            ("..", "path separator"), ("文" * 100, "300 bytes in UTF-8; at most 229"),
                                            ("\U0001F600" * 128, "512 bytes in UTF-8; at most 229")])
def test_init_refuses_an_unsafe_run_tag_in_one_line(tmp_path, run_id, problem):
    """A participant's run tag is file content: init refuses, in one line naming file, line and field, a tag
    that is not a TREC run tag or not a plain file name (the rule of formats.run_tag_problem), before any work."""
    config = write_project(tmp_path / "in")
    answers = (tmp_path / "in" / "answers.jsonl").read_text().splitlines()
    answers[1] = answers[1].replace('"runB"', json.dumps(run_id))
    (tmp_path / "in" / "answers.jsonl").write_text("\n".join(answers) + "\n")
    r = _cli("annotate", "init", config, tmp_path / "p")
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "answers.jsonl" in r.stderr and ":2" in r.stderr and "run_id" in r.stderr and problem in r.stderr
    assert not (tmp_path / "p").exists()


def test_the_longest_run_tag_init_accepts_is_exported(tmp_path):
    """The run tag rule counts bytes, not characters: a tag of 229 bytes (76 CJK characters and one letter) passes
    init, and every file the export names after it can be written (the longest, RUN.support.jsonl here, within a
    file system's 255 bytes); 230 bytes are refused."""
    from pyterrier_nuggets.annotate import export_project
    from pyterrier_nuggets.formats import files as formats
    longest = "文" * 76 + "a"
    assert len(longest.encode()) == formats.MAX_RUN_TAG_BYTES == 229
    assert formats.run_tag_problem(longest) is None and "230 bytes" in formats.run_tag_problem(longest + "b")
    for suffix in formats.RUN_FILE_SUFFIXES:  # every name the package makes of it fits
        assert len((longest + suffix).encode()) <= formats.MAX_FILE_NAME_BYTES
    store = make_project(tmp_path)
    annotate_by_api(store)
    with store.write() as c:
        c.execute("UPDATE reports SET run_id = ? WHERE run_id = 'runB'", (longest,))
    written = export_project(store.directory, str(tmp_path / "out"))
    assert str(tmp_path / "out" / "runs" / f"{longest}.support.jsonl") in written
    assert (tmp_path / "out" / "runs" / f"{longest}.eval.run").read_text().split("\n")[0].endswith(" " + longest)


def test_export_never_writes_outside_its_folder(tmp_path):
    """A run tag that reached a database otherwise (not through init) is refused before anything is written."""
    from pyterrier_nuggets.annotate import export_project
    from pyterrier_nuggets.annotate.export import _run_file
    store = make_project(tmp_path)
    annotate_by_api(store)
    with store.write() as c:
        c.execute("UPDATE reports SET run_id = '../../PWNED' WHERE run_id = 'runB'")
    with pytest.raises(ValueError, match="path separator"):
        export_project(store.directory, str(tmp_path / "out" / "deep"))
    assert not (tmp_path / "out").exists() and not list(tmp_path.rglob("PWNED*"))
    with pytest.raises(ValueError, match="path separator"):
        _run_file(str(tmp_path), "a/../../b", ".eval.run")
    assert _run_file(str(tmp_path), "runA", ".eval.run") == str(tmp_path / "runs" / "runA.eval.run")


# ------------------------------------------------------------------------------------ the protocol

def test_stage_rules(tmp_path):
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    alice, boss = _users(store)["alice"], _users(store)["boss"]
    with pytest.raises(store_mod.Refused, match="stage 3 starts when"):
        protocol.next_document(store, alice, 0, 3)
    with pytest.raises(protocol.Forbidden):
        protocol.revision_view(store, alice, 0)
    with pytest.raises(store_mod.Refused, match="pooled document") as e:
        protocol.save_revision(store, boss, 0, protocol.RevisionForm(form_id(), freeze=True))
    assert e.value.field == "freeze"
    with pytest.raises(store_mod.Refused, match="no relevance grade") as e:  # [nugget-annotation §3.1]: a grade per document
        protocol.save_document(store, alice, 0, 1, 0, _doc(done=True))
    assert e.value.field == "relevance"
    _finish_stage1(store, alice)
    assert protocol.next_document(store, alice, 0, 1) is None  # a document is visited once in stage 1
    with store.write() as c:  # a nugget without importance (as NuggetCreator output would give)
        c.execute("UPDATE nuggets SET importance = NULL WHERE idx = 1")
    with pytest.raises(store_mod.Refused, match="no importance"):
        protocol.save_revision(store, boss, 0, protocol.RevisionForm(form_id(), freeze=True))
    n = _nuggets(store, boss)["Sunsets are red"]
    protocol.save_revision(store, boss, 0, protocol.RevisionForm(form_id(), freeze=True, nuggets=[
        protocol.NuggetChange("n", n["id"], n["version"], n["fingerprint"], n["text"], "okay")]))
    with pytest.raises(store_mod.Refused, match="frozen"):
        protocol.save_document(store, alice, 0, 1, 0, _doc(new_nugget=("late question", "x")))
    with pytest.raises(store_mod.Refused, match="never questions"):  # stage 3 adds answers, never questions
        protocol.save_document(store, alice, 0, 3, 0, _doc(new_nugget=("late question", "x")))
    with pytest.raises(store_mod.Refused, match="no support label") as e:
        protocol.save_document(store, alice, 0, 3, 0, _doc(done=True))
    assert e.value.field.startswith("label-")
    with pytest.raises(store_mod.Refused, match="not aligned") as e:
        protocol.save_alignment(store, alice, 0, 1, protocol.AlignmentForm(form_id(), done=True))
    assert e.value.field == "content-0"
    with pytest.raises(store_mod.Refused, match="tick the nugget") as e:
        protocol.save_alignment(store, alice, 0, 1, protocol.AlignmentForm(form_id(), {0: ("nuggets", set(), "", 0, "")}))
    assert e.value.field == "nugget-0"


def test_a_document_form_is_all_or_nothing(tmp_path):
    """A form refused halfway writes nothing: not its question edit, answers, links or grade (it used to keep the
    answers saved before the refused part and drop the rest)."""
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    alice, boss = _users(store)["alice"], _users(store)["boss"]
    n0, n1 = _nuggets(store, alice).values()
    nuggets_json = (tmp_path / "sky" / "nuggets.json").read_text()
    audit = len(store.audit_rows())

    def form(more_answers=(), **kw):  # the page as loaded now, with its changes
        n = _nuggets(store)["Blue light is scattered more than red light"]
        return _doc(relevance=_grade(0, 2), question_edits=[protocol.Edit(
            f"qtext-{n['id']}", n["id"], n["version"], n["text_fingerprint"], ("Why is blue scattered more?",))],
            new_answers=[(f"answer-{n['id']}", n["id"], "five times more"), *more_answers], **kw)

    with pytest.raises(store_mod.Refused, match="answer is empty") as e:  # an empty answer, last in the form
        protocol.save_document(store, alice, 0, 1, 0, form(new_nugget=("Why are sunsets red?", " ")))
    assert e.value.field == "qanswer"
    # a nugget merged meanwhile: the answer typed under it, and everything else of the form, is refused
    protocol.save_document(store, alice, 0, 1, 0, _doc())
    protocol.save_revision(store, boss, 0, protocol.RevisionForm(form_id(), nuggets=[protocol.NuggetChange(
        "n", n1["id"], n1["version"], n1["fingerprint"], n1["text"], n1["importance"], "merge", n0["id"])]))
    nuggets_json = (tmp_path / "sky" / "nuggets.json").read_text()
    audit = len(store.audit_rows())
    with pytest.raises(store_mod.Refused, match="was merged by boss") as e:
        protocol.save_document(store, alice, 0, 1, 0, form([(f"answer-{n1['id']}", n1["id"], "red")]))
    assert e.value.field == f"answer-{n1['id']}"
    view = protocol.document_view(store, alice, 0, 1, 0)
    assert [n["text"] for n in view["nuggets"]] == ["Blue light is scattered more than red light"]
    assert view["nuggets"][0]["answers"] == [] and view["doc"]["relevance"] is None
    assert len(store.audit_rows()) == audit and (tmp_path / "sky" / "nuggets.json").read_text() == nuggets_json
    # the same form without the refused part is saved whole
    protocol.save_document(store, alice, 0, 1, 0, form())
    view = protocol.document_view(store, alice, 0, 1, 0)
    assert view["nuggets"][0]["text"] == "Why is blue scattered more?" and view["doc"]["relevance"] == 2
    assert [a["text"] for a in view["nuggets"][0]["answers"]] == ["five times more"]


def test_a_form_sent_twice_is_saved_once(tmp_path):
    """Browser Back and send again, or a double click: the form's id is recorded with it, the second is a
    Duplicate; and an answer typed again for the same nugget links the document to the first one."""
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    alice = _users(store)["alice"]
    n0 = next(iter(_nuggets(store, alice).values()))
    form = _doc(new_answers=[("a", n0["id"], "five times more")], new_nugget=("Why not violet?", "eyes"))
    protocol.save_document(store, alice, 0, 1, 0, form)
    with pytest.raises(store_mod.Duplicate):
        protocol.save_document(store, alice, 0, 1, 0, form)
    protocol.save_document(store, alice, 0, 1, 1, _doc(new_answers=[("a", n0["id"], " Five  times MORE ")]))
    (n0, n2) = [n for n in protocol.document_view(store, alice, 0, 1, 1)["nuggets"] if n["origin"] != "prefill" or
                n["id"] == n0["id"]]
    assert [(a["text"], a["documents"]) for a in n0["answers"]] == [("five times more", ["d1", "d2"])]
    with pytest.raises(store_mod.Refused, match="is nugget t1:n2 already") as e:
        protocol.save_document(store, alice, 0, 1, 1, _doc(new_nugget=("why not VIOLET?", "eyes")))
    assert e.value.field == "question"
    with pytest.raises(store_mod.Refused, match="no valid form id"):
        protocol.save_document(store, alice, 0, 1, 1, protocol.DocumentForm(""))


def test_nuggets_json_is_written_after_the_commit(tmp_path, monkeypatch):
    """nuggets.json is derived from the database after the transaction commits: what it lists is in the
    database (a kill between the two can only leave it behind, and the server rewrites it at start)."""
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    alice = _users(store)["alice"]
    seen = []
    original = store_mod.Store.write_nuggets_json

    def check(self):
        with sqlite3.connect(self.path) as other:  # another connection sees only committed data
            seen.append(other.execute("SELECT count(*) FROM nuggets").fetchone()[0])
        original(self)

    monkeypatch.setattr(store_mod.Store, "write_nuggets_json", check)
    protocol.save_document(store, alice, 0, 1, 3, _doc(new_nugget=("Why not violet?", "eyes")))
    assert seen == [3]
    on_disk = json.loads((tmp_path / "sky" / "nuggets.json").read_text())
    assert [n["text"] for n in on_disk["t1"]["nuggets"]][-1] == "Why not violet?"
    (tmp_path / "sky" / "nuggets.json").write_text("{}")  # left behind by a crash: the server rewrites it
    from pyterrier_nuggets.annotate.web import App
    App([store.directory])
    assert len(json.loads((tmp_path / "sky" / "nuggets.json").read_text())["t1"]["nuggets"]) == 3


def test_two_annotators_accepting_the_same_prefill_do_not_conflict(tmp_path):
    """Both pages pre-select the LLM's label; both accept it: one write, no conflict. A different label from a
    stale page is a conflict, and nothing of that form is written."""
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    users = _users(store)
    _finish_stage1(store, users["alice"])
    protocol.save_revision(store, users["boss"], 0, protocol.RevisionForm(form_id(), freeze=True))
    views = {who: protocol.document_view(store, users[who], 0, 3, 0)["citing"] for who in ("alice", "bob")}
    (cite,) = [c for c in views["alice"] if c["run_id"] == "runA"]
    assert cite["llm_label"] == "full" and cite["label"] is None

    def accept(who, label):
        c = next(x for x in views[who] if x["run_id"] == "runA")
        edit = protocol.Edit("label", (c["report_id"], c["sentence"], c["k"]), c["version"], c["fingerprint"], (label,))
        protocol.save_document(store, users[who], 0, 3, 0, _doc(labels=[edit]))

    accept("alice", "full")
    accept("bob", "full")
    assert [r["user"] for r in store.audit_rows() if r["action"] == "s3_label"] == ["alice"]
    with pytest.raises(store_mod.Conflict):
        accept("bob", "partial")
    assert protocol.document_view(store, users["bob"], 0, 3, 0)["citing"][0]["label"] == "full"


def test_concurrent_edits_never_lose_a_write(tmp_path):
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    users = _users(store)
    n = protocol.document_view(store, users["alice"], 0, 1, 0)["nuggets"][0]

    def reword(who, text, **kw):
        edit = protocol.Edit(f"qtext-{n['id']}", n["id"], n["version"], n["text_fingerprint"], (text,))
        protocol.save_document(store, users[who], 0, 1, 0, _doc(question_edits=[edit], **kw))

    reword("alice", "Alice's wording")
    with pytest.raises(store_mod.Conflict) as e:  # bob's form was loaded before alice saved
        reword("bob", "Bob's wording", new_answers=[("a", n["id"], "bob's answer")])
    assert e.value.mine["text"] == "Bob's wording" and e.value.theirs["text"] == "Alice's wording"
    assert e.value.theirs["updated_by"] == "alice"
    assert protocol.document_view(store, users["alice"], 0, 1, 0)["nuggets"][0]["answers"] == []  # none of bob's form
    # a field bob did not change is not written, so his stale form saves the rest without a conflict
    edit = protocol.Edit(f"qtext-{n['id']}", n["id"], n["version"], n["text_fingerprint"], (n["text"],))
    protocol.save_document(store, users["bob"], 0, 1, 0, _doc(question_edits=[edit], new_answers=[("a", n["id"], "five")]))
    view = protocol.document_view(store, users["alice"], 0, 1, 0)["nuggets"][0]
    assert view["text"] == "Alice's wording" and [a["text"] for a in view["answers"]] == ["five"]
    # links: a three-way merge, a link made meanwhile survives a stale form that did not touch it
    answer = view["answers"][0]
    protocol.save_document(store, users["alice"], 0, 1, 2, _doc(links={answer["id"]}))
    protocol.save_document(store, users["bob"], 0, 1, 2, _doc())  # bob's stale form: nothing shown linked
    assert protocol.document_view(store, users["alice"], 0, 1, 2)["nuggets"][0]["answers"][0]["linked"]
    actions = [r["action"] for r in store.audit_rows()]
    assert "s1_edit_nugget" in actions and "s1_links" in actions


def test_answers_can_be_edited_and_deleted(tmp_path):
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    alice, boss = _users(store)["alice"], _users(store)["boss"]
    n0 = next(iter(_nuggets(store, alice).values()))
    protocol.save_document(store, alice, 0, 1, 0, _doc(new_answers=[("a", n0["id"], "five times")]))
    protocol.save_document(store, alice, 0, 1, 1, _doc(new_answers=[("a", n0["id"], "a stray answer")]))
    a, stray = protocol.document_view(store, alice, 0, 1, 0)["nuggets"][0]["answers"]
    with pytest.raises(store_mod.Refused, match="tick 'delete'") as e:
        protocol.save_document(store, alice, 0, 1, 0, _doc(answer_edits=[
            protocol.Edit("atext-1", a["id"], a["version"], a["fingerprint"], ("  ",))]))
    assert e.value.field == "atext-1"
    protocol.save_document(store, alice, 0, 1, 0, _doc(answer_edits=[
        protocol.Edit("atext", a["id"], a["version"], a["fingerprint"], ("about five times",))],
        answer_deletes=[("adelete", stray["id"], stray["version"])]))
    (left,) = protocol.document_view(store, alice, 0, 1, 1)["nuggets"][0]["answers"]
    assert (left["text"], left["documents"], left["version"]) == ("about five times", ["d1"], 1)
    with pytest.raises(store_mod.Conflict):  # a stale edit of the same answer
        protocol.save_document(store, boss, 0, 1, 0, _doc(answer_edits=[
            protocol.Edit("atext", a["id"], a["version"], a["fingerprint"], ("five",))]))
    actions = [(r["action"], json.loads(r["detail"])) for r in store.audit_rows()]
    assert ("s1_delete_answer", {"text": "a stray answer", "documents": ["d2"]}) in actions
    assert "a stray answer" not in (tmp_path / "sky" / "nuggets.json").read_text()


def test_merge_delete_restore_freeze_unfreeze(tmp_path):
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    alice, boss, bob = _users(store)["alice"], _users(store)["boss"], _users(store)["bob"]
    n0, n1 = _nuggets(store, boss).values()
    protocol.save_document(store, alice, 0, 1, 1, _doc(new_answers=[("a", n1["id"], "red")],
                                                       new_nugget=("Why not violet?", "eyes")))
    n2 = _nuggets(store, boss)["Why not violet?"]

    def change(n, action="keep", into=None, text=None):
        return protocol.NuggetChange(f"n-{n['id']}", n["id"], n["version"], n["fingerprint"], text or n["text"],
                                     n["importance"], action, into)

    # a dry run says what would happen and writes nothing
    form = protocol.RevisionForm(form_id(), nuggets=[change(n1, "merge", n0["id"]), change(n2, "delete")])
    weighty = protocol.save_revision(store, boss, 0, form, dry_run=True)
    assert weighty == ["Merge t1:n1 “Sunsets are red” into t1:n0 “Blue light is scattered more than red light”: "
                       "its 1 answer(s) move there (restorable until the freeze)",
                       "Delete t1:n2 “Why not violet?” and its 1 answer(s) (restorable until the freeze)"]
    assert len(_nuggets(store, boss)) == 3
    with pytest.raises(store_mod.Refused, match="cannot be merged into a nugget this form deletes"):
        protocol.save_revision(store, boss, 0, protocol.RevisionForm(form_id(), nuggets=[
            change(n1, "merge", n2["id"]), change(n2, "delete")]))
    protocol.save_revision(store, boss, 0, form)
    (left,) = _nuggets(store, boss).values()
    assert left["nugget_id"] == "t1:n0" and [a["text"] for a in left["answers"]] == ["red"]
    removed = protocol.revision_view(store, boss, 0)["removed"]
    assert [(r["nugget_id"], r["status"], r["into"]) for r in removed] == [("t1:n1", "merged", "t1:n0"),
                                                                             ("t1:n2", "deleted", None)]
    nuggets_json = json.loads((tmp_path / "sky" / "nuggets.json").read_text())
    assert [n["status"] for n in nuggets_json["t1"]["nuggets"]] == ["active", "merged", "deleted"]
    # undo both: the merged nugget gets its answer back
    protocol.save_revision(store, boss, 0, protocol.RevisionForm(form_id(), restores=[("r", n1["id"]), ("r", n2["id"])]))
    now = _nuggets(store, boss)
    assert [a["text"] for a in now["Sunsets are red"]["answers"]] == ["red"] and now[n0["text"]]["answers"] == []
    assert [a["text"] for a in now["Why not violet?"]["answers"]] == ["eyes"]
    # freeze, unfreeze (no sentence aligned yet), freeze again; once a sentence is aligned: no unfreeze
    _finish_stage1(store, alice)
    n2 = _nuggets(store, boss)["Why not violet?"]  # restored: a new version; its importance is still to set
    protocol.save_revision(store, boss, 0, protocol.RevisionForm(form_id(), freeze=True, nuggets=[
        protocol.NuggetChange("n", n2["id"], n2["version"], n2["fingerprint"], n2["text"], "okay")]))
    assert protocol.unfreeze(store, boss, 0, form_id(), dry_run=True)[0].startswith("Unfreeze the nugget questions")
    protocol.unfreeze(store, boss, 0, form_id())
    assert protocol.revision_view(store, boss, 0)["progress"]["frozen"] is False
    protocol.save_revision(store, boss, 0, protocol.RevisionForm(form_id(), freeze=True))
    rid = protocol.next_report(store, bob, 0)
    view = protocol.report_view(store, bob, 0, rid)
    s = view["sentences"][0]
    protocol.save_alignment(store, bob, 0, rid, protocol.AlignmentForm(form_id(), {0: (
        "irrelevant", set(), "", s["version"], s["fingerprint"])}))
    with pytest.raises(store_mod.Refused, match="1 answer sentence"):
        protocol.unfreeze(store, boss, 0, form_id())
    with pytest.raises(protocol.Forbidden):
        protocol.unfreeze(store, alice, 0, form_id())
    actions = [r["action"] for r in store.audit_rows()]
    for action in ("s2_merge_nugget", "s2_delete_nugget", "s2_restore_nugget", "s2_freeze", "s2_unfreeze"):
        assert action in actions


def test_missing_questions_are_reviewed_by_the_manager(tmp_path):
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    annotate_by_api(store)
    boss, bob = _users(store)["boss"], _users(store)["bob"]
    with pytest.raises(protocol.Forbidden):
        protocol.missing_view(store, bob)
    (flag,) = protocol.missing_view(store, boss)
    assert (flag["question"], flag["by"], flag["status"]) == ("Do people like the colour blue?", "bob", "open")
    edit = protocol.Edit("missing", (flag["report_id"], flag["sentence"]), 0, flag["fingerprint"],
                         (flag["question"], "rejected", "not worth a nugget"))
    protocol.save_missing_reviews(store, boss, form_id(), [edit])
    (flag,) = protocol.missing_view(store, boss)
    assert (flag["status"], flag["note"], flag["reviewed_by"]) == ("rejected", "not worth a nugget", "boss")
    with pytest.raises(store_mod.Refused, match="choose one of"):
        protocol.save_missing_reviews(store, boss, form_id(), [protocol.Edit(
            "m", edit.item, 0, flag["fingerprint"], (flag["question"], "maybe", ""))])
    with pytest.raises(store_mod.Conflict):  # a review from a page loaded before the first one
        protocol.save_missing_reviews(store, boss, form_id(), [protocol.Edit(
            "m", edit.item, 0, edit.shown, (flag["question"], "accepted", ""))])


def _back_to_schema_1(store) -> None:
    """The project's database as the first release made it."""
    with sqlite3.connect(store.path) as c:
        for table, column in (("users", "disabled"), ("pool", "relevance"), ("pool", "relevance_by"),
                              ("pool", "relevance_at"), ("sentences", "missing_status"), ("sentences", "missing_note"),
                              ("sentences", "missing_by"), ("sentences", "missing_at"), ("nugget_answers", "home"),
                              ("nugget_answers", "version"), ("nugget_answers", "updated_by"),
                              ("nugget_answers", "updated_at")):
            c.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        c.execute("DROP TABLE forms")
        c.execute("DROP TABLE drafts")
        c.execute("DROP TABLE browsers")
        c.execute("UPDATE meta SET value = '\"1\"' WHERE key = 'schema'")


def test_a_schema_1_project_is_upgraded_in_place(tmp_path):
    """A project made by the first release (schema 1) opens, is upgraded in one transaction and works."""
    from pyterrier_nuggets.annotate import Store, export_project
    store = make_project(tmp_path)
    _back_to_schema_1(store)
    from tests.annotate_project import cheap_passwords
    upgraded = Store(store.directory, cheap_passwords())
    assert upgraded.meta["schema"] == "3"
    assert [(r["action"], r["detail"]) for r in upgraded.audit_rows()][0] == ("schema", '{"from": "1", "to": "3"}')
    annotate_by_api(upgraded)
    export_project(store.directory, str(tmp_path / "out"))


def test_a_schema_1_project_upgraded_by_another_process_while_opening_opens(tmp_path, monkeypatch):
    """Two servers (or a server and an export) opening a schema 1 project at once: the other one upgrades it
    after this one read schema 1 and before this one takes the write lock. This one opens it without upgrading
    it twice (which failed: a column added twice)."""
    from pyterrier_nuggets.annotate import Store
    from tests.annotate_project import cheap_passwords
    store = make_project(tmp_path)
    _back_to_schema_1(store)
    write, others = Store.write, []

    def the_other_process_first(self, *args, **kwargs):
        if not others:
            others.append("upgrading")
            monkeypatch.setattr(Store, "write", write)
            others.append(Store(store.directory, cheap_passwords()))
        return write(self, *args, **kwargs)

    monkeypatch.setattr(Store, "write", the_other_process_first)
    opened = Store(store.directory, cheap_passwords())
    assert others[-1].meta["schema"] == opened.meta["schema"] == "3"
    assert [r["action"] for r in opened.audit_rows()].count("schema") == 1
    annotate_by_api(opened)


# -------------------------------------------------------------------------------- export round trip

def _ir_measures(directory, run, measures):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-m", "ir_measures", os.path.join(directory, "nuggets.qrels"),
                          os.path.join(directory, "runs", f"{run}.eval.run"), *measures],
                         capture_output=True, text=True, env=env, check=True).stdout
    return {k: float(v) for k, v in (line.split("\t") for line in out.splitlines() if line)}


def check_export(out) -> None:
    """The exported files score to the hand-worked values on the plain ir_measures command line."""
    from pyterrier_nuggets import formats
    for run, expected in EXPECTED.items():
        got = _ir_measures(str(out), run, list(expected))
        for measure, value in expected.items():
            assert got[measure] == pytest.approx(value, abs=1e-4), (run, measure)
    nuggets = formats.read_nuggets(str(out / "nuggets.jsonl"))
    assert [(n.id, n.importance) for n in nuggets.nuggets] == [("t1:n0", "vital"), ("t1:n1", "okay"), ("t1:n2", "okay")]
    assert nuggets.nuggets[1].text == "Why are sunsets red?" and nuggets.nuggets[1].provenance["edited"] is True
    prefill = formats.read_nuggets(str(out / "nuggets.prefill.jsonl"))
    assert [n.text for n in prefill.nuggets] == ["Blue light is scattered more than red light", "Sunsets are red"]
    assigned = formats.read_assignments(str(out / "assignments.jsonl"))
    assert {(a.run_id, x.nugget_index, x.assignment) for a in assigned.answers for x in a.assignments} == {
        ("runA", 0, "support"), ("runA", 1, "support"), ("runA", 2, "not_support"),
        ("runB", 0, "support"), ("runB", 1, "not_support"), ("runB", 2, "not_support")}
    human = [json.loads(x) for x in (out / "support.human.jsonl").read_text().splitlines()]
    llm = [json.loads(x) for x in (out / "support.llm.jsonl").read_text().splitlines()]
    assert {(j["run_id"], j["sentence"], j["citation"], j["support"]) for j in llm if j["citation"] is not None} == {
        ("runA", 0, 0, "full"), ("runA", 1, 0, "none"), ("runB", 0, 0, "none")}
    assert {(j["run_id"], j["sentence"], j["citation"], j["support"]) for j in human if j["citation"] is not None} == {
        ("runA", 0, 0, "full"), ("runA", 1, 0, "full"), ("runB", 0, 0, "partial"), ("runB", 0, 1, "full")}
    assert formats.read_support(str(out / "runs" / "runB.support.jsonl"))[0].support == "partial"
    argue = {(r["run_id"], r["sentence"]): r["argue"] for r in map(json.loads, (out / "argue.jsonl").read_text().splitlines())}
    assert argue == {("runA", 0): "valid", ("runA", 1): "valid", ("runA", 2): "ignored",
                     ("runB", 0): "valid", ("runB", 1): "hallucinated"}
    missing = [json.loads(x) for x in (out / "missing_questions.jsonl").read_text().splitlines()]
    assert [(m["run_id"], m["question"], m["by"], m["review"]) for m in missing] == [
        ("runB", "Do people like the colour blue?", "bob", "open")]
    relevance = [line.split() for line in (out / "relevance.qrels").read_text().splitlines()]
    assert relevance == [["t1", "0", d, str(g)] for d, g in RELEVANCE.items()]
    inferred = [line.split() for line in (out / "relevance.inferred.qrels").read_text().splitlines()]
    assert inferred == [["t1", "0", d, str(g)] for d, g in INFERRED.items()]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["annotators"] == {"stage1": ["alice"], "stage2": ["boss"], "stage3": ["alice"], "stage4": ["bob"]}
    assert manifest["nuggets"] == "post-edited pre-populated nuggets"
    assert manifest["counts"]["relevance_grades"] == 4


def test_export_round_trip_through_ir_measures(tmp_path):
    from pyterrier_nuggets.annotate import export_project
    from pyterrier_nuggets.annotate.export import Unfinished
    store = make_project(tmp_path)
    with pytest.raises(Unfinished, match="not finished"):
        export_project(store.directory, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()  # nothing written
    annotate_by_api(store)
    export_project(store.directory, str(tmp_path / "out"))
    check_export(tmp_path / "out")


def test_export_forgives_an_uncited_repetition(tmp_path):
    """argue.jsonl marks the sentence §3.4 forgives: runA's uncited third sentence, aligned to the nugget its
    first (valid) sentence conveys, is ignored; the evaluation run scores it so (ArgueP 1 with forgiveness,
    2/3 with repeats='penalize')."""
    from pyterrier_nuggets.annotate import export_project
    from tests import annotate_project
    plan = dict(annotate_project.STAGE4)
    plan["runA", 2] = ("nuggets", ["Blue light is scattered more than red light"], "")
    old = annotate_project.STAGE4
    annotate_project.STAGE4 = plan
    try:
        store = make_project(tmp_path)
        annotate_by_api(store)
    finally:
        annotate_project.STAGE4 = old
    export_project(store.directory, str(tmp_path / "out"))
    rows = {(r["run_id"], r["sentence"]): r for r in map(json.loads, (tmp_path / "out" / "argue.jsonl").read_text().splitlines())}
    assert rows["runA", 2]["argue"] == "ignored" and rows["runA", 2]["forgiven_repeat"] is True
    assert "forgiven_repeat" not in rows["runA", 0]
    got = _ir_measures(str(tmp_path / "out"), "runA", ["ArgueP", "ArgueP(repeats='penalize')"])
    assert got["ArgueP"] == 1.0 and got["ArgueP(repeats='penalize')"] == pytest.approx(2 / 3, abs=1e-4)


def test_cli_init_users_export(tmp_path):
    config = write_project(tmp_path / "in")
    r = _cli("annotate", "init", config, tmp_path / "p")
    assert r.returncode == 0 and "1 topics, 2 answers of 2 runs, 4 pooled documents" in r.stdout, r.stderr
    r = _cli("annotate", "users", tmp_path / "p", "add", "ann", "--role", "annotator", "--topics", "t1",
             "--password-stdin", stdin="a-long-password\n")
    assert r.returncode == 0, r.stderr
    r = _cli("annotate", "users", tmp_path / "p", "add", "boss", "--role", "manager", "--password-stdin",
             stdin="boss-password\n")
    assert _cli("annotate", "users", tmp_path / "p", "list").stdout == "ann\tannotator\tt1\nboss\tmanager\tall\n"
    assert "a-long-password" not in (tmp_path / "p" / "annotation.sqlite").read_bytes().decode("latin-1")
    r = _cli("annotate", "users", tmp_path / "p", "disable", "ann")
    assert r.returncode == 0 and "ann is disabled" in r.stdout
    assert _cli("annotate", "users", tmp_path / "p", "list").stdout.startswith("ann\tannotator\tt1\tdisabled\n")
    r = _cli("annotate", "users", tmp_path / "p", "disable", "boss")
    assert r.returncode == 1 and "last enabled manager" in r.stderr
    assert _cli("annotate", "users", tmp_path / "p", "enable", "ann").returncode == 0
    r = _cli("annotate", "export", tmp_path / "p", "--out", tmp_path / "out")
    assert r.returncode == 2 and "not finished" in r.stderr and "t1: stage 1 0/4 documents" in r.stderr


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_database_is_one_line(tmp_path, damage):
    """A corrupt annotation.sqlite: every command says in one line which file and what to do; no traceback."""
    store = make_project(tmp_path)
    path = tmp_path / "sky" / "annotation.sqlite"
    data = path.read_bytes()
    path.write_bytes(b"this is not a database at all" * 200 if damage == "garbage" else data[:len(data) // 3])
    for args in (["users", tmp_path / "sky", "list"], ["export", tmp_path / "sky", "--out", tmp_path / "out"]):
        r = _cli("annotate", *args)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert str(path) in r.stderr and "restore it from a backup" in r.stderr
    from pyterrier_nuggets.annotate.store import DamagedProject
    from pyterrier_nuggets.annotate.web import App
    with pytest.raises(DamagedProject, match="annotation.sqlite"):
        App([store.directory])


# ------------------------------------------------------------------------------- finished topics

def test_a_finished_topic_is_read_only_for_annotators(tmp_path):
    """Decision (docs/annotation.md, "Finished topics"): once a topic's four stages are complete, an annotator's
    form on it is refused and writes nothing (no one changes another's stage 3 label after an export); the
    manager may still correct it, and the export's manifest names the audit entry it holds the annotations of."""
    from pyterrier_nuggets.annotate import export_project
    protocol, store_mod = _modules()
    store = make_project(tmp_path)
    annotate_by_api(store)
    alice, bob, boss = _users(store)["alice"], _users(store)["bob"], _users(store)["boss"]
    export_project(store.directory, str(tmp_path / "out"))
    audited = json.loads((tmp_path / "out" / "manifest.json").read_text())["audit_until"]
    view = protocol.document_view(store, bob, 0, 3, 0)
    assert view["locked"] and not protocol.document_view(store, boss, 0, 3, 0)["locked"]
    (c,) = [c for c in view["citing"] if c["run_id"] == "runA"]
    relabel = protocol.Edit("label", (c["report_id"], c["sentence"], c["k"]), c["version"], c["fingerprint"], ("none",))
    for who in (alice, bob):
        with pytest.raises(store_mod.Refused, match="topic t1 is finished"):
            protocol.save_document(store, who, 0, 3, 0, protocol.DocumentForm(form_id(), labels=[relabel]))
    report = protocol.report_view(store, bob, 0, c["report_id"])
    s0 = report["sentences"][0]
    with pytest.raises(store_mod.Refused, match="topic t1 is finished"):
        protocol.save_alignment(store, bob, 0, c["report_id"], protocol.AlignmentForm(
            form_id(), {0: ("irrelevant", set(), "", s0["version"], s0["fingerprint"])}))
    with store.read() as db:
        assert db.execute("SELECT label FROM citations WHERE report_id = ? AND sentence = ? AND k = ?",
                          (c["report_id"], c["sentence"], c["k"])).fetchone()[0] == "full"
        assert db.execute("SELECT max(id) FROM audit").fetchone()[0] == audited  # nothing written
    protocol.save_document(store, boss, 0, 3, 0, protocol.DocumentForm(form_id(), labels=[relabel]))  # the manager
    with store.read() as db:
        (row,) = db.execute("SELECT id, user, action FROM audit WHERE action = 's3_label' ORDER BY id DESC LIMIT 1")
    assert row["id"] > audited and row["user"] == "boss"


# ------------------------------------------------------------------------- what is atomic, killed

_KILLED = r"""
import os, sys
from pyterrier_nuggets.annotate import export_project
from pyterrier_nuggets.formats import folders as export_module  # the one module of output folders
project, out, point = sys.argv[1:4]
parent = os.path.dirname(os.path.abspath(out))

def pause():
    print("paused", flush=True)
    sys.stdin.read()  # the test kills this process here (SIGKILL), at a point it chose

if point.startswith("files:"):  # after N files are complete in the hidden folder
    real_replace, done = os.replace, []
    def replace(a, b, **kw):
        real_replace(a, b, **kw)
        if ".partial-" in str(b):
            done.append(b)
            if len(done) == int(point[6:]):
                pause()
    os.replace = replace
elif point in ("before-exchange", "after-exchange"):
    real_exchange = export_module._exchange
    def exchange(a, b):
        if point == "before-exchange":
            pause()
        ok = real_exchange(a, b)
        assert ok, "renameat2(RENAME_EXCHANGE) is not available here"
        pause()
    export_module._exchange = exchange
elif point == "between-renames":  # where no atomic exchange exists
    export_module._exchange = lambda a, b: False
    real_rename = os.rename
    def rename(a, b):
        real_rename(a, b)
        if os.path.abspath(a) == os.path.abspath(out):
            pause()
    os.rename = rename
export_project(project, out, overwrite=True)
print("finished", flush=True)
"""


def _files(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _kill_at(store, out, point):
    """Run an export in a subprocess, let it reach ``point`` (it says so and waits), and kill -9 it there."""
    import signal
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, store.directory, str(out), point], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line == "paused\n", (line, proc.stderr.read() if proc.poll() is not None else "")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def test_an_export_killed_anywhere_leaves_the_old_export_or_the_new_one(tmp_path):
    """Re-export into a folder holding an earlier export, killed with SIGKILL at points the test chooses
    (between files, before and after the folder swap, between the two renames where no atomic exchange
    exists): the folder holds all the old files or all the new ones, never a mix; the next export removes
    what the killed one left beside it and writes the new export."""
    from pyterrier_nuggets.annotate import export_project
    store = make_project(tmp_path)
    annotate_by_api(store)
    out = tmp_path / "exports" / "sky"
    export_project(store.directory, str(out))
    old = _files(out)
    store.assign_topics("bob", ["t1"], by="boss")  # the database changes: the new export differs (audit.jsonl)
    export_project(store.directory, str(tmp_path / "reference"))
    new_names = set(_files(tmp_path / "reference"))
    for point, expected in (("files:3", "old"), ("before-exchange", "old"), ("after-exchange", "new"),
                            ("files:1", "old")):
        _kill_at(store, out, point)
        now = _files(out)
        if expected == "old":
            assert now == old, point
        else:
            assert set(now) == new_names, point  # complete: every file of the new export, nothing old
            assert now["audit.jsonl"] == _files(tmp_path / "reference")["audit.jsonl"]
        export_project(store.directory, str(out), overwrite=True)  # the next export cleans up and completes
        assert set(_files(out)) == new_names and os.listdir(out.parent) == ["sky"], point
        for name, data in old.items():  # back to the old export for the next kill
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(data)
        for name in set(_files(out)) - set(old):
            (out / name).unlink()
    # where the system has no atomic exchange: killed between moving the old export aside and the new one in
    _kill_at(store, out, "between-renames")
    assert not out.exists() and len(os.listdir(out.parent)) == 2
    from pyterrier_nuggets.formats.folders import OutputFolder
    OutputFolder(str(out), "annotate export").remove_stale_stages()  # what the next export does first: the old
    # export is put back
    assert _files(out) == old and os.listdir(out.parent) == ["sky"]


def test_an_export_does_not_replace_a_folder_of_other_files(tmp_path):
    from pyterrier_nuggets.annotate import export_project
    store = make_project(tmp_path)
    annotate_by_api(store)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("mine")
    with pytest.raises(InvalidInput, match=r"holds files that no pyterrier-nuggets run wrote there \(thesis.tex\)"):
        export_project(store.directory, str(tmp_path / "mine"), overwrite=True)
    assert os.listdir(tmp_path / "mine") == ["thesis.tex"] and sorted(os.listdir(tmp_path)) == ["mine", "sky",
                                                                                                  "sky-input"]
    export_project(store.directory, str(tmp_path / "out"))
    assert oct(os.stat(tmp_path / "out").st_mode & 0o777) != oct(0o700)  # a folder's usual mode, not mkdtemp's


def test_a_temporary_nuggets_json_left_by_a_kill_is_removed_when_the_server_starts(tmp_path):
    """nuggets.json is replaced by renaming a complete temporary file over it: killed with SIGKILL before the
    rename, the old file is intact and the temporary file is removed when the server next starts."""
    import signal

    from pyterrier_nuggets.annotate.web import App
    store = make_project(tmp_path)
    before = (tmp_path / "sky" / "nuggets.json").read_text()
    script = ("import os, sys\nfrom pyterrier_nuggets.annotate.store import Store\n"
              "real = os.replace\n"
              "def replace(a, b):\n    print('paused', flush=True)\n    sys.stdin.read()\n"
              "os.replace = replace\nStore(sys.argv[1]).write_nuggets_json()\n")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-c", script, store.directory], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline() == "paused\n"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    proc.stdout.close()
    (left,) = [n for n in os.listdir(tmp_path / "sky") if n.endswith(".tmp")]
    assert left.startswith(".nuggets.json.") and (tmp_path / "sky" / "nuggets.json").read_text() == before
    App([store.directory])
    assert not [n for n in os.listdir(tmp_path / "sky") if n.endswith(".tmp")]
    assert (tmp_path / "sky" / "nuggets.json").read_text() == before


def test_a_replaced_file_is_flushed_to_the_disk_before_the_rename(tmp_path, monkeypatch):
    """atomic_write: fsync of the temporary file, then the rename, then fsync of the folder (the rename itself)."""
    from datasets_ext import files
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(files.os, "fsync", lambda fd: (calls.append(("fsync", os.path.realpath(
        f"/proc/self/fd/{fd}"))), real_fsync(fd))[1])
    monkeypatch.setattr(files.os, "replace", lambda a, b: (calls.append(("replace", str(b))), real_replace(a, b))[1])
    with files.atomic_write(tmp_path / "f.txt") as f:
        f.write("content")
    assert [c[0] for c in calls] == ["fsync", "replace", "fsync"]
    assert calls[0][1].startswith(str(tmp_path / ".f.txt.")) and calls[2][1] == str(tmp_path)
