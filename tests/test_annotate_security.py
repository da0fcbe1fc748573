"""The annotation tool's server over HTTP (uvicorn on 127.0.0.1, a free port): access control, CSRF, escaping,
forms sent twice, ids out of range, body size, and the limits on guessing passwords (the throttle counts
before the hash, the hash gate caps concurrent hashes, the throttle's memory is bounded, trusted proxies).
Deterministic: responses are counted, never timed."""
import http.client
import json
import threading
import time
import tracemalloc

import pytest

from tests.annotate_project import (
    DOCS,
    PASSWORDS,
    XSS_IMG,
    XSS_SCRIPT,
    Client,
    cheap_passwords,
    form_fields,
    live_app,
    live_server,
    make_project,
    needs_annotate,
    with_fields,
)

pytestmark = needs_annotate


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    a = make_project(tmp, "sky", users=("boss", "alice", "bob", "carol"))
    b = make_project(tmp, "other", users=("boss", "alice"))
    b.set_password("alice", "alice-in-other-project")
    with live_server([a.directory, b.directory]) as base:
        yield base, a, b


def _count(store, sql):
    with store.read() as c:
        return c.execute(sql).fetchone()[0]


def test_unauthenticated_access(served):
    base, store, _ = served
    c = Client(base)
    for path in ("/p/sky/", "/p/sky/t/0/s1", "/p/sky/t/0/s1/d/0", "/p/sky/t/0/s2", "/p/sky/t/0/s4/r/1",
                 "/p/sky/users", "/p/sky/audit", "/p/sky/missing", "/p/sky/account"):
        status, text, location = c.get(path)
        assert status == 303 and location == f"/p/sky/login?next={path}", path  # back to the page after sign-in
        assert DOCS["d1"] not in text
    status, text, _ = c.post("/p/sky/t/0/s1/d/0", {"question": "q", "qanswer": "a"}, csrf=False)
    assert status == 401 and "Your session has ended" in text and DOCS["d1"] not in text
    assert _count(store, "SELECT count(*) FROM nuggets WHERE text = 'q'") == 0
    assert c.get("/p/nope/")[0] == 404


def test_the_index_lists_no_project_and_links_home(served):
    base, _, _ = served
    status, text, _ = Client(base).get("/")
    assert status == 200 and "/p/sky/" not in text and "/p/other/" not in text and "<code>/p/PROJECT/</code>" in text
    assert 'href="//"' not in text and 'class="brand" href="/"' in text
    status, text, _ = Client(base).get("/p/sky/login")
    assert 'class="brand" href="/p/sky/"' in text


def test_no_cross_project_reads_or_writes(served):
    base, _, other = served
    c = Client(base)
    assert c.login("sky", "alice")[0] == 303
    status, text, _ = c.get("/p/sky/t/0/s1/d/0")
    assert status == 200 and DOCS["d1"] in text
    # the session of project sky opens nothing of project other, whatever the URL
    status, _, location = c.get("/p/other/t/0/s1/d/0")
    assert status == 303 and location.startswith("/p/other/login")
    token = next(ck.value for ck in c.jar if ck.name == "pn_session")
    forged = c.request("/p/other/t/0/s1/d/0", headers={"Cookie": f"pn_session={token}"})
    assert forged[0] == 303
    write = c.request("/p/other/t/0/s1/d/0", {"csrf": c.csrf, "question": "q", "qanswer": "a"},
                      headers={"Cookie": f"pn_session={token}"})
    assert write[0] == 401
    assert _count(other, "SELECT count(*) FROM nuggets WHERE origin = 'annotator'") == 0
    # the same name in the other project has its own password
    assert Client(base).login("other", "alice", PASSWORDS["alice"])[0] == 401


def test_roles_and_topics(served):
    base, _, _ = served
    carol = Client(base)
    assert carol.login("sky", "carol")[0] == 303
    status, text, _ = carol.get("/p/sky/")
    assert "No topic is assigned to you" in text
    assert carol.get("/p/sky/t/0/s1/d/0")[0] == 403
    assert carol.post("/p/sky/t/0/s1/d/0", {"question": "q", "qanswer": "a"})[0] == 403
    alice = Client(base)
    alice.login("sky", "alice")
    assert alice.get("/p/sky/t/0/s2")[0] == 403  # the manager's stage
    for page in ("/p/sky/users", "/p/sky/audit", "/p/sky/missing"):
        assert alice.get(page)[0] == 403, page
    assert alice.post("/p/sky/users", {"form_id": "x" * 32, "base-user-4": "0:x", "topics-4": "t1"})[0] == 403
    assert alice.post("/p/sky/t/0/s2/unfreeze", {"form_id": "x" * 32})[0] == 403


def test_csrf(served):
    base, store, _ = served
    c = Client(base)
    c.login("sky", "alice")
    c.get("/p/sky/t/0/s1/d/0")
    for data in ({"question": "forged", "qanswer": "x"}, {"csrf": "wrong", "question": "forged", "qanswer": "x"}):
        status, text, _ = c.post("/p/sky/t/0/s1/d/0", data, csrf=False)
        assert status == 403 and "CSRF" in text
    assert _count(store, "SELECT count(*) FROM nuggets WHERE text = 'forged'") == 0
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
    from pyterrier_nuggets.annotate import protocol
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


def test_a_refused_form_is_shown_again_with_the_field_named(served):
    """Nothing of a refused form is saved; the page comes back (400) with everything typed and the message at
    the field (not an error page with only Back)."""
    base, store, _ = served
    before = _count(store, "SELECT count(*) FROM nugget_answers")  # the project is shared by this module's tests
    c = Client(base)
    c.login("sky", "alice")
    _, page, _ = c.get("/p/sky/t/0/s1/d/1")
    sent = with_fields(form_fields(page, "doc"), {"question": "Why are sunsets red?", "qanswer": "   "},
                       add=[("answer-1", "an answer typed before the error")])
    status, text, _ = c.post("/p/sky/t/0/s1/d/1", sent, csrf=False)
    assert status == 400
    assert 'id="form-error"' in text and "the new nugget&#39;s answer is empty" in text and 'href="#f-qanswer"' in text
    assert 'id="error-qanswer"' in text and 'value="Why are sunsets red?"' in text
    assert 'value="an answer typed before the error"' in text
    assert _count(store, "SELECT count(*) FROM nugget_answers") == before


def test_a_form_sent_twice_is_saved_once_over_http(served):
    base, store, _ = served
    c = Client(base)
    c.login("sky", "bob")
    _, page, _ = c.get("/p/sky/t/0/s1/d/3")
    sent = with_fields(form_fields(page, "doc"), {"question": "Twice?", "qanswer": "once"})
    first = c.post("/p/sky/t/0/s1/d/3", sent, csrf=False)
    second = c.post("/p/sky/t/0/s1/d/3", sent, csrf=False)  # Back, then send the same form again
    assert first[0] == second[0] == 303 and second[2].endswith("?notice=duplicate")
    assert "saved already" in c.get(second[2])[1]
    assert _count(store, "SELECT count(*) FROM nuggets WHERE text = 'Twice?'") == 1


def test_two_annotators_save_the_same_item_concurrently(served):
    base, store, _ = served
    from pyterrier_nuggets.annotate import protocol
    alice, bob = Client(base), Client(base)
    alice.login("sky", "alice")
    bob.login("sky", "bob")
    pages = {"alice": alice.get("/p/sky/t/0/s1/d/0")[1], "bob": bob.get("/p/sky/t/0/s1/d/0")[1]}
    user = {u["name"]: u for u in store.users()}["alice"]
    n = protocol.document_view(store, user, 0, 1, 0)["nuggets"][0]
    results = {}

    def save(who, client, text):
        sent = with_fields(form_fields(pages[who], "doc"), {f"qtext-{n['id']}": text})
        results[who] = client.post("/p/sky/t/0/s1/d/0", sent, csrf=False)

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


def test_ids_beyond_64_bits_are_404_or_400(served):
    base, store, _ = served
    c = Client(base)
    c.login("sky", "boss")
    huge = "99999999999999999999"
    for path in (f"/p/sky/t/{huge}/s1", f"/p/sky/t/0/s1/d/{huge}", f"/p/sky/t/0/s4/r/{huge}", f"/p/sky/t/{huge}/s2",
                 "/p/sky/t/9223372036854775808/s1"):
        assert c.get(path)[0] == 404, path
    assert c.get(f"/p/sky/audit?before={huge}")[0] == 400
    _, page, _ = c.get("/p/sky/t/0/s1/d/0")
    fields = form_fields(page, "doc")
    for sent in (with_fields(fields, add=[(f"answer-{huge}", "x")]), with_fields(fields, add=[("link", huge)]),
                 with_fields(fields, {"base-relevance": f"{huge}:abc"})):
        status, text, _ = c.post("/p/sky/t/0/s1/d/0", sent, csrf=False)
        assert status == 400 and "2^63" in text
    assert c.get("/p/sky/")[0] == 200  # the server is fine


def test_a_body_above_the_limit_is_refused(served):
    """A request announcing more than 1 MiB is answered 413 before its body is read."""
    base, _, _ = served
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("POST", "/p/sky/login")
    conn.putheader("Content-Type", "application/x-www-form-urlencoded")
    conn.putheader("Content-Length", str(2 * 1024 * 1024))
    conn.endheaders()
    assert conn.getresponse().status == 413
    conn.close()


def test_wrong_password_and_unknown_user_look_the_same(tmp_path):
    """Same page, and the same work: one Argon2 verification each, with the same parameters (counted, not
    timed)."""
    store = make_project(tmp_path)
    passwords = cheap_passwords()
    with live_app([store.directory], passwords=passwords) as (base, app):
        bodies, work = set(), []
        for name in ("mallory", "alice", "mallory", "alice"):
            c = Client(base)
            before = passwords.verifications
            status, text, _ = c.login("sky", name, "not-the-password")
            work.append(passwords.verifications - before)
            assert status == 401
            bodies.add(text.replace(c.csrf, ""))
    assert len(bodies) == 1 and "Unknown user or wrong password." in bodies.pop()
    assert work == [1, 1, 1, 1]
    with store.read() as c:
        real = c.execute("SELECT pw_hash FROM users WHERE name = 'alice'").fetchone()[0]
    assert passwords.dummy_hash().split("$")[3] == real.split("$")[3]  # m=, t=, p=: the same parameters


def test_login_throttle_counts_attempts_in_a_window():
    from pyterrier_nuggets.annotate.auth import LoginThrottle
    now = [1000.0]
    throttle = LoginThrottle(limit=3, window=60.0, now=lambda: now[0])
    for _ in range(3):
        assert throttle.attempt("sky", "127.0.0.1", "alice") == 0  # counted before any password check
        now[0] += 10  # attempts at 1000, 1010, 1020
    assert throttle.attempt("sky", "127.0.0.1", "alice") == pytest.approx(30.0)  # the first leaves at 1060
    assert throttle.wait("sky", "10.0.0.2", "alice") == 0  # another client, and another name, are not held
    assert throttle.wait("sky", "127.0.0.1", "bob") == 0
    now[0] = 1061.0
    assert throttle.attempt("sky", "127.0.0.1", "alice") == 0  # two left in the window, and this one
    assert throttle.wait("sky", "127.0.0.1", "alice") > 0
    throttle.succeeded("sky", "127.0.0.1", "alice")
    assert throttle.wait("sky", "127.0.0.1", "alice") == 0
    throttle.attempt("sky", "127.0.0.1", "bob")
    throttle.cancel("sky", "127.0.0.1", "bob")  # not checked (server busy): not counted
    assert len(throttle.names) == 0


def test_the_throttle_memory_is_bounded():
    """Whatever is sent, the throttle keeps at most max_keys keys of each kind, a 16-byte digest per name (never
    the name) and at most `limit` times per key; one address cannot flood it (address_limit)."""
    from pyterrier_nuggets.annotate.auth import LoginThrottle
    throttle = LoginThrottle(limit=10, address_limit=100, max_keys=500)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    name = "n" * 200_000  # 200 kB names, as the test sent
    for i in range(2_000):
        throttle.attempt("sky", f"10.0.{i // 250}.{i % 250}", name + str(i))
    for _ in range(50):
        throttle.attempt("sky", "10.9.9.9", name)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(throttle.names) <= 500 and len(throttle.addresses) <= 500
    assert all(len(key[2]) == 16 for key in throttle.names) and all(len(t) <= 10 for t in throttle.names.values())
    keys = len(throttle.names) + len(throttle.addresses)
    assert grown < 1_500 * keys, grown  # about 1.2 kB a key, whatever the names' size (400 MB were sent)
    one = LoginThrottle(limit=10, address_limit=100)
    allowed = sum(one.attempt("sky", "10.0.0.1", f"name{i}") == 0 for i in range(1_000))
    assert allowed == 100 and len(one.names) == 100  # one address fills at most address_limit keys


class SlowPasswords:
    """The tests' cheap passwords, each verification held for a while, so that concurrent sign-ins overlap."""

    def __init__(self, seconds: float):
        self.inner, self.seconds = cheap_passwords(), seconds

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def verify(self, pw_hash, password):
        time.sleep(self.seconds)
        return self.inner.verify(pw_hash, password)


def _concurrently(base: str, name: str, n: int, password: str = "not-the-password") -> list[int]:
    clients = [Client(base) for _ in range(n)]
    for c in clients:
        c.get("/p/sky/login")
    start = threading.Barrier(n)
    statuses: list[int] = []

    def go(c):
        start.wait()
        statuses.append(c.post("/p/sky/login", {"name": name, "password": password})[0])

    threads = [threading.Thread(target=go, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def test_30_concurrent_wrong_passwords_get_429_after_the_limit(tmp_path):
    """30 wrong passwords for one user sent at once: exactly 10 are checked (401), 20 refused without a check
    (429); at most 2 hashes ran at once (each the hash's memory: 64 MiB with the tool's parameters)."""
    store = make_project(tmp_path)
    passwords = SlowPasswords(0.05)
    with live_app([store.directory], passwords=passwords) as (base, app):
        statuses = _concurrently(base, "alice", 30)
        assert sorted(statuses) == [401] * 10 + [429] * 20
        assert passwords.inner.verifications == 10  # counted before the hash: no guess slipped past the limit
        assert app.gate.peak_active <= app.gate.concurrent == 2
        assert Client(base).login("sky", "bob")[0] == 303  # another name signs in
        assert Client(base).login("sky", "alice")[0] == 429  # even the right password, for 15 minutes
    assert len(app.throttle.names) <= app.throttle.max_keys


def test_the_hash_gate_queues_a_few_and_refuses_the_rest(tmp_path):
    """Sign-ins beyond the concurrent hashes and the queue are answered 503 at once and not counted."""
    from pyterrier_nuggets.annotate.auth import HashGate
    store = make_project(tmp_path)
    passwords = SlowPasswords(1.0)
    gate = HashGate(concurrent=1, waiting=0)
    with live_app([store.directory], passwords=passwords, gate=gate) as (base, app):
        first = Client(base)
        first.get("/p/sky/login")
        result = {}
        thread = threading.Thread(target=lambda: result.update(first=first.post(
            "/p/sky/login", {"name": "alice", "password": "wrong-password"})[0]))
        thread.start()
        deadline = time.time() + 20
        while gate.active == 0 and time.time() < deadline:
            time.sleep(0.01)
        status, text, _ = Client(base).login("sky", "bob")  # while alice's check runs: no room
        thread.join()
    assert status == 503 and "busy" in text and result["first"] == 401
    assert gate.peak_active == 1 and passwords.inner.verifications == 1
    assert app.throttle.wait("sky", "127.0.0.1", "bob") == 0 and ("sky", "127.0.0.1") in app.throttle.addresses


def test_forwarded_for_counts_only_behind_a_trusted_proxy(tmp_path):
    """Behind a reverse proxy every request comes from the proxy's address: with --forwarded-allow-ips the
    client's address (X-Forwarded-For) is counted, so one guesser does not lock a user out for everyone.
    Without the option the header is ignored, so a client cannot dodge the throttle by claiming addresses."""
    store = make_project(tmp_path)

    def sign_in(base, address, password="not-the-password", name="alice"):
        c = Client(base)
        c.get("/p/sky/login")
        return c.request("/p/sky/login", {"csrf": c.csrf, "name": name, "password": password},
                         headers={"X-Forwarded-For": address})[0]

    with live_server([store.directory], forwarded_allow_ips="127.0.0.1") as base:
        assert [sign_in(base, "203.0.113.9") for _ in range(11)] == [401] * 10 + [429]
        assert sign_in(base, "198.51.100.7", PASSWORDS["alice"]) == 303  # alice elsewhere is not locked out
    with live_server([store.directory]) as base:  # no trusted proxy: the header changes nothing
        assert [sign_in(base, f"203.0.113.{i}") for i in range(11)] == [401] * 10 + [429]


def test_a_disabled_user_cannot_sign_in_and_loses_their_sessions(served):
    base, store, _ = served
    carol = Client(base)
    assert carol.login("sky", "carol")[0] == 303
    boss = Client(base)
    boss.login("sky", "boss")
    _, page, _ = boss.get("/p/sky/users")
    carol_id = {u["name"]: u["id"] for u in store.users()}["carol"]
    sent = with_fields(form_fields(page, "users-form"), add=[(f"disabled-{carol_id}", "1")])
    assert boss.post("/p/sky/users", sent, csrf=False)[0] == 303
    assert carol.get("/p/sky/")[0] == 303  # her session has ended
    status, text, _ = Client(base).login("sky", "carol")
    assert status == 403 and "disabled" in text
    boss_id = {u["name"]: u["id"] for u in store.users()}["boss"]
    _, page, _ = boss.get("/p/sky/users")
    status, text, _ = boss.post("/p/sky/users", with_fields(form_fields(page, "users-form"), add=[
        (f"disabled-{boss_id}", "1")]), csrf=False)
    assert status == 400 and "you cannot disable yourself" in text
    store.set_disabled("carol", False)


def test_the_audit_trail_is_paged(served):
    base, store, _ = served
    with store.write() as c:
        for i in range(250):
            c.execute("INSERT INTO audit(at, user, action, target, detail) VALUES ('2025', 'test', 'page_test', ?, "
                      "'{}')", (str(i),))
    total = len(store.audit_rows(limit=10_000))
    boss = Client(base)
    boss.login("sky", "boss")
    seen, path = [], "/p/sky/audit"
    while path:
        status, text, _ = boss.get(path)
        assert status == 200
        seen += [int(x) for x in __import__("re").findall(r"<tr><td>(\d+)</td>", text)]
        older = __import__("re").search(r'href="(/p/sky/audit\?before=\d+)" id="older"', text)
        path = older.group(1) if older else None
    assert len(seen) == total + 1 and seen == sorted(seen, reverse=True)  # every row once (+ this login's)


def test_changing_ones_own_password(served):
    base, store, _ = served
    bob = Client(base)
    bob.login("sky", "bob")
    other = Client(base)
    other.login("sky", "bob")
    _, page, _ = bob.get("/p/sky/account")
    sent = with_fields(form_fields(page, "account"), {"current": "wrong-one", "new": "bob-new-password",
                                                     "again": "bob-new-password"})
    status, text, _ = bob.post("/p/sky/account", sent, csrf=False)
    assert status == 400 and "the current password is wrong" in text and 'id="error-current"' in text
    sent = with_fields(form_fields(page, "account"), {"current": PASSWORDS["bob"], "new": "bob-new-password",
                                                     "again": "bob-new-password"})
    status, _, location = bob.post("/p/sky/account", sent, csrf=False)
    assert status == 303 and location.endswith("notice=password")
    assert bob.get("/p/sky/")[0] == 200 and other.get("/p/sky/")[0] == 303  # the other session is closed
    assert Client(base).login("sky", "bob", "bob-new-password")[0] == 303
    store.set_password("bob", PASSWORDS["bob"])


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


def test_a_form_sent_after_the_session_ended_is_kept(served):
    """The session ends while a form is being typed: the sign-in page keeps it, and after signing in the user
    is back on the form's page with what they typed, not yet saved."""
    base, store, _ = served
    alice = Client(base)
    alice.login("sky", "alice")
    _, page, _ = alice.get("/p/sky/t/0/s1/d/2")
    sent = with_fields(form_fields(page, "doc"), {"question": "Typed before the session ended?", "qanswer": "yes"})
    with store.write() as c:
        c.execute("DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE name = 'alice')")
    status, text, _ = alice.post("/p/sky/t/0/s1/d/2", sent, csrf=False)
    assert status == 401 and "Your session has ended" in text
    login = form_fields(text, "login")
    assert dict(login)["next"] == "/p/sky/t/0/s1/d/2" and "Typed before the session ended?" in dict(login)["draft"]
    status, _, location = alice.post("/p/sky/login", with_fields(login, {"name": "alice", "password": PASSWORDS["alice"]}),
                                     csrf=False)
    assert status == 303 and location == "/p/sky/t/0/s1/d/2"
    status, text, _ = alice.get(location)
    assert status == 200 and "here is what you typed, not saved yet" in text
    assert 'value="Typed before the session ended?"' in text
    assert _count(store, "SELECT count(*) FROM nuggets WHERE text = 'Typed before the session ended?'") == 0
    assert 'value="Typed before the session ended?"' not in alice.get(location)[1]  # shown once
    # a "next" elsewhere is never followed
    for bad in ("https://evil.example/", "//evil.example/p/sky/", "/p/other/", "/p/sky/login"):
        c = Client(base)
        c.get("/p/sky/login")
        assert c.post("/p/sky/login", {"name": "alice", "password": PASSWORDS["alice"], "next": bad})[2] == "/p/sky/"


def test_missing_questions_page(tmp_path):
    from tests.annotate_project import annotate_by_api
    store = make_project(tmp_path)
    annotate_by_api(store)
    with live_server([store.directory]) as base:
        boss = Client(base)
        boss.login("sky", "boss")
        status, page, _ = boss.get("/p/sky/missing")
        assert status == 200 and "Do people like the colour blue?" in page
        (key,) = [v for k, v in form_fields(page, "missing") if k == "flag"]
        sent = with_fields(form_fields(page, "missing"), {f"status-{key}": "accepted", f"note-{key}": "a real gap"})
        assert boss.post("/p/sky/missing", sent, csrf=False)[0] == 303
        assert "1/1 missing questions" not in boss.get("/p/sky/")[1]
    from pyterrier_nuggets.annotate import export_project
    export_project(store.directory, str(tmp_path / "out"))
    (flag,) = [json.loads(x) for x in (tmp_path / "out" / "missing_questions.jsonl").read_text().splitlines()]
    assert (flag["review"], flag["review_note"], flag["reviewed_by"]) == ("accepted", "a real gap", "boss")
