"""A small annotation project for the annotation tool's tests (made here, no shared data), the plan by
which it is annotated (the same by the protocol API and in the browser), the scores that plan must give
(worked by hand below), a live uvicorn server on 127.0.0.1 and a cookie-keeping HTTP client."""
from __future__ import annotations

import http.cookiejar
import importlib.util
import json
import os
import queue
import re
import secrets
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import pytest

# the tool's extra [annotate]: its tests skip on a developer machine without it, never in CI (CI set)
AVAILABLE = all(importlib.util.find_spec(m) for m in ("starlette", "uvicorn", "argon2", "multipart", "jinja2"))
needs_annotate = pytest.mark.skipif(not AVAILABLE and not os.environ.get("CI"),
                                    reason="needs the [annotate] extra (bash run.sh test installs it)")

XSS_SCRIPT = "<script>document.title='pwned'</script>"
XSS_IMG = "<img src=x onerror=\"document.title='pwned'\">"

DOCS = {
    "d1": "Blue light is scattered about five times more than red light by the air molecules.",
    "d2": "At sunset the light passes through more air, so the sky near the horizon looks red.",
    "d3": "Forum post: blue light is scattered more than red light. " + XSS_SCRIPT + " " + XSS_IMG + " Thanks!",
    "d4": "Violet light is scattered even more, but human eyes are less sensitive to violet.",
    "d5": "An unrelated page about ocean tides.",
}
ANSWERS = [
    {"run_id": "runA", "topic_id": "t1", "topic": "why is the sky blue", "references": ["d1", "d2"],
     "answer": [{"text": "Air molecules scatter blue light more than red light.", "citations": [0]},
                {"text": "Sunsets look red.", "citations": [1]},
                {"text": "The sky is blue.", "citations": []}]},
    {"run_id": "runB", "topic_id": "t1", "topic": "why is the sky blue", "references": ["d3", "d1"],
     "answer": [{"text": "Blue light is scattered more strongly " + XSS_IMG + ".", "citations": [0, 1]},
                {"text": "Many people like blue.", "citations": []}]},
]
NUGGETS = {"qid": "t1", "query": "why is the sky blue", "nuggets": [
    {"id": "t1:n0", "text": "Blue light is scattered more than red light", "importance": "vital"},
    {"id": "t1:n1", "text": "Sunsets are red", "importance": "okay"}]}
LLM_SUPPORT = [  # the LLM pre-fill (SupportJudge output, first citations): agrees with the people once
    {"qid": "t1", "run_id": "runA", "sentence": 0, "citation": 0, "docno": "d1", "support": "full"},
    {"qid": "t1", "run_id": "runA", "sentence": 1, "citation": 0, "docno": "d2", "support": "none"},
    {"qid": "t1", "run_id": "runA", "sentence": 2, "citation": None, "docno": None, "support": "none"},
    {"qid": "t1", "run_id": "runB", "sentence": 0, "citation": 0, "docno": "d3", "support": "none"},
]
POOL_QRELS = "t1 0 d4 1\nt1 0 d5 0\n"  # d4 joins the pool (relevant), d5 does not (relevance 0)

# ----------------------------------------------------------------------------------------- the plan
NEW_NUGGET = ("Why does the sky not look violet?", "eyes are less sensitive to violet")
STAGE1 = [  # pool order: cited documents first (d1, d2 of runA, d3 of runB), then the pool file's d4
    {"docno": "d1", "grade": 3, "answers": {"Blue light is scattered more than red light": "about five times more than red"}},
    {"docno": "d2", "grade": 2, "answers": {"Sunsets are red": "the sky near the horizon looks red"}},
    {"docno": "d3", "grade": 1, "links": ["about five times more than red"]},
    {"docno": "d4", "grade": 2, "new": NEW_NUGGET},
]
# relevance.qrels: the stage 1 grades; relevance.inferred.qrels: d1 and d3 attest the vital n0 (2), d2 the okay
# n1 and d4 the okay n2 (1)
RELEVANCE = {"d1": 3, "d2": 2, "d3": 1, "d4": 2}
INFERRED = {"d1": 2, "d2": 1, "d3": 2, "d4": 1}
STAGE2 = {"reword": ("Sunsets are red", "Why are sunsets red?"), "importance": {NEW_NUGGET[0]: "okay"}}
STAGE3 = {("runA", 0, 0): "full", ("runA", 1, 0): "full", ("runB", 0, 0): "partial", ("runB", 0, 1): "full"}
STAGE4 = {  # (run, sentence) -> content, nugget texts, missing question
    ("runA", 0): ("nuggets", ["Blue light is scattered more than red light"], ""),
    ("runA", 1): ("nuggets", ["Why are sunsets red?"], ""),
    ("runA", 2): ("no_information", [], ""),
    ("runB", 0): ("nuggets", ["Blue light is scattered more than red light"], ""),
    ("runB", 1): ("irrelevant", [], "Do people like the colour blue?"),
}

# Scores the plan gives, by hand. Nuggets: n0 vital, n1 okay (reworded), n2 okay (new, stage 1).
# runA conveys n0 (s0), n1 (s1): V_strict 1/1, A_strict 2/3, W (1 + .5)/(1 + .5*2) = .75.
#   Support, first citations: s0 full, s1 full, s2 uncited: SupportP 2/2, SupportR 2/3.
#   ARGUE: s0 valid, s1 valid, s2 no information + uncited = ignored: ArgueP 2/2, ArgueR 2/3.
# runB conveys n0 (s0): V_strict 1, A_strict 1/3, W 1/2.
#   Support: s0 first citation d3 partial (.5), s1 uncited: SupportP .5/1, SupportR .5/2;
#   cite='all_pairs': s0 has .5 and 1: SupportP 1.5/2, SupportR (1 + 0)/2.
#   ARGUE: s0 conveys n0 and d1 fully supports it: valid; s1 irrelevant + uncited: hallucinated:
#   ArgueP 1/2, ArgueR 1/3.
EXPECTED = {
    "runA": {"V_strict": 1.0, "A_strict": 2 / 3, "W": 0.75, "SupportP": 1.0, "SupportR": 2 / 3,
             "ArgueP": 1.0, "ArgueR": 2 / 3},
    "runB": {"V_strict": 1.0, "A_strict": 1 / 3, "W": 0.5, "SupportP": 0.5, "SupportR": 0.25,
             "SupportP(cite='all_pairs')": 0.75, "SupportR(cite='all_pairs')": 0.5, "ArgueP": 0.5, "ArgueR": 1 / 3},
}
PASSWORDS = {"boss": "boss-password-1", "alice": "alice-password-1", "bob": "bob-password-1",
             "carol": "carol-password-1"}


def write_project(directory: Path, name: str = "sky", **extra) -> Path:
    """The project's input files and its configuration; returns the configuration path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in ANSWERS))
    (directory / "docs.jsonl").write_text("".join(json.dumps({"docno": d, "text": t}) + "\n" for d, t in DOCS.items()))
    (directory / "nuggets.jsonl").write_text(json.dumps(NUGGETS) + "\n")
    for run in ("runA", "runB"):  # one support file per run (the support JSONL reader keys lines by topic)
        (directory / f"llm.{run}.support.jsonl").write_text(
            "".join(json.dumps(j) + "\n" for j in LLM_SUPPORT if j["run_id"] == run))
    (directory / "pool.qrels").write_text(POOL_QRELS)
    config = {"name": name, "answers": ["answers.jsonl"], "documents": "docs.jsonl", "pool": ["pool.qrels"],
              "nuggets": "nuggets.jsonl", "support": {"runA": "llm.runA.support.jsonl", "runB": "llm.runB.support.jsonl"},
              **extra}
    path = directory / f"{name}.json"
    path.write_text(json.dumps(config))
    return path


def cheap_passwords():
    """Cheap Argon2 parameters, passed explicitly to the stores and servers of the tests (never the tool's)."""
    from pyterrier_nuggets.annotate.auth import Passwords
    return Passwords.insecure_for_tests()


def form_id() -> str:
    return secrets.token_hex(16)


def make_project(tmp: Path, name: str = "sky", users: tuple = ("boss", "alice", "bob"), **extra):
    """A project directory with its users: boss (manager); alice, bob, carol (annotators; carol has no topic)."""
    from pyterrier_nuggets.annotate import init_project
    store = init_project(str(write_project(tmp / f"{name}-input", name, **extra)), str(tmp / name),
                         passwords=cheap_passwords())
    for user in users:
        store.add_user(user, "manager" if user == "boss" else "annotator", PASSWORDS[user])
        if user in ("alice", "bob"):
            store.assign_topics(user, ["t1"])
    return store


def annotate_by_api(store) -> None:
    """Carry out the plan through the protocol functions, one form per page as the browser sends them: alice
    stages 1 and 3, boss stage 2, bob stage 4."""
    from pyterrier_nuggets.annotate import protocol as p
    users = {u["name"]: u for u in store.users()}

    def nuggets():
        with store.read() as c:
            return {n["text"]: n for n in p._nuggets(c, "t1")}

    with store.read() as c:
        position = {r["docno"]: r["position"] for r in c.execute("SELECT docno, position FROM pool WHERE qid = 't1'")}
        reports = {r["run_id"]: r["id"] for r in c.execute("SELECT id, run_id FROM reports")}
    alice, boss, bob = users["alice"], users["boss"], users["bob"]
    for step in STAGE1:
        d = position[step["docno"]]
        form = p.DocumentForm(form_id(), done=True, relevance=p.Edit("relevance", d, 0, p.fingerprint(None),
                                                                     (step["grade"],)))
        for question, answer in step.get("answers", {}).items():
            n = nuggets()[question]["id"]
            form.new_answers.append((f"answer-{n}", n, answer))
        if "links" in step:
            form.links = {a["id"] for n in nuggets().values() for a in n["answers"] if a["text"] in step["links"]}
        if "new" in step:
            form.new_nugget = step["new"]
        p.save_document(store, alice, 0, 1, d, form)
    old, new = STAGE2["reword"]
    revision = p.RevisionForm(form_id(), freeze=True)
    for text, n in nuggets().items():
        importance = STAGE2["importance"].get(text, n["importance"])
        revision.nuggets.append(p.NuggetChange(f"n-{n['id']}", n["id"], n["version"], n["fingerprint"],
                                               new if text == old else text, importance))
    p.save_revision(store, boss, 0, revision)
    for d in sorted(position.values()):
        view = p.document_view(store, alice, 0, 3, d)
        labels = [p.Edit(f"label-{c['report_id']}-{c['sentence']}-{c['k']}", (c["report_id"], c["sentence"], c["k"]),
                         c["version"], c["fingerprint"], (STAGE3[c["run_id"], c["sentence"], c["k"]],))
                  for c in view["citing"]]
        p.save_document(store, alice, 0, 3, d, p.DocumentForm(form_id(), done=True, labels=labels))
    by_text = nuggets()
    for run, rid in reports.items():
        view = p.report_view(store, bob, 0, rid)
        form = p.AlignmentForm(form_id(), done=True)
        for s in view["sentences"]:
            content, texts, missing = STAGE4[run, s["idx"]]
            form.rows[s["idx"]] = (content, {by_text[t]["id"] for t in texts}, missing, s["version"], s["fingerprint"])
        p.save_alignment(store, bob, 0, rid, form)


# ----------------------------------------------------------------------------------- live server

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def live_server(directories: list[str], **options):
    """uvicorn serving the projects on 127.0.0.1 in a thread; yields the base URL."""
    with live_app(directories, **options) as (base, _):
        yield base


@contextmanager
def live_app(directories: list[str], **options):
    """uvicorn serving the projects on 127.0.0.1 in a thread, with the tests' cheap passwords unless
    ``options`` say otherwise (``make_app``'s options); yields the base URL and the annotation App."""
    import uvicorn

    from pyterrier_nuggets.annotate.web import make_app, server_config
    port = free_port()
    app = make_app(directories, **{"passwords": cheap_passwords(), **options})
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, "warning"))  # as serve() configures it
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the annotation server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", app.state.annotate
    finally:
        server.should_exit = True
        thread.join(10)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Client:
    """An HTTP client with its own cookies that does not follow redirects (tests look at them)."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect)
        self.csrf = ""
        self.headers = None  # the last response's headers

    def request(self, path: str, data: dict | list | None = None, headers: dict | None = None):
        body = urllib.parse.urlencode(data, doseq=True).encode() if data is not None else None
        req = urllib.request.Request(self.base + path, data=body, headers=headers or {})
        try:
            with self.opener.open(req, timeout=60) as r:
                status, text, location, self.headers = r.status, r.read().decode(), r.headers.get("location"), r.headers
        except urllib.error.HTTPError as e:
            status, text, location, self.headers = e.code, e.read().decode(), e.headers.get("location"), e.headers
        token = re.search(r'name="csrf" value="([^"]+)"', text)
        if token:
            self.csrf = token.group(1)
        return status, text, location

    def get(self, path: str):
        return self.request(path)

    def post(self, path: str, data: dict | list, csrf: bool = True):
        if csrf:
            data = ([("csrf", self.csrf)] + list(data)) if isinstance(data, list) else {"csrf": self.csrf, **data}
        return self.request(path, data)

    def login(self, project: str, name: str, password: str | None = None, address: str | None = None):
        """Sign in from this browser (``address``: the client address a trusted proxy saw, X-Forwarded-For)."""
        self.get(f"/p/{project}/login")
        return self.request(f"/p/{project}/login", {"csrf": self.csrf, "name": name, "password": password or PASSWORDS[name]},
                            headers={"X-Forwarded-For": address} if address else None)

    def cookie(self, name: str):
        """This browser's cookie ``name`` (a ``http.cookiejar.Cookie``), or None."""
        return next((c for c in self.jar if c.name == name), None)


class _Fields(HTMLParser):
    """The fields a browser would send for one form of a page (the form's own inputs and those outside it
    with ``form="ID"``): text and hidden inputs with their value, checked checkboxes and radios, selected
    options, text areas."""

    def __init__(self, form_id: str):
        super().__init__()
        self.form_id, self.fields, self._in_form, self._select = form_id, [], False, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self._in_form = a.get("id") == self.form_id
            return
        mine = a.get("form") == self.form_id or (self._in_form and "form" not in a)
        if tag == "input" and mine and a.get("name") and a.get("type") not in ("submit", "button"):
            if a.get("type") in ("checkbox", "radio"):
                if "checked" in a:
                    self.fields.append((a["name"], a.get("value", "on")))
            else:
                self.fields.append((a["name"], a.get("value") or ""))
        elif tag == "select" and mine:
            self._select = [a.get("name"), None]
        elif tag == "option" and self._select is not None and ("selected" in a or self._select[1] is None):
            self._select[1] = a.get("value")

    def handle_endtag(self, tag):
        if tag == "form":
            self._in_form = False
        elif tag == "select" and self._select is not None:
            self.fields.append(tuple(self._select))
            self._select = None


def form_fields(page: str, form_id: str) -> list[tuple[str, str]]:
    """The fields of form ``form_id`` of an HTML page, as a browser would send them without changes."""
    parser = _Fields(form_id)
    parser.feed(page)
    return parser.fields


def with_fields(fields: list[tuple[str, str]], changes: dict | None = None, drop: tuple = (), add: list | None = None):
    """``fields`` with ``changes`` (name -> value, replacing every field of that name), without the names in
    ``drop``, plus ``add``."""
    changes = changes or {}
    out = [(k, v) for k, v in fields if k not in changes and k not in drop]
    return out + list(changes.items()) + list(add or [])


# ---------------------------------------------------------------------------- sign-ins held at the gate

class GatedPasswords:
    """The tests' cheap passwords; with ``hold`` set, each verification waits until the test lets one go
    (``release``), and the passwords are recorded in the order their checks start (``started``). ``open`` lets
    every check go; setting ``hold`` again holds the next ones and records from there."""

    def __init__(self):
        self.inner, self.started, self._hold = cheap_passwords(), queue.Queue(), False
        self._go = threading.Semaphore(0)

    @property
    def hold(self) -> bool:
        return self._hold

    @hold.setter
    def hold(self, value: bool) -> None:
        if value and not self._hold:
            self._go, self.started = threading.Semaphore(0), queue.Queue()
        self._hold = value

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def verify(self, pw_hash, password):
        go = self._go
        if self._hold:
            self.started.put(password)
            go.acquire()
        return self.inner.verify(pw_hash, password)

    def next_started(self) -> str:
        return self.started.get(timeout=60)  # a bound for a broken server, never reached by a working one

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self._go.release()

    def open(self) -> None:
        self._hold = False
        self.release(1000)


def until(condition, what: str) -> None:
    """Wait for a state of the server the test brought about (a bound for a broken server only)."""
    deadline = time.time() + 60
    while not condition():
        assert time.time() < deadline, what
        time.sleep(0.01)


def flood(base, names, addresses, password="not-the-password", browser=None):
    """Sign-ins sent at once, one per (name, address) through the trusted proxy (X-Forwarded-For), each from a
    browser of its own (carrying the browser token ``browser``, a cookie, when given); returns the threads and
    the list their statuses go into."""
    statuses: list[int] = []
    clients = []
    for name, address in zip(names, addresses):
        c = Client(base)
        if browser is not None:
            c.jar.set_cookie(browser)
        c.get("/p/sky/login")
        clients.append((c, name, address))

    def go(c, name, address):
        statuses.append(c.request("/p/sky/login", {"csrf": c.csrf, "name": name, "password": password},
                                  headers={"X-Forwarded-For": address})[0])

    threads = [threading.Thread(target=go, args=client) for client in clients]
    for t in threads:
        t.start()
    return threads, statuses


def sign_in_thread(client, name, password, address):
    """One sign-in from ``client`` in a thread (the login page first); returns the thread and a dict that gets
    its ``status``."""
    result = {}
    client.get("/p/sky/login")
    thread = threading.Thread(target=lambda: result.update(status=client.request(
        "/p/sky/login", {"csrf": client.csrf, "name": name, "password": password},
        headers={"X-Forwarded-For": address})[0]))
    thread.start()
    return thread, result
