"""Sign-ins to the annotation server during floods (uvicorn on 127.0.0.1, a free port, behind a trusted proxy's
X-Forwarded-For so that one test speaks for many client addresses): a person gets in during a flood of 100 in
flight from rotating addresses and during an insider's flood of their own correct sign-ins, and right after either;
a known browser on the flood's own address gets in; a sign-in turned away (503) costs nothing; browser tokens give
priority only to enabled users, a bounded number of times, and end on sign-out, password change and disable; a
sign-in whose client went away is never checked; X-Forwarded-For entries with a port are one client.

Deterministic: the password checks wait until the test lets them go (``GatedPasswords``) and the tests wait for
states of the server (``until``), never for time; the outcome of each flood is the same on every run."""
import itertools
import socket

import pytest

from tests.annotate_project import (
    PASSWORDS,
    Client,
    GatedPasswords,
    flood,
    live_app,
    live_server,
    make_project,
    needs_annotate,
    sign_in_thread,
    until,
)

pytestmark = needs_annotate

PERSON = "198.51.100.7"  # the address a person signs in from (a network no flood uses)
_fresh = itertools.count(1000)  # addresses in networks never seen before: 10.A.B.1 for A.B from this count


def _gate(concurrent=1, waiting=64):
    from pyterrier_nuggets.annotate.auth import HashGate
    return HashGate(concurrent=concurrent, waiting=waiting)


def _join(*threads):
    for t in threads:
        t.join(60)


@pytest.mark.parametrize("pool", ["never seen, one network", "failed before"])
def test_a_new_browser_gets_in_during_a_flood_of_100_from_rotating_addresses(tmp_path, pool):
    """100 wrong passwords in flight, each from another address (all new to the server, in one /24 network; or
    addresses that have failed before): 64 wait, 35 are turned away; a person signing in from a new browser
    elsewhere takes the place of the worst waiting guess and is the next to be checked, though they signed in
    twice already this quarter of an hour (their name's few attempts rank like a guess's one)."""
    store = make_project(tmp_path)
    passwords, gate = GatedPasswords(), _gate()
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        for _ in range(2):
            assert Client(base).login("sky", "bob", address=PERSON)[0] == 303
        if pool == "failed before":
            addresses = [f"203.0.113.{i}" for i in range(100)]
            for address in addresses:
                assert Client(base).login("sky", "alice", "wrong-password", address)[0] == 401
        else:
            addresses = [f"10.20.30.{i}" for i in range(100)]
        passwords.hold = True
        threads, statuses = flood(base, [f"guess{i}" for i in range(100)], addresses)
        until(lambda: gate.active + gate.waiting + len(statuses) == 100, "the flood reached the gate")
        assert passwords.next_started() == "not-the-password"
        assert gate.waiting == 64 and sorted(statuses) == [503] * 35
        person, result = sign_in_thread(Client(base), "bob", PASSWORDS["bob"], PERSON)
        until(lambda: len(statuses) == 36 or "status" in result, "the person took a place, or was turned away")
        assert "status" not in result  # waiting: the worst guess was turned away instead
        passwords.release()  # the running guess ends: the next check is the person's
        assert passwords.next_started() == PASSWORDS["bob"]
        passwords.open()
        _join(person, *threads)
    assert result["status"] == 303
    assert sorted(statuses) == [401] * 64 + [503] * 36


def test_a_person_turned_away_by_a_flood_pays_nothing_and_gets_in_right_after_it(tmp_path):
    """The worst case for a new browser: 100 in flight, each guess from an address of another network, none seen
    before (a botnet): each ranks like the person's first attempt, so the person is turned away (503) while the
    room is full of earlier ones. A sign-in turned away was never checked: it is charged to neither the name nor
    the address, so 12 of them lock nothing, and the person gets in as soon as the flood ends. The 503 asks to
    try again in a second, not five."""
    store = make_project(tmp_path)
    passwords, gate = GatedPasswords(), _gate()
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        passwords.hold = True
        threads, statuses = flood(base, [f"guess{i}" for i in range(100)], [f"10.{i}.0.1" for i in range(100)])
        until(lambda: gate.active + gate.waiting + len(statuses) == 100, "the flood reached the gate")
        person = Client(base)
        answers = [person.login("sky", "bob", address=PERSON)[0] for _ in range(12)]
        assert answers == [503] * 12 and person.headers["Retry-After"] == "1"
        assert app.throttle.pending("sky", PERSON) == 0
        passwords.open()
        _join(*threads)
        assert sorted(statuses) == [401] * 65 + [503] * 35
        assert person.login("sky", "bob", address=PERSON)[0] == 303  # right after the flood


def test_an_insiders_flood_of_their_own_sign_ins_locks_nobody_out(tmp_path):
    """carol, an annotator, signs in as herself 100 times at once, with her password and her browser token, from
    rotating addresses: only the first PRIORITY_LIMIT of them go first (a browser token's priority is bounded, its
    successes included), the rest rank behind a person who has not tried 100 times. bob from a new browser and
    alice from her known browser are checked after at most those few, and get in; right after the flood, both
    sign in from new browsers."""
    from pyterrier_nuggets.annotate.auth import PRIORITY_LIMIT
    store = make_project(tmp_path, users=("boss", "alice", "bob", "carol"))
    passwords, gate = GatedPasswords(), _gate()
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        insider, alice = Client(base), Client(base)
        assert insider.login("sky", "carol", address="192.0.2.1")[0] == 303
        assert alice.login("sky", "alice", address="198.51.100.8")[0] == 303
        passwords.hold = True
        threads, statuses = flood(base, ["carol"] * 100, [f"10.{i}.0.1" for i in range(100)], PASSWORDS["carol"],
                                  browser=insider.cookie("pn_browser"))
        until(lambda: gate.active + gate.waiting + len(statuses) == 100, "the flood reached the gate")
        assert passwords.next_started() == PASSWORDS["carol"] and sorted(statuses) == [503] * 35
        people = [sign_in_thread(Client(base), "bob", PASSWORDS["bob"], PERSON),
                  sign_in_thread(alice, "alice", PASSWORDS["alice"], "198.51.100.8")]
        until(lambda: len(statuses) == 37 or any("status" in r for _, r in people), "both took a place")
        assert not any("status" in r for _, r in people)
        started = []
        while PASSWORDS["bob"] not in started or PASSWORDS["alice"] not in started:
            passwords.release()
            started.append(passwords.next_started())
            assert len(started) <= PRIORITY_LIMIT + 2, started  # carol's prioritised few, then alice and bob
        passwords.open()
        _join(*threads, *(t for t, _ in people))
        assert [r["status"] for _, r in people] == [303, 303]
        assert sorted(statuses) == [303] * 63 + [503] * 37
        assert Client(base).login("sky", "bob", address=PERSON)[0] == 303  # right after the flood
        assert Client(base).login("sky", "alice", address="198.51.100.9")[0] == 303


def test_a_known_browser_gets_in_from_the_floods_own_address(tmp_path):
    """A lab's NAT: 40 wrong passwords for 40 other names in flight from the address alice signs in from, after
    that address has spent 95 of its 100 attempts: 5 are checked, 35 refused (429). A new browser there is refused
    too (the address's budget), but alice's browser, which signed in before, is exempt from the address's budget
    (its token is bounded on its own) and is the next to be checked."""
    store = make_project(tmp_path)
    nat = "192.0.2.9"
    passwords, gate = GatedPasswords(), _gate(waiting=8)
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        alice = Client(base)
        assert alice.login("sky", "alice", address=nat)[0] == 303
        for i in range(95):
            assert Client(base).login("sky", f"other{i}", "wrong-password", nat)[0] == 401
        passwords.hold = True
        threads, statuses = flood(base, [f"guess{i}" for i in range(40)], [nat] * 40)
        until(lambda: gate.active + gate.waiting == 5 and len(statuses) == 35, "the flood reached the gate")
        assert passwords.next_started() == "not-the-password" and sorted(statuses) == [429] * 35
        assert Client(base).login("sky", "bob", address=nat)[0] == 429  # a new browser behind the NAT
        person, result = sign_in_thread(alice, "alice", PASSWORDS["alice"], nat)
        until(lambda: gate.waiting == 5, "alice is waiting")
        passwords.release()
        assert passwords.next_started() == PASSWORDS["alice"]
        passwords.open()
        _join(person, *threads)
    assert result["status"] == 303 and sorted(statuses) == [401] * 5 + [429] * 35


def test_a_disabled_users_browser_token_gives_no_priority(tmp_path):
    """carol signed in, then was disabled: 20 sign-ins from her browser with her old token, from addresses of her
    network, rank like anyone's (her token ended with the account: none goes first), so bob from a new browser
    elsewhere is checked next. Enabled again, her old token gives no priority either."""
    store = make_project(tmp_path, users=("boss", "alice", "bob", "carol"))
    passwords, gate = GatedPasswords(), _gate(waiting=8)
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        carol = Client(base)
        assert carol.login("sky", "carol", address="192.0.2.1")[0] == 303
        store.set_disabled("carol", True)
        passwords.hold = True
        threads, statuses = flood(base, ["carol"] * 20, [f"10.20.30.{i}" for i in range(20)], PASSWORDS["carol"],
                                  browser=carol.cookie("pn_browser"))
        until(lambda: gate.active + gate.waiting + len(statuses) == 20, "the flood reached the gate")
        passwords.next_started()
        person, result = sign_in_thread(Client(base), "bob", PASSWORDS["bob"], PERSON)
        until(lambda: len(statuses) == 12 or "status" in result, "bob took a place")
        passwords.release()
        assert passwords.next_started() == PASSWORDS["bob"]
        passwords.open()
        _join(person, *threads)
        assert result["status"] == 303 and sorted(statuses) == [401] * 8 + [503] * 12
        store.set_disabled("carol", False)
        assert _goes_first(base, passwords, gate, carol, "carol") == 503


def _goes_first(base, passwords, gate, client, name, password=None):
    """Whether a sign-in from ``client`` goes first (a browser token's priority): with one check running and the
    waiting room full of guesses from addresses never seen before, a sign-in without priority ranks like those
    guesses and is turned away (503); one with priority takes a place and is checked (303 or 401)."""
    fresh = [next(_fresh) for _ in range(gate.max_waiting + 1)]
    passwords.hold = True
    threads, statuses = flood(base, [f"guess-{fresh[0]}"], [f"10.{fresh[0] // 256}.{fresh[0] % 256}.1"])
    until(lambda: gate.active == 1, "a guess is being checked")
    more, more_statuses = flood(base, [f"guess-{n}" for n in fresh[1:]], [f"10.{n // 256}.{n % 256}.1" for n in fresh[1:]])
    until(lambda: gate.waiting == gate.max_waiting, "the room is full")
    thread, result = sign_in_thread(client, name, password or PASSWORDS[name], "198.51.100.99")
    until(lambda: "status" in result or len(more_statuses) == 1, "the sign-in was turned away, or took a place")
    passwords.open()
    _join(thread, *threads, *more)
    return result["status"]


def test_browser_tokens_end_on_sign_out_password_change_and_disable(tmp_path):
    """A browser token gives priority until its browser signs out, the user's password changes (every browser
    of the user; the browser that changed it gets a new token) or the user is disabled. Within a window, a
    user's tokens give priority PRIORITY_LIMIT times, successful sign-ins included."""
    from pyterrier_nuggets.annotate.auth import PRIORITY_LIMIT
    from tests.annotate_project import form_fields, with_fields
    store = make_project(tmp_path)
    passwords, gate = GatedPasswords(), _gate(waiting=1)
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        laptop, desktop = Client(base), Client(base)
        assert laptop.login("sky", "alice")[0] == 303
        assert _goes_first(base, passwords, gate, laptop, "alice") == 303
        _, page, _ = laptop.get("/p/sky/")
        assert laptop.post("/p/sky/logout", {})[0] == 303 and laptop.cookie("pn_browser") is None
        assert _goes_first(base, passwords, gate, laptop, "alice") == 503  # signed out: no priority
        assert laptop.login("sky", "alice")[0] == 303 and desktop.login("sky", "alice")[0] == 303
        _, page, _ = laptop.get("/p/sky/account")
        sent = with_fields(form_fields(page, "account"), {"current": PASSWORDS["alice"], "new": "alice-new-password",
                                                         "again": "alice-new-password"})
        assert laptop.post("/p/sky/account", sent, csrf=False)[0] == 303
        assert _goes_first(base, passwords, gate, desktop, "alice", "alice-new-password") == 503
        assert _goes_first(base, passwords, gate, laptop, "alice", "alice-new-password") == 303
        store.set_disabled("alice", True)
        store.set_disabled("alice", False)
        assert _goes_first(base, passwords, gate, laptop, "alice", "alice-new-password") == 503
        # the priority of a user's tokens is bounded, successes included: a window's few, then none
        store.set_password("bob", PASSWORDS["bob"])
        bob = Client(base)
        assert bob.login("sky", "bob")[0] == 303
        firsts = [_goes_first(base, passwords, gate, bob, "bob") for _ in range(PRIORITY_LIMIT + 1)]
        assert firsts == [303] * PRIORITY_LIMIT + [503]


def test_a_sign_in_whose_client_went_away_is_never_checked(tmp_path):
    """20 sign-ins wait for a check, and their clients close the connection: they leave the waiting room at
    once, are never checked (no Argon2 work for them) and charge nothing."""
    store = make_project(tmp_path)
    passwords, gate = GatedPasswords(), _gate()
    with live_app([store.directory], passwords=passwords, gate=gate, forwarded_allow_ips="127.0.0.1") as (base, app):
        passwords.hold = True
        threads, statuses = flood(base, ["guess"], ["10.1.0.1"])
        until(lambda: gate.active == 1, "a guess is being checked")
        host, port = base.removeprefix("http://").split(":")
        sockets = []
        for i in range(20):
            c = Client(base)
            c.get("/p/sky/login")
            body = f"csrf={c.csrf}&name=alice&password=wrong-password-{i}".encode()
            s = socket.create_connection((host, int(port)))
            s.sendall(b"POST /p/sky/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                      b"Cookie: pn_login=%s\r\nX-Forwarded-For: 10.2.%d.1\r\nContent-Length: %d\r\n\r\n%s"
                      % (c.csrf.encode(), i, len(body), body))
            sockets.append(s)
        until(lambda: gate.waiting == 20, "the 20 are waiting")
        for s in sockets:
            s.close()
        until(lambda: gate.waiting == 0, "the server saw them go")
        passwords.open()
        _join(*threads)
        assert passwords.inner.verifications == 1  # the running guess only
        assert all(app.throttle.pending("sky", f"10.2.{i}.1") == 0 for i in range(20))
        assert Client(base).login("sky", "alice")[0] == 303


@pytest.mark.parametrize("entry", ["203.0.113.9:{port}", "[2001:db8::1]:{port}", "[2001:db8::{port}]"])
def test_forwarded_for_entries_with_a_port_are_one_client(tmp_path, entry):
    """A proxy that appends the client's address with its port (or IPv6 in brackets) writes another entry for
    every connection: they are one client, counted by its address (10 failures for a name, then 429)."""
    store = make_project(tmp_path)
    with live_server([store.directory], forwarded_allow_ips="127.0.0.1") as base:
        answers = [Client(base).login("sky", "alice", "wrong-password", entry.format(port=1000 + i))[0]
                   for i in range(11)]
    assert answers == [401] * 10 + [429]


def test_forwarded_for_entries_are_normalised():
    from pyterrier_nuggets.annotate.web import TrustedProxies
    proxies = TrustedProxies(None, "10.0.0.0/8")
    assert proxies.client(["203.0.113.9:443", "10.0.0.2:80"]) == "203.0.113.9"
    assert proxies.client(["[2001:db8::1]:443"]) == "2001:db8::1" == proxies.client(["[2001:db8::1]"])
    assert proxies.client(["1.2.3.4", "203.0.113.9:1", "10.0.0.2"]) == "203.0.113.9"
    assert proxies.client(["unknown"]) == "unknown"  # not an address: one key for every such client
