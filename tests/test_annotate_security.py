"""The annotation tool's server over HTTP (uvicorn on 127.0.0.1, a free port): access control, CSRF, escaping,
forms sent twice or changed under a used id, drafts kept over a sign-in (only from the tool's own page, only
for their user, never a password), ids out of range, body size, security headers on every error, sessions, and
the limits on guessing passwords (the throttle counts before the hash and keeps counting a refused attempt, the
hash gate caps concurrent hashes and serves a legitimate sign-in before a flood, the throttle's memory is
bounded, the trusted proxy's own address). Deterministic: responses are counted, never timed; where requests
must overlap, the password checks wait until the test lets them go."""
import asyncio
import http.client
import json
import threading
import tracemalloc
from contextlib import contextmanager

import pytest

from tests.annotate_project import (
    DOCS,
    PASSWORDS,
    XSS_IMG,
    XSS_SCRIPT,
    Client,
    GatedPasswords,
    cheap_passwords,
    flood,
    form_fields,
    live_app,
    live_server,
    make_project,
    needs_annotate,
    sign_in_thread,
    until,
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
    c = Client(base)
    c.login("sky", "alice")
    _, page, _ = c.get("/p/sky/t/0/s1/d/1")
    sent = with_fields(form_fields(page, "doc"), {"question": "Why are sunsets red?", "qanswer": "   "},
                       add=[("answer-1", "an answer typed before the error")])
    answers = _count(store, "SELECT count(*) FROM nugget_answers")  # other tests of this server may add some
    status, text, _ = c.post("/p/sky/t/0/s1/d/1", sent, csrf=False)
    assert status == 400
    assert 'id="form-error"' in text and "the new nugget&#39;s answer is empty" in text and 'href="#f-qanswer"' in text
    assert 'id="error-qanswer"' in text and 'value="Why are sunsets red?"' in text
    assert 'value="an answer typed before the error"' in text
    assert _count(store, "SELECT count(*) FROM nugget_answers") == answers


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


def test_wrong_password_unknown_user_and_disabled_account_look_the_same(tmp_path):
    """Same answer, and the same work: one Argon2 verification each, with the same parameters (counted, not
    timed). A disabled account answers its right password as a wrong one: no oracle of its password."""
    store = make_project(tmp_path, users=("boss", "alice", "bob", "carol"))
    store.set_disabled("carol", True)
    passwords = cheap_passwords()
    with live_app([store.directory], passwords=passwords) as (base, app):
        bodies, work = set(), []
        for name, password in (("mallory", "not-the-password"), ("alice", "not-the-password"),
                               ("carol", "not-the-password"), ("carol", PASSWORDS["carol"]),
                               ("mallory", "not-the-password"), ("alice", "not-the-password")):
            c = Client(base)
            before = passwords.verifications
            status, text, _ = c.login("sky", name, password)
            work.append(passwords.verifications - before)
            assert status == 401, name
            bodies.add(text.replace(c.csrf, ""))
    assert len(bodies) == 1 and "Unknown user, wrong password, or a disabled account." in bodies.pop()
    assert work == [1] * 6
    with store.read() as c:
        real = c.execute("SELECT pw_hash FROM users WHERE name = 'alice'").fetchone()[0]
    assert passwords.dummy_hash().split("$")[3] == real.split("$")[3]  # m=, t=, p=: the same parameters


def test_login_throttle_counts_attempts_in_a_window():
    from pyterrier_nuggets.annotate.auth import LoginThrottle
    now = [1000.0]
    throttle = LoginThrottle(limit=3, window=60.0, now=lambda: now[0])
    for _ in range(3):
        assert throttle.admit("sky", "127.0.0.1", "alice").wait == 0  # charged before any password check
        now[0] += 10  # attempts at 1000, 1010, 1020
    assert throttle.admit("sky", "127.0.0.1", "alice").wait == pytest.approx(30.0)  # the first leaves at 1060
    assert throttle.wait("sky", "10.0.0.2", "alice") == 0  # another client, and another name, are not held
    assert throttle.wait("sky", "127.0.0.1", "bob") == 0
    now[0] = 1061.0
    attempt = throttle.admit("sky", "127.0.0.1", "alice")  # two left in the window, and this one
    assert attempt.wait == 0 and throttle.wait("sky", "127.0.0.1", "alice") > 0
    assert throttle.pending("sky", "127.0.0.1") == 3  # the address's failed or running checks in the window
    throttle.succeeded(attempt)
    assert throttle.wait("sky", "127.0.0.1", "alice") == 0 and throttle.pending("sky", "127.0.0.1") == 2
    assert len(throttle.names) == 0 and throttle.pending("sky", "10.0.0.2") == 0
    turned_away = throttle.admit("sky", "10.0.0.2", "alice")
    throttle.turned_away(turned_away)  # never checked: nothing of it is charged
    assert throttle.pending("sky", "10.0.0.2") == 0 and throttle.tried.count(("sky", throttle._digest("alice")), 0) == 4


def test_the_throttle_ranks_and_exempts_a_known_browser_a_few_times():
    """The rank of a sign-in: a known browser first (its token and its name each PRIORITY_LIMIT times in the window,
    successes included), exempt from the budgets of its address and name; then the address's failed or running
    checks, the name's attempts from anywhere in tens, and the network's failed or running checks."""
    from pyterrier_nuggets.annotate.auth import LoginThrottle
    now = [1000.0]
    throttle = LoginThrottle(limit=2, window=60.0, address_limit=3, priority_limit=2, now=lambda: now[0])
    for name in ("x", "y", "z"):
        throttle.admit("sky", "192.0.2.9", name)  # the address's budget is spent
    assert throttle.admit("sky", "192.0.2.9", "alice").wait > 0  # a new browser there is refused
    first = throttle.admit("sky", "192.0.2.9", "alice", browser="token-1")
    assert first.wait == 0 and first.priority and first.rank == (0, 1)
    throttle.succeeded(first)  # successes count too
    second = throttle.admit("sky", "192.0.2.9", "alice", browser="token-2")  # another token of the same name
    assert second.priority and second.rank == (0, 2)
    assert not throttle.admit("sky", "198.51.100.1", "alice", browser="token-3").priority  # the name's few are spent
    now[0] += 61
    assert throttle.admit("sky", "192.0.2.9", "alice", browser="token-1").priority  # a new window
    fresh = LoginThrottle(now=lambda: now[0])
    assert fresh.admit("sky", "10.0.0.1", "a").rank == (1, 1, 0, 1)
    assert fresh.admit("sky", "10.0.0.2", "b").rank == (1, 1, 0, 2)  # the same /24: the network's second
    assert fresh.admit("sky", "10.0.0.1", "c").rank == (1, 2, 0, 3)  # the address's second
    for i in range(9):  # a name's attempts from anywhere count in tens: a person's few are 0
        fresh.succeeded(fresh.admit("sky", f"10.{i + 1}.0.1", "a"))
    assert fresh.admit("sky", "10.99.0.1", "a").rank == (1, 1, 1, 1)  # its eleventh


def test_the_throttle_memory_is_bounded():
    """Whatever is sent, the throttle keeps at most max_keys keys of each kind, a 16-byte digest per name (never
    the name) and a bounded number of times per key; one address cannot flood it (address_limit)."""
    from pyterrier_nuggets.annotate.auth import LoginThrottle
    throttle = LoginThrottle(limit=10, address_limit=100, max_keys=500)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    name = "n" * 200_000  # 200 kB names, as a sign-in flood may send
    for i in range(2_000):
        throttle.admit("sky", f"10.{i // 250}.{i % 250}.1", name + str(i))
    for _ in range(50):
        throttle.admit("sky", "10.9.9.9", name)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert all(len(table) <= 500 for table in (throttle.names, throttle.addresses, throttle.networks, throttle.tried))
    assert all(len(key[2]) == 16 for key in throttle.names) and all(len(t) <= 10 for t in throttle.names.values())
    assert all(len(key[1]) == 16 for key in throttle.tried) and all(len(t) <= 40 for t in throttle.tried.values())
    assert grown < 1_500 * len(throttle), grown  # about 1.2 kB a key, whatever the names' size (400 MB were sent)
    one = LoginThrottle(limit=10, address_limit=100)
    allowed = sum(one.admit("sky", "10.0.0.1", f"name{i}").wait == 0 for i in range(1_000))
    assert allowed == 100 and len(one.names) == 100  # one address fills at most address_limit keys


def test_the_waiting_room_serves_a_known_browser_then_the_fewest_attempts():
    """The order of the sign-ins waiting for a password check: rank, then arrival; when the room is full a
    newcomer with a better rank takes the place of the worst waiting one, else it is turned away."""
    from pyterrier_nuggets.annotate.auth import WaitingRoom
    room = WaitingRoom(capacity=3)
    assert room.push((1, 5), "guess 5")[1] is None and room.push((1, 6), "guess 6")[1] is None
    assert room.push((1, 2), "typo")[1] is None
    assert room.push((1, 7), "guess 7") == (None, "guess 7")  # full, and worse than every waiting one
    ticket, away = room.push((0, 0), "known browser")  # full: the worst waiting one is turned away
    assert ticket is not None and away == "guess 6" and len(room) == 3
    assert room.push((1, 2), "second typo")[1] == "guess 5"  # same rank as "typo": after it
    assert [room.pop() for _ in range(4)] == ["known browser", "typo", "second typo", None]
    ticket, _ = room.push((1, 1), "gone")
    room.withdraw(ticket)
    assert len(room) == 0 and room.pop() is None


def test_the_hash_gate_runs_a_few_and_turns_the_worst_away():
    """At most `concurrent` checks run; the waiting ones start in rank order as checks end; a newcomer better
    than the worst waiting one takes its place (that one gets Busy), a worse one gets Busy itself."""
    from pyterrier_nuggets.annotate.auth import Busy, HashGate
    gate = HashGate(concurrent=1, waiting=2)
    started, go = [], {}

    def check(name):
        started.append(name)
        go[name].wait(60)
        return name

    async def main():
        results = {}

        async def sign_in(name, rank):
            go[name] = threading.Event()
            try:
                results[name] = await gate.run(check, name, rank=rank)
            except Busy:
                results[name] = "busy"

        tasks = [asyncio.create_task(sign_in("first", (1, 1)))]
        for name, rank in (("guess a", (1, 4)), ("guess b", (1, 5)), ("guess c", (1, 6)), ("person", (1, 1)),
                           ("known browser", (0, 0))):
            await asyncio.sleep(0)  # the task before has reached the gate
            tasks.append(asyncio.create_task(sign_in(name, rank)))
        await asyncio.sleep(0)
        assert gate.active == 1 and gate.waiting == 2
        for i, name in enumerate(("first", "known browser", "person")):
            while len(started) <= i:  # the check has started in its thread
                await asyncio.sleep(0.001)
            assert started[i] == name
            go[name].set()
        await asyncio.gather(*tasks)
        return results

    results = asyncio.run(main())
    assert started == ["first", "known browser", "person"]  # no guess was checked
    assert results == {"first": "first", "guess a": "busy", "guess b": "busy", "guess c": "busy",
                       "person": "person", "known browser": "known browser"}
    assert gate.active == 0 and gate.waiting == 0 and gate.peak_active == 1


@pytest.mark.parametrize("kind", ["40 addresses", "one address"])
def test_a_correct_password_gets_in_during_a_flood(tmp_path, kind):
    """40 wrong passwords kept in flight (from 40 addresses that have failed before, or from one address) and
    a person signing in from elsewhere: the person's check is the next to start, whatever is queued, and they
    get in; from one address the flood is turned away at once (503), and only its checked guesses are charged to
    that address (a sign-in turned away was not checked: it costs nobody anything, neither the flood nor a
    person). Deterministic: the checks wait until the test lets them go one by one."""
    from pyterrier_nuggets.annotate.auth import HashGate
    store = make_project(tmp_path)
    passwords = GatedPasswords()
    gate = HashGate(concurrent=1, waiting=8)
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        if kind == "40 addresses":
            addresses = [f"203.0.113.{i}" for i in range(40)]
            for address in addresses:  # each has failed once already: the flood has been going on
                c = Client(base)
                c.get("/p/sky/login")
                assert c.request("/p/sky/login", {"csrf": c.csrf, "name": "alice", "password": "wrong-password"},
                                 headers={"X-Forwarded-For": address})[0] == 401
        else:
            addresses = ["203.0.113.9"] * 40
        passwords.hold = True
        threads, statuses = flood(base, [f"guess{i}" for i in range(40)], addresses)
        until(lambda: gate.active + gate.waiting + len(statuses) == 40, "the flood reached the gate")
        first_guess = passwords.next_started()
        assert first_guess == "not-the-password" and gate.waiting == 8
        person, result = sign_in_thread(Client(base), "bob", PASSWORDS["bob"], "198.51.100.7")
        until(lambda: gate.waiting == 8 and len(statuses) == 32, "the person is waiting, the worst guess turned away")
        passwords.release()  # the running guess ends: the next check to start is the person's
        assert passwords.next_started() == PASSWORDS["bob"]
        passwords.open()
        person.join(60)
        for t in threads:
            t.join(60)
    assert result["status"] == 303
    assert sorted(statuses) == [401] * 8 + [503] * 32
    if kind == "one address":  # the 8 checked guesses are charged, the 32 turned away are not
        assert app.throttle.pending("sky", "203.0.113.9") == 8
    assert gate.peak_active == 1


def test_a_browser_that_signed_in_before_goes_first(tmp_path):
    """A flood from fresh addresses ranks like a person's first attempt; a browser in which the person signed in
    before (its browser token, an HttpOnly cookie) goes before all of it."""
    from pyterrier_nuggets.annotate.auth import HashGate
    store = make_project(tmp_path)
    passwords = GatedPasswords()
    gate = HashGate(concurrent=1, waiting=64)
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        known = Client(base)
        assert known.login("sky", "bob")[0] == 303 and any(c.name == "pn_browser" for c in known.jar)
        passwords.hold = True
        threads, statuses = flood(base, [f"guess{i}" for i in range(20)], [f"203.0.113.{i}" for i in range(20)])
        until(lambda: gate.active + gate.waiting == 20, "the flood reached the gate")
        passwords.next_started()
        person, result = sign_in_thread(known, "bob", PASSWORDS["bob"], "198.51.100.7")
        until(lambda: gate.waiting == 20, "the person is waiting")
        passwords.release()
        assert passwords.next_started() == PASSWORDS["bob"]
        passwords.open()
        person.join(60)
        for t in threads:
            t.join(60)
    assert result["status"] == 303 and sorted(statuses) == [401] * 20


def test_30_concurrent_wrong_passwords_get_429_after_the_limit(tmp_path):
    """30 wrong passwords for one user sent at once: exactly 10 are checked (401), 20 refused without a check
    (429); at most 2 hashes ran at once (each the hash's memory: 64 MiB with the tool's parameters)."""
    store = make_project(tmp_path)
    passwords = GatedPasswords()
    passwords.hold = True
    with live_app([store.directory], passwords=passwords) as (base, app):
        threads, statuses = flood(base, ["alice"] * 30, ["ignored"] * 30)
        until(lambda: app.gate.active + app.gate.waiting == 10 and len(statuses) == 20, "all 30 arrived")
        passwords.open()
        for t in threads:
            t.join(60)
        assert sorted(statuses) == [401] * 10 + [429] * 20
        assert passwords.inner.verifications == 10  # counted before the hash: no guess slipped past the limit
        assert app.gate.peak_active == app.gate.concurrent == 2
        assert Client(base).login("sky", "bob")[0] == 303  # another name signs in
        assert Client(base).login("sky", "alice")[0] == 429  # even the right password, for 15 minutes
    assert len(app.throttle.names) <= app.throttle.max_keys


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


@pytest.mark.parametrize("trusted", ["*", "127.0.0.1", "10.0.0.0/8, 127.0.0.0/8"])
def test_a_client_cannot_claim_addresses_behind_the_documented_proxy(tmp_path, trusted):
    """nginx's $proxy_add_x_forwarded_for appends the address it saw to what the client sent: the server takes
    that rightmost entry (the rightmost one that is not a trusted proxy), never the client's own entries, with
    any form of --forwarded-allow-ips, '*' included. 40 guesses with 40 made-up addresses are counted as one
    client's: 10 answered 401, the rest 429."""
    store = make_project(tmp_path)
    with live_server([store.directory], forwarded_allow_ips=trusted) as base:
        statuses = []
        for i in range(40):
            c = Client(base)
            c.get("/p/sky/login")
            statuses.append(c.request("/p/sky/login", {"csrf": c.csrf, "name": "alice", "password": "wrong-password"},
                                      headers={"X-Forwarded-For": f"10.66.{i}.1, 198.51.100.{i}, 203.0.113.9"})[0])
    assert statuses == [401] * 10 + [429] * 30


def test_the_trusted_proxy_address_and_ipv6_networks():
    from pyterrier_nuggets.annotate.auth import client_key
    from pyterrier_nuggets.annotate.web import TrustedProxies
    chain = ["1.2.3.4", "203.0.113.9", "10.0.0.2"]  # client-written, the client seen by the edge, an inner proxy
    assert TrustedProxies(None, "10.0.0.0/8").client(chain) == "203.0.113.9"
    assert TrustedProxies(None, "*").client(chain) == "10.0.0.2"  # one proxy: its own entry, the rightmost
    assert TrustedProxies(None, "10.0.0.2,203.0.113.9").client(chain) == "1.2.3.4"
    assert TrustedProxies(None, "10.0.0.0/8").client(["10.0.0.3", "10.0.0.2"]) == "10.0.0.3"  # only proxies
    with pytest.raises(ValueError, match="forwarded-allow-ips"):
        TrustedProxies(None, "not-an-address")
    # one IPv6 subscriber holds a /64: its addresses count as one client; IPv4-mapped addresses as IPv4
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7" == client_key("192.0.2.7")


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
    assert status == 401 and "Unknown user, wrong password, or a disabled account." in text
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


def _end_sessions(store, name):
    with store.write() as c:
        c.execute("DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE name = ?)", (name,))


def _sign_in_on_login_page(client, page, name):
    """Sign in through the login page a request was answered with (its own form)."""
    return client.post("/p/sky/login", with_fields(form_fields(page, "login"), {"name": name, "password": PASSWORDS[name]}),
                       csrf=False)


def test_a_form_sent_after_the_session_ended_is_kept(served):
    """The session ends while a form is being typed: the form is kept as the user's draft, and after signing in
    the user is back on the form's page with what they typed, not yet saved, the changes listed."""
    base, store, _ = served
    alice = Client(base)
    alice.login("sky", "alice")
    _, page, _ = alice.get("/p/sky/t/0/s1/d/2")
    sent = with_fields(form_fields(page, "doc"), {"question": "Typed before the session ended?", "qanswer": "yes"})
    _end_sessions(store, "alice")
    status, text, _ = alice.post("/p/sky/t/0/s1/d/2", sent, csrf=False)
    assert status == 401 and "Your session has ended" in text and "What you typed is kept" in text
    assert dict(form_fields(text, "login"))["next"] == "/p/sky/t/0/s1/d/2" and "Typed before" not in text
    status, _, location = _sign_in_on_login_page(alice, text, "alice")
    assert status == 303 and location == "/p/sky/t/0/s1/d/2"
    status, text, _ = alice.get(location)
    assert status == 200 and "here is what you typed, not saved yet" in text
    assert 'value="Typed before the session ended?"' in text
    assert "new nugget: question" in text and 'id="draft-changes"' in text  # the draft's changes are listed
    assert _count(store, "SELECT count(*) FROM nuggets WHERE text = 'Typed before the session ended?'") == 0
    assert 'value="Typed before the session ended?"' not in alice.get(location)[1]  # shown once
    # a "next" elsewhere is never followed
    for bad in ("https://evil.example/", "//evil.example/p/sky/", "/p/other/", "/p/sky/login"):
        c = Client(base)
        c.get("/p/sky/login")
        assert c.post("/p/sky/login", {"name": "alice", "password": PASSWORDS["alice"], "next": bad})[2] == "/p/sky/"


@contextmanager
def _users_page(tmp_path):
    """A project served, and its manager signed in on the Users page: (store, user ids, base, client, page)."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base:
        boss = Client(base)
        boss.login("sky", "boss")
        yield store, {u["name"]: u["id"] for u in store.users()}, base, boss, boss.get("/p/sky/users")[1]


def test_a_form_of_another_site_is_never_kept_as_a_draft(tmp_path):
    """A page elsewhere posts a form to the Users page (disable bob, take every topic away): without the draft
    key of the manager's own page in this browser nothing is kept, whether the browser's cookies come along
    (a page on another port of the same host is the same site) or not; the manager signs in to an unchanged
    page. A key copied into another browser, or of another user, is not enough either."""
    with _users_page(tmp_path) as (store, users, base, boss, page):
        real = form_fields(page, "users-form")
        key = dict(real)["draft_key"]
        _end_sessions(store, "boss")
        forged = [("form_id", "0" * 16), (f"base-user-{users['alice']}", dict(real)[f"base-user-{users['alice']}"]),
                  (f"base-user-{users['bob']}", dict(real)[f"base-user-{users['bob']}"]), (f"disabled-{users['bob']}", "1")]
        alice = Client(base)
        alice.login("sky", "alice")
        _, alice_page, _ = alice.get("/p/sky/t/0/s1/d/0")
        attempts = [(boss, forged), (boss, forged + [("draft_key", "1.0123456789abcdef0123456789abcdef")]),
                    (boss, forged + [("draft_key", dict(form_fields(alice_page, "doc"))["draft_key"])]),
                    (Client(base), forged + [("draft_key", key)])]  # the right key, from another browser
        for client, fields in attempts:
            status, text, _ = client.post("/p/sky/users", fields, csrf=False)
            assert status == 401 and "The form that was sent is not kept." in text
        assert _count(store, "SELECT count(*) FROM drafts") == 0
        status, text, location = boss.login("sky", "boss")
        status, text, _ = boss.get("/p/sky/users")
        assert "draft-changes" not in text and "not saved yet" not in text
        boss.post("/p/sky/users", form_fields(text, "users-form"), csrf=False)
    assert {u["name"]: (u["topics"], u["disabled"]) for u in store.users()}["bob"] == (["t1"], False)
    assert _count(store, "SELECT count(*) FROM audit WHERE action IN ('assign_topics', 'disable_user') AND "
                         "user = 'boss'") == 0


def test_a_draft_belongs_to_its_user_and_never_keeps_a_password(tmp_path):
    """alice's draft is not offered to bob signing in next on the same browser, only to alice; the password form
    is never kept, and a field named like a password never enters a draft."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base:
        browser = Client(base)
        browser.login("sky", "alice")
        _, page, _ = browser.get("/p/sky/t/0/s1/d/1")
        sent = with_fields(form_fields(page, "doc"), {"question": "Alice's question?", "qanswer": "hers"},
                           add=[("password", "alice-password-1")])
        _end_sessions(store, "alice")
        assert "What you typed is kept" in browser.post("/p/sky/t/0/s1/d/1", sent, csrf=False)[1]
        with store.read() as c:
            (user_id, data), = c.execute("SELECT user_id, data FROM drafts").fetchall()
        assert user_id == {u["name"]: u["id"] for u in store.users()}["alice"]
        assert "alice-password-1" not in data and "Alice's question?" in data
        browser.login("sky", "bob")  # the next person at this browser
        assert "Alice&#39;s question?" not in browser.get("/p/sky/t/0/s1/d/1")[1]
        browser.login("sky", "alice")
        assert 'value="Alice&#39;s question?"' in browser.get("/p/sky/t/0/s1/d/1")[1]
        # the password form: never kept
        _, page, _ = browser.get("/p/sky/account")
        fields = with_fields(form_fields(page, "account"), {"current": "alice-password-1", "new": "a-new-password-1",
                                                           "again": "a-new-password-1"})
        _end_sessions(store, "alice")
        status, text, _ = browser.post("/p/sky/account", fields, csrf=False)
        assert status == 401 and "The form that was sent is not kept." in text
        assert _count(store, "SELECT count(*) FROM drafts") == 0


def test_a_form_only_address_signs_in_back_to_its_page(served):
    """Sign out or unfreeze sent after the session ended: the sign-in returns to the page the form is on (the
    form's own address takes no GET), and no draft is kept of them."""
    base, store, _ = served
    boss = Client(base)
    boss.login("sky", "boss")
    _, page, _ = boss.get("/p/sky/t/0/s2")
    head = dict(form_fields(page, "revise"))
    unfreeze = [(k, head[k]) for k in ("csrf", "form_id", "draft_key")] + [("confirmed", "1")]
    _end_sessions(store, "boss")
    for path, fields, back in (("/p/sky/t/0/s2/unfreeze", unfreeze, "/p/sky/t/0/s2"),
                               ("/p/sky/logout", [("csrf", "x")], "/p/sky/")):
        status, text, _ = boss.post(path, fields, csrf=False)
        assert status == 401 and dict(form_fields(text, "login"))["next"] == back, path
    assert _count(store, "SELECT count(*) FROM drafts") == 0


def test_a_manager_draft_is_shown_as_changes(tmp_path):
    """A draft of the Users page is restored with every change it makes listed against what is saved (the topic
    taken away, the account disabled), and nothing of it is saved until the manager saves."""
    with _users_page(tmp_path) as (store, users, base, boss, page):
        sent = with_fields(form_fields(page, "users-form"), drop=(f"topics-{users['alice']}",),
                           add=[(f"disabled-{users['bob']}", "1")])
        _end_sessions(store, "boss")
        boss.post("/p/sky/users", sent, csrf=False)
        boss.login("sky", "boss")
        _, text, _ = boss.get("/p/sky/users")
    changes = text[text.index('id="draft-changes"'):text.index("</table>", text.index('id="draft-changes"'))]
    assert "in 2 fields" in changes
    assert "<td>alice: topics</td><td class=\"theirs\">t1</td><td class=\"mine\">(none)</td>" in changes
    assert "<td>bob: disabled</td><td class=\"theirs\">(none)</td><td class=\"mine\">disabled</td>" in changes
    assert {u["name"]: (u["topics"], u["disabled"]) for u in store.users()}["alice"] == (["t1"], False)


def test_a_changed_form_with_a_used_id_is_saved_not_swallowed(tmp_path):
    """Browser Back brings the page back with its form id: the same form sent again is saved once, a changed one
    is a new submission, saved (a new nugget) or shown as a conflict (an item the first save changed), never
    answered "saved already"."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base:
        c = Client(base)
        c.login("sky", "bob")
        _, page, _ = c.get("/p/sky/t/0/s1/d/3")
        fields = form_fields(page, "doc")
        first = c.post("/p/sky/t/0/s1/d/3", with_fields(fields, {"question": "Back once?", "qanswer": "one"}), csrf=False)
        again = c.post("/p/sky/t/0/s1/d/3", with_fields(fields, {"question": "Back once?", "qanswer": "one"}), csrf=False)
        changed = c.post("/p/sky/t/0/s1/d/3", with_fields(fields, {"question": "Back twice?", "qanswer": "two"}), csrf=False)
        assert first[0] == again[0] == changed[0] == 303
        assert again[2].endswith("?notice=duplicate") and changed[2].endswith("?notice=saved")
        assert _count(store, "SELECT count(*) FROM nuggets WHERE text IN ('Back once?', 'Back twice?')") == 2
        n0 = next(k for k, _ in fields if k.startswith("qtext-"))
        c.post("/p/sky/t/0/s1/d/3", with_fields(fields, {n0: "Reworded once"}), csrf=False)
        status, text, _ = c.post("/p/sky/t/0/s1/d/3", with_fields(fields, {n0: "Reworded twice"}), csrf=False)
        assert status == 409 and "Reworded once" in text and "Reworded twice" in text  # both versions shown


def test_a_form_id_the_server_did_not_issue_is_refused(served):
    """Form ids are issued by the server per rendering and per user: a made-up id, or one issued to someone else,
    saves nothing and the form comes back with what was typed."""
    base, store, _ = served
    bob, alice = Client(base), Client(base)
    bob.login("sky", "bob")
    alice.login("sky", "alice")
    _, page, _ = bob.get("/p/sky/t/0/s1/d/3")
    alices_id = dict(form_fields(alice.get("/p/sky/t/0/s1/d/3")[1], "doc"))["form_id"]
    for made_up in ("x" * 32, alices_id):
        sent = with_fields(form_fields(page, "doc"), {"form_id": made_up, "question": "Chosen id?", "qanswer": "no"})
        status, text, _ = bob.post("/p/sky/t/0/s1/d/3", sent, csrf=False)
        assert status == 400 and "no form id issued to you by this server" in text and 'value="Chosen id?"' in text
        assert dict(form_fields(text, "doc"))["form_id"] not in (made_up, dict(form_fields(page, "doc"))["form_id"])
    assert _count(store, "SELECT count(*) FROM nuggets WHERE text = 'Chosen id?'") == 0


def _raw(base, method, path, body=b"", headers=None, chunks=None):
    """One request with http.client (a chunked body when ``chunks`` is given): status, headers, text."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        if chunks is None:
            conn.request(method, path, body=body, headers=headers or {})
        else:
            conn.putrequest(method, path)
            for k, v in {**(headers or {}), "Transfer-Encoding": "chunked"}.items():
                conn.putheader(k, v)
            conn.endheaders()
            try:
                for chunk in chunks:
                    conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                conn.send(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered before the body ended
        r = conn.getresponse()
        return r.status, r.headers, r.read().decode()
    finally:
        conn.close()


def test_every_error_response_carries_the_security_headers(tmp_path, monkeypatch):
    """404, 405, 413 (announced, and a chunked 1.2 MB body to the sign-in page), 401, 409 from two tabs of the
    Users page, and a 500: each with the same security headers as a page; the 500 is the error page, without a
    traceback. The three 500s of the audit are answered otherwise now."""
    from pyterrier_nuggets.annotate import protocol
    from pyterrier_nuggets.annotate.web import HEADERS
    store = make_project(tmp_path, users=("boss", "alice", "bob", "carol"))
    users = {u["name"]: u["id"] for u in store.users()}
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    with live_server([store.directory]) as base:
        answers = {"404": _raw(base, "GET", "/p/sky/no-such-page"), "405": _raw(base, "PUT", "/p/sky/login"),
                   "413": _raw(base, "POST", "/p/sky/t/0/s1/d/0", b"x" * (2 << 20), form),
                   "413 chunked": _raw(base, "POST", "/p/sky/login", headers=form, chunks=[b"name=" + b"a" * 65536] * 19),
                   "401": _raw(base, "POST", "/p/sky/t/0/s1/d/0", b"draft=" + b"%5B" * 3000, form),
                   "413 draft": _raw(base, "POST", "/p/sky/login", b"draft=" + b"[" * 100_000, form)}
        boss = Client(base)
        boss.login("sky", "boss")
        tab1, tab2 = (form_fields(boss.get("/p/sky/users")[1], "users-form") for _ in range(2))
        assert boss.post("/p/sky/users", with_fields(tab1, drop=(f"topics-{users['alice']}",)), csrf=False)[0] == 303
        status, text, _ = boss.post("/p/sky/users", with_fields(tab2, add=[(f"disabled-{users['alice']}", "1")]),
                                    csrf=False)
        assert status == 409 and "user alice was changed by <b>boss</b>" in text
        monkeypatch.setattr(protocol, "overview", lambda *a: 1 / 0)
        cookie = "; ".join(f"{c.name}={c.value}" for c in boss.jar)
        answers["500"] = _raw(base, "GET", "/p/sky/", headers={"Cookie": cookie})
        login = Client(base)
        login.get("/p/sky/login")
        answers["401 login"] = _raw(base, "POST", "/p/sky/login", f"csrf={login.csrf}&name=x&password=y&draft="
                                    .encode() + b"[" * 10_000, {**form, "Cookie": f"pn_login={login.csrf}"})
    assert {k: v[0] for k, v in answers.items()} == {"404": 404, "405": 405, "413": 413, "413 chunked": 413,
                                                     "401": 401, "413 draft": 413, "500": 500, "401 login": 401}
    for what, (_, headers, _) in answers.items():
        for k, v in HEADERS.items():
            assert headers[k] == v, (what, k)
    assert "The server failed on this request" in answers["500"][2] and "ZeroDivisionError" not in answers["500"][2]


def test_sessions_end_when_idle_and_after_twelve_hours(tmp_path, monkeypatch):
    """A session ends after an hour without a request, and 12 hours after the sign-in however active."""
    from pyterrier_nuggets.annotate import auth
    store = make_project(tmp_path)
    clock = [1_800_000_000.0]
    monkeypatch.setattr(auth, "clock", lambda: clock[0])
    alice = {u["name"]: u for u in store.users()}["alice"]
    token = store.create_session(alice)
    clock[0] += auth.IDLE_SECONDS - 5
    assert store.session(token)["name"] == "alice"  # a request: the idle deadline moves on
    clock[0] += auth.IDLE_SECONDS - 5
    assert store.session(token) is not None
    clock[0] += auth.IDLE_SECONDS + 1
    assert store.session(token) is None  # idle for more than an hour
    token = store.create_session(alice)
    start = clock[0]
    while clock[0] < start + auth.SESSION_SECONDS - 1800:
        clock[0] += 1800
        assert store.session(token) is not None
    clock[0] = start + auth.SESSION_SECONDS + 1
    assert store.session(token) is None  # active all along, but signed in 12 hours ago


def test_cookies_are_ended_with_the_flags_they_were_set_with(tmp_path):
    """Every cookie the server sets or ends (session, sign-in form token, browser token) is HttpOnly,
    SameSite=Strict, scoped to the project, and Secure with --secure-cookies."""
    store = make_project(tmp_path)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for secure in (False, True):
        with live_server([store.directory], secure_cookies=secure) as base:
            c = Client(base)
            c.get("/p/sky/login")
            _, login, _ = _raw(base, "POST", "/p/sky/login", f"csrf={c.csrf}&name=alice&password="
                               f"{PASSWORDS['alice']}".encode(), {**form, "Cookie": f"pn_login={c.csrf}"})
            session = next(v.split(";")[0] for v in login.get_all("set-cookie") if v.startswith("pn_session="))
            csrf = dict(form_fields(_raw(base, "GET", "/p/sky/account", headers={"Cookie": session})[2], "account"))
            _, logout, _ = _raw(base, "POST", "/p/sky/logout", f"csrf={csrf['csrf']}".encode(),
                                {**form, "Cookie": session})
        cookies = login.get_all("set-cookie") + logout.get_all("set-cookie")
        assert {v.split("=")[0] for v in cookies} == {"pn_session", "pn_browser", "pn_login"}
        assert any(v.startswith("pn_session=") and "Max-Age=0" in v for v in logout.get_all("set-cookie"))
        assert any(v.startswith("pn_login=") and "Max-Age=0" in v for v in login.get_all("set-cookie"))
        for v in cookies:
            assert "HttpOnly" in v and "SameSite=strict" in v and "Path=/p/sky/" in v, v
            assert ("Secure" in v) == secure, v


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


def _answer(store, text):
    with store.read() as c:
        row = c.execute("SELECT id, text, version FROM nugget_answers WHERE text = ?", (text,)).fetchone()
    return None if row is None else dict(row)


def test_a_stale_delete_is_a_conflict_not_a_lost_correction(tmp_path):
    """bob corrects an answer; alice then ticks 'delete' on her page loaded before the correction, and so does the
    manager on his stage 2 page: each is the conflict page (409) with both versions, nothing of the form is
    saved, and bob's correction stays."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base:
        alice, bob, boss = Client(base), Client(base), Client(base)
        for client, name in ((alice, "alice"), (bob, "bob"), (boss, "boss")):
            assert client.login("sky", name)[0] == 303
        _, page, _ = alice.get("/p/sky/t/0/s1/d/0")
        n0 = next(k for k, _ in form_fields(page, "doc") if k.startswith("answer-"))
        assert alice.post("/p/sky/t/0/s1/d/0", with_fields(form_fields(page, "doc"), {n0: "five times"}),
                          csrf=False)[0] == 303
        a = _answer(store, "five times")["id"]
        alices_page = form_fields(alice.get("/p/sky/t/0/s1/d/0")[1], "doc")
        bosss_page = form_fields(boss.get("/p/sky/t/0/s2")[1], "revise")
        bobs_page = form_fields(bob.get("/p/sky/t/0/s1/d/0")[1], "doc")
        assert bob.post("/p/sky/t/0/s1/d/0", with_fields(bobs_page, {f"atext-{a}": "about five times more"}),
                        csrf=False)[0] == 303
        status, text, _ = alice.post("/p/sky/t/0/s1/d/0", with_fields(alices_page, add=[(f"adelete-{a}", "1"),
                                                                                       ("question", "Also new?"),
                                                                                       ("qanswer", "yes")]), csrf=False)
        assert status == 409 and "about five times more" in text and "(deleted)" in text and "<b>bob</b>" in text
        for confirmed in ([], [("confirmed", "1")]):
            status, text, _ = boss.post("/p/sky/t/0/s2", with_fields(bosss_page, add=[(f"adelete-{a}", "1")] + confirmed),
                                        csrf=False)
            assert status == 409 and "about five times more" in text and "(deleted)" in text
    assert _answer(store, "about five times more") == {"id": a, "text": "about five times more", "version": 1}
    assert _count(store, "SELECT count(*) FROM nuggets WHERE text = 'Also new?'") == 0
    assert _count(store, "SELECT count(*) FROM audit WHERE action LIKE '%delete_answer'") == 0


def _drafts(store):
    with store.read() as c:
        return {r["path"]: r["data"] for r in c.execute("SELECT path, data FROM drafts ORDER BY rowid")}


def test_drafts_are_kept_only_for_pages_their_user_may_open(tmp_path):
    """A form sent after the session ended, with alice's draft key and her browser token, to an address that is
    not a page she may open (a topic that does not exist or is not hers, a document out of range, a stage that is
    not open, the manager's pages) is not kept; to her page, it is."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base:
        alice = Client(base)
        alice.login("sky", "alice")
        sent = with_fields(form_fields(alice.get("/p/sky/t/0/s1/d/1")[1], "doc"), {"question": "Kept?", "qanswer": "y"})
        _end_sessions(store, "alice")
        for path in ("/p/sky/t/900000/s1/d/0", "/p/sky/t/0/s1/d/999", "/p/sky/t/0/s3/d/1", "/p/sky/t/0/s2",
                     "/p/sky/users", "/p/sky/missing", "/p/sky/t/0/s4/r/1"):
            status, text, _ = alice.post(path, sent, csrf=False)
            assert status == 401 and "The form that was sent is not kept." in text, path
        assert _drafts(store) == {}
        status, text, _ = alice.post("/p/sky/t/0/s1/d/1", sent, csrf=False)
        assert status == 401 and "What you typed is kept" in text
        assert list(_drafts(store)) == ["/p/sky/t/0/s1/d/1"]


def test_a_draft_keeps_only_its_pages_fields_and_is_bounded_in_number_and_age(tmp_path, monkeypatch):
    """A draft keeps the fields its page's form has (none of 500 made-up fields of 1 kB, no checkbox value the page
    does not offer); a value longer than any field of the page takes is not from the page: nothing is kept. A user
    keeps at most MAX_DRAFTS drafts (the oldest goes), and a draft older than DRAFT_SECONDS is never shown."""
    from pyterrier_nuggets.annotate import auth
    from pyterrier_nuggets.annotate import store as store_module
    store = make_project(tmp_path)
    clock = [auth.clock()]
    monkeypatch.setattr(auth, "clock", lambda: clock[0])
    with live_server([store.directory]) as base:
        alice = Client(base)
        alice.login("sky", "alice")
        pages = {d: form_fields(alice.get(f"/p/sky/t/0/s1/d/{d}")[1], "doc") for d in (1, 2, 3)}
        _end_sessions(store, "alice")
        junk = [(f"junk-{i}", "x" * 1000) for i in range(500)] + [("link", "999999")]
        status, text, _ = alice.post("/p/sky/t/0/s1/d/1", with_fields(pages[1], {"question": "Draft 1?"}, add=junk),
                                     csrf=False)
        assert status == 401 and "What you typed is kept" in text
        (data,) = _drafts(store).values()
        assert "junk" not in data and "999999" not in data and "Draft 1?" in data and len(data) < 5_000
        status, text, _ = alice.post("/p/sky/t/0/s1/d/2", with_fields(pages[2], {"question": "x" * 2001}), csrf=False)
        assert status == 401 and "The form that was sent is not kept." in text
        monkeypatch.setattr(store_module, "MAX_DRAFTS", 2)
        for d in (2, 3):
            alice.post(f"/p/sky/t/0/s1/d/{d}", with_fields(pages[d], {"question": f"Draft {d}?"}), csrf=False)
        assert list(_drafts(store)) == ["/p/sky/t/0/s1/d/2", "/p/sky/t/0/s1/d/3"]  # the oldest went
        clock[0] += store_module.DRAFT_SECONDS + 1
        alice.login("sky", "alice")
        assert "Draft 2?" not in alice.get("/p/sky/t/0/s1/d/2")[1]
        assert _drafts(store) == {}


def test_no_draft_is_kept_after_sign_out_or_a_password_change(tmp_path):
    """Signing out ends the browser's token, and so does a password change for every browser of the user: a form
    sent from an old page afterwards is not kept, though it carries the draft key of the page."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base:
        alice, other = Client(base), Client(base)
        alice.login("sky", "alice")
        sent = with_fields(form_fields(alice.get("/p/sky/t/0/s1/d/1")[1], "doc"), {"question": "After?"})
        assert alice.post("/p/sky/logout", {})[0] == 303
        assert "The form that was sent is not kept." in alice.post("/p/sky/t/0/s1/d/1", sent, csrf=False)[1]
        alice.login("sky", "alice")
        other.login("sky", "alice")
        sent = with_fields(form_fields(alice.get("/p/sky/t/0/s1/d/1")[1], "doc"), {"question": "After?"})
        _, page, _ = other.get("/p/sky/account")
        assert other.post("/p/sky/account", with_fields(form_fields(page, "account"), {
            "current": PASSWORDS["alice"], "new": "alice-new-password", "again": "alice-new-password"}), csrf=False)[0] == 303
        assert "The form that was sent is not kept." in alice.post("/p/sky/t/0/s1/d/1", sent, csrf=False)[1]
    assert _drafts(store) == {}


def test_an_anonymous_form_is_not_read_before_its_browser_token(tmp_path, monkeypatch):
    """A form sent without a session is read (parsed) only when the browser holds a live browser token: without
    one (or with a made-up one) the sign-in page answers at once, whatever the body; with one, the form is read
    and kept as the user's draft."""
    from starlette.requests import Request
    read, form = [], Request.form
    monkeypatch.setattr(Request, "form", lambda self, *a, **k: (read.append(self.url.path), form(self, *a, **k))[1])
    store = make_project(tmp_path)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    body = b"&".join(b"f%d=xxxxxxxx" % i for i in range(60_000))
    with live_server([store.directory]) as base:
        for cookie in ({}, {"Cookie": "pn_browser=made-up"}):
            status, _, text = _raw(base, "POST", "/p/sky/t/0/s1/d/1", body, {**headers, **cookie})
            assert status == 401 and "The form that was sent is not kept." in text
        assert read == []
        alice = Client(base)
        alice.login("sky", "alice")
        sent = with_fields(form_fields(alice.get("/p/sky/t/0/s1/d/1")[1], "doc"), {"question": "Read?"})
        _end_sessions(store, "alice")
        assert "What you typed is kept" in alice.post("/p/sky/t/0/s1/d/1", sent, csrf=False)[1]
    assert [p for p in read if not p.endswith("/login")] == ["/p/sky/t/0/s1/d/1"]


def test_a_database_error_page_does_not_show_the_database_path(tmp_path, monkeypatch, caplog):
    """A database error is a 500 page that tells the user to tell the project manager; the path of the database
    and the error go to the server's log, never to the page."""
    import logging
    import sqlite3

    from pyterrier_nuggets.annotate import protocol

    def fail(*args):
        raise sqlite3.OperationalError("disk I/O error")

    store = make_project(tmp_path)
    with live_server([store.directory]) as base:
        boss = Client(base)
        boss.login("sky", "boss")
        monkeypatch.setattr(protocol, "overview", fail)
        with caplog.at_level(logging.ERROR):
            status, text, _ = boss.get("/p/sky/")
    assert status == 500 and "tell the project manager" in text
    assert store.path not in text and str(tmp_path) not in text and "disk I/O error" not in text
    assert any(store.path in r.getMessage() and "disk I/O error" in r.getMessage() for r in caplog.records)
