"""The annotation tool without a browser: configuration checks, the protocol's rules, optimistic
concurrency, the export round trip through the plain ir_measures command line (hand-worked values in
tests/annotate_project.py), and the security of the real server over HTTP (uvicorn on 127.0.0.1)."""
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import pytest

from tests.annotate_project import (
    DOCS,
    EXPECTED,
    PASSWORDS,
    XSS_IMG,
    XSS_SCRIPT,
    Client,
    annotate_by_api,
    live_server,
    make_project,
    needs_annotate,
    write_project,
)

pytestmark = needs_annotate


def _store_modules():
    from pyterrier_nuggets.annotate import protocol, store
    return protocol, store


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
    ({"support_scale": "biogen"}, "pre-fill is full/partial/none"),
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


# ------------------------------------------------------------------------------------ the protocol

def test_stage_rules(tmp_path):
    protocol, store_mod = _store_modules()
    store = make_project(tmp_path)
    users = {u["name"]: u for u in store.users()}
    alice, boss = users["alice"], users["boss"]
    with pytest.raises(store_mod.Refused, match="stage 3 starts when"):
        protocol.next_document(store, alice, 0, 3)
    with pytest.raises(protocol.Forbidden):
        protocol.revision_view(store, alice, 0)
    with pytest.raises(store_mod.Refused, match="pooled document"):
        protocol.freeze(store, boss, 0)
    for d in range(4):
        protocol.mark_document_done(store, alice, 0, 1, d)
    assert protocol.next_document(store, alice, 0, 1) is None  # a document is visited once in stage 1
    protocol.add_nugget(store, alice, 0, 3, "Why not violet?", "eyes")
    with pytest.raises(store_mod.Refused, match="no importance"):
        protocol.freeze(store, boss, 0)
    n = {x["text"]: x for x in protocol.revision_view(store, boss, 0)["nuggets"]}["Why not violet?"]
    protocol.edit_nugget(store, boss, 0, 2, n["id"], n["version"], n["text"], "okay")
    protocol.freeze(store, boss, 0)
    with pytest.raises(store_mod.Refused, match="frozen"):
        protocol.add_nugget(store, alice, 0, 0, "late question", "x")
    with pytest.raises(store_mod.Refused, match="no support label"):
        protocol.mark_document_done(store, alice, 0, 3, 0)
    with pytest.raises(store_mod.Refused, match="not aligned"):
        protocol.save_alignment(store, alice, 0, 1, {}, done=True)
    with pytest.raises(store_mod.Refused, match="tick the nugget"):
        protocol.save_alignment(store, alice, 0, 1, {0: ("nuggets", set(), "", 0, "")}, done=False)


def test_merge_moves_answers_and_keeps_ids(tmp_path):
    protocol, _ = _store_modules()
    store = make_project(tmp_path)
    boss = {u["name"]: u for u in store.users()}["boss"]
    protocol.add_answer(store, boss, 0, 1, 1, protocol.revision_view(store, boss, 0)["nuggets"][1]["id"], "red")
    n0, n1 = protocol.revision_view(store, boss, 0)["nuggets"]
    protocol.remove_nugget(store, boss, 0, n1["id"], n1["version"], merge_into=n0["id"])
    (left,) = protocol.revision_view(store, boss, 0)["nuggets"]
    assert left["nugget_id"] == "t1:n0" and [a["text"] for a in left["answers"]] == ["red"]
    nuggets_json = json.loads((tmp_path / "sky" / "nuggets.json").read_text())
    assert [n["status"] for n in nuggets_json["t1"]["nuggets"]] == ["active", "merged"]


def test_concurrent_edits_never_lose_a_write(tmp_path):
    protocol, store_mod = _store_modules()
    store = make_project(tmp_path)
    users = {u["name"]: u for u in store.users()}
    n = protocol.document_view(store, users["alice"], 0, 1, 0)["nuggets"][0]
    protocol.edit_nugget(store, users["alice"], 0, 1, n["id"], n["version"], "Alice's wording")
    with pytest.raises(store_mod.Conflict) as e:  # bob's form was loaded before alice saved
        protocol.edit_nugget(store, users["bob"], 0, 1, n["id"], n["version"], "Bob's wording")
    assert e.value.mine["text"] == "Bob's wording" and e.value.theirs["text"] == "Alice's wording"
    assert e.value.theirs["updated_by"] == "alice"
    # links: a three-way merge, a link made meanwhile survives a stale form that did not touch it
    protocol.add_answer(store, users["alice"], 0, 1, 0, n["id"], "five times")
    answer = protocol.document_view(store, users["alice"], 0, 1, 2)["nuggets"][0]["answers"][0]
    protocol.set_links(store, users["alice"], 0, 1, 2, set(), {answer["id"]})
    protocol.set_links(store, users["bob"], 0, 1, 2, set(), set())  # bob's stale form: nothing shown linked
    assert protocol.document_view(store, users["alice"], 0, 1, 2)["nuggets"][0]["answers"][0]["linked"]
    actions = [r["action"] for r in store.audit_rows()]
    assert "s1_edit_nugget" in actions and "s1_links" in actions


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
    assert [(m["run_id"], m["question"], m["by"]) for m in missing] == [("runB", "Do people like the colour blue?", "bob")]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["annotators"] == {"stage1": ["alice"], "stage2": ["boss"], "stage3": ["alice"], "stage4": ["bob"]}
    assert manifest["nuggets"] == "post-edited pre-populated nuggets"


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


def test_cli_init_users_export(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    cli = [sys.executable, "-c", "import sys; from pyterrier_nuggets.cli import main; sys.exit(main())"]
    config = write_project(tmp_path / "in")
    r = subprocess.run(cli + ["annotate", "init", str(config), str(tmp_path / "p")], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0 and "1 topics, 2 answers of 2 runs, 4 pooled documents" in r.stdout, r.stderr
    r = subprocess.run(cli + ["annotate", "users", str(tmp_path / "p"), "add", "ann", "--role", "annotator",
                              "--topics", "t1", "--password-stdin"], input="a-long-password\n", capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(cli + ["annotate", "users", str(tmp_path / "p"), "list"], capture_output=True, text=True, env=env)
    assert r.stdout == "ann\tannotator\tt1\n"
    assert "a-long-password" not in (tmp_path / "p" / "annotation.sqlite").read_bytes().decode("latin-1")
    r = subprocess.run(cli + ["annotate", "export", str(tmp_path / "p"), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "not finished" in r.stderr and "t1: stage 1 0/4 documents" in r.stderr


# ----------------------------------------------------------------------------- security over HTTP

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    a = make_project(tmp, "sky", users=("boss", "alice", "bob", "carol"))
    b = make_project(tmp, "other", users=("boss", "alice"))
    b.set_password("alice", "alice-in-other-project")
    with live_server([a.directory, b.directory]) as base:
        yield base, a, b


def test_unauthenticated_access(served):
    base, _, _ = served
    c = Client(base)
    for path in ("/p/sky/", "/p/sky/t/0/s1", "/p/sky/t/0/s1/d/0", "/p/sky/t/0/s2", "/p/sky/t/0/s4/r/1",
                 "/p/sky/users", "/p/sky/audit"):
        status, text, location = c.get(path)
        assert status == 303 and location.endswith("/p/sky/login"), path
        assert DOCS["d1"] not in text
    status, text, _ = c.post("/p/sky/t/0/s1/d/0/save", {"question": "q", "qanswer": "a"}, csrf=False)
    assert status == 403
    assert c.get("/p/nope/")[0] == 404


def test_no_cross_project_reads_or_writes(served):
    base, _, other = served
    c = Client(base)
    assert c.login("sky", "alice")[0] == 303
    status, text, _ = c.get("/p/sky/t/0/s1/d/0")
    assert status == 200 and DOCS["d1"] in text
    # the session of project sky opens nothing of project other, whatever the URL
    status, _, location = c.get("/p/other/t/0/s1/d/0")
    assert status == 303 and location.endswith("/p/other/login")
    token = next(ck.value for ck in c.jar if ck.name == "pn_session")
    forged = c.request("/p/other/t/0/s1/d/0", headers={"Cookie": f"pn_session={token}"})
    assert forged[0] == 303
    write = c.request("/p/other/t/0/s1/d/0/save", {"csrf": c.csrf, "question": "q", "qanswer": "a"},
                      headers={"Cookie": f"pn_session={token}"})
    assert write[0] == 403
    with other.read() as conn:
        assert conn.execute("SELECT count(*) FROM nuggets WHERE origin = 'annotator'").fetchone()[0] == 0
    # the same name in the other project has its own password
    assert Client(base).login("other", "alice", PASSWORDS["alice"])[0] == 401


def test_roles_and_topics(served):
    base, _, _ = served
    carol = Client(base)
    assert carol.login("sky", "carol")[0] == 303
    status, text, _ = carol.get("/p/sky/")
    assert "No topic is assigned to you" in text
    assert carol.get("/p/sky/t/0/s1/d/0")[0] == 403
    assert carol.post("/p/sky/t/0/s1/d/0/save", {"question": "q", "qanswer": "a"})[0] == 403
    alice = Client(base)
    alice.login("sky", "alice")
    assert alice.get("/p/sky/t/0/s2")[0] == 403  # the manager's stage
    assert alice.get("/p/sky/users")[0] == 403 and alice.get("/p/sky/audit")[0] == 403
    assert alice.post("/p/sky/users/assign", {"name": "carol", "topics": "t1"})[0] == 403


def test_csrf(served):
    base, store, _ = served
    c = Client(base)
    c.login("sky", "alice")
    c.get("/p/sky/t/0/s1/d/0")
    for data in ({"question": "forged", "qanswer": "x"}, {"csrf": "wrong", "question": "forged", "qanswer": "x"}):
        status, text, _ = c.post("/p/sky/t/0/s1/d/0/save", data, csrf=False)
        assert status == 403 and "CSRF" in text
    with store.read() as conn:
        assert conn.execute("SELECT count(*) FROM nuggets WHERE text = 'forged'").fetchone()[0] == 0
    # the login form too: no token from the login page, no login
    fresh = Client(base)
    assert fresh.post("/p/sky/login", {"name": "alice", "password": PASSWORDS["alice"]}, csrf=False)[0] == 403
    # cookies: HttpOnly, SameSite=Strict, scoped to the project
    head = fresh.opener.open(base + "/p/sky/login")
    cookie = head.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/p/sky/" in cookie
    assert "script-src" not in head.headers["content-security-policy"]  # default-src 'none' forbids scripts


def test_script_in_document_and_answer_is_text(served):
    base, store, _ = served
    protocol, _ = _store_modules()
    c = Client(base)
    c.login("sky", "alice")
    status, text, _ = c.get("/p/sky/t/0/s1/d/2")
    assert status == 200
    assert XSS_SCRIPT not in text and XSS_IMG not in text
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=" in text
    boss = {u["name"]: u for u in store.users()}["boss"]
    with store.write() as conn:  # stage 3 shows the answer sentence with the onerror attribute
        conn.execute("UPDATE topics SET frozen_at = 'now', frozen_by = 'test'")
    try:
        status, text, _ = c.get("/p/sky/t/0/s3/d/2")
        assert status == 200 and "Blue light is scattered more strongly" in text
        assert XSS_IMG not in text and "onerror=&#34;document.title" in text
        assert protocol.report_view(store, boss, 0, 2)["sentences"][0]["text"].endswith(XSS_IMG + ".")
    finally:
        with store.write() as conn:
            conn.execute("UPDATE topics SET frozen_at = NULL, frozen_by = NULL")


def test_wrong_password_and_unknown_user_look_the_same(served):
    base, _, _ = served
    times: dict[str, list[float]] = {"unknown": [], "wrong": []}
    bodies = set()
    for _ in range(5):
        for kind, name in (("unknown", "mallory"), ("wrong", "alice")):
            c = Client(base)
            c.get("/p/sky/login")
            start = time.perf_counter()
            status, text, _ = c.post("/p/sky/login", {"name": name, "password": "not-the-password"})
            times[kind].append(time.perf_counter() - start)
            assert status == 401
            bodies.add(text.replace(c.csrf, ""))
    assert len(bodies) == 1 and "Unknown user or wrong password." in bodies.pop()
    unknown, wrong = statistics.median(times["unknown"]), statistics.median(times["wrong"])
    assert 0.5 < unknown / wrong < 2.0, times  # both verify one Argon2id hash


def test_two_annotators_save_the_same_item_concurrently(served):
    base, store, _ = served
    alice, bob = Client(base), Client(base)
    alice.login("sky", "alice")
    bob.login("sky", "bob")
    alice.get("/p/sky/t/0/s1/d/0")
    bob.get("/p/sky/t/0/s1/d/0")
    protocol, _ = _store_modules()
    user = {u["name"]: u for u in store.users()}["alice"]
    n = protocol.document_view(store, user, 0, 1, 0)["nuggets"][0]
    results = {}

    def save(who, client, text):
        results[who] = client.post(f"/p/sky/t/0/s1/nugget/{n['id']}/edit", {"version": n["version"], "text": text, "d": 0})

    threads = [threading.Thread(target=save, args=("alice", alice, "Alice says")),
               threading.Thread(target=save, args=("bob", bob, "Bob says"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(r[0] for r in results.values())
    assert statuses == [303, 409]
    loser = "alice" if results["alice"][0] == 409 else "bob"
    winner = "bob" if loser == "alice" else "alice"
    page = results[loser][1]
    assert "Not saved: someone changed this first" in page
    assert f"{loser.capitalize()} says" in page and f"{winner.capitalize()} says" in page
    saved = protocol.document_view(store, user, 0, 1, 0)["nuggets"][0]
    assert saved["text"] == f"{winner.capitalize()} says" and saved["version"] == n["version"] + 1


def test_login_throttle_counts_failures_in_a_window():
    from pyterrier_nuggets.annotate.auth import LoginThrottle
    now = [1000.0]
    throttle = LoginThrottle(limit=3, window=60.0, now=lambda: now[0])
    key = ("sky", "127.0.0.1", "alice")
    for _ in range(3):
        assert throttle.wait(key) == 0
        throttle.failed(key)
        now[0] += 10  # failures at 1000, 1010, 1020
    assert throttle.wait(key) == pytest.approx(30.0)  # the one at 1000 leaves the window at 1060; it is 1030
    assert throttle.wait(("sky", "10.0.0.2", "alice")) == 0  # another client, and another name, are not held
    assert throttle.wait(("sky", "127.0.0.1", "bob")) == 0
    now[0] = 1061.0
    assert throttle.wait(key) == 0  # two failures left in the window
    throttle.failed(key)
    assert throttle.wait(key) > 0
    throttle.succeeded(key)
    assert throttle.wait(key) == 0


def test_too_many_failed_sign_ins_are_refused_for_a_while(tmp_path):
    """After 10 failed sign-ins for a name from one client, even the right password is refused (429) without a
    check, with the same page for a known and an unknown name; other names sign in as usual."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base:
        for name in ("bob", "nobody"):
            for _ in range(10):
                assert Client(base).login("sky", name, "not-the-password")[0] == 401
        pages = []
        for name in ("bob", "nobody"):
            client = Client(base)
            status, text, _ = client.login("sky", name, PASSWORDS["bob"])
            assert status == 429, name
            pages.append(text.replace(client.csrf, ""))
        assert "Too many failed sign-ins for this name from here: try again in 15 minutes" in pages[0]
        assert pages[0] == pages[1]  # nothing tells a known name from an unknown one
        assert Client(base).login("sky", "alice")[0] == 303
    with store.read() as c:  # the refused attempts opened no session
        assert c.execute("SELECT count(*) FROM audit WHERE action = 'login' AND target = 'bob'").fetchone()[0] == 0
