"""The annotation tool in a real browser (Debian's chromium + chromium-driver, driven by selenium): three
people complete all four stages of the test project (alice stages 1 and 3, boss stage 2, bob stage 4)
through the pages, the export then scores to the hand-worked values, and a script in a document and an
onerror attribute in an answer stay text. Screenshots of each stage go to the test's temporary directory
(and to $PN_SCREENSHOT_DIR when set, e.g. docs/images for docs/annotation.md)."""
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager

import pytest

from tests.annotate_project import (
    NEW_NUGGET,
    PASSWORDS,
    STAGE1,
    STAGE2,
    STAGE3,
    STAGE4,
    live_server,
    make_project,
    needs_annotate,
)
from tests.test_annotate import check_export

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
HAVE_SELENIUM = True
try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    HAVE_SELENIUM = False

needs_browser = pytest.mark.skipif(
    not (CHROMIUM and DRIVER and HAVE_SELENIUM) and not os.environ.get("CI"),
    reason="needs chromium, chromium-driver (apt) and selenium (bash run.sh test installs them)")
pytestmark = [needs_annotate, needs_browser]


@contextmanager
def chromium():
    profile = tempfile.mkdtemp(prefix="pn-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--window-size=1400,1000", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class Person:
    def __init__(self, driver, base, shots):
        self.d, self.base, self.shots = driver, base, shots

    def go(self, path):
        self.d.get(self.base + path)

    def css(self, selector, within=None):
        return (within or self.d).find_element(By.CSS_SELECTOR, selector)

    def xpath(self, path, within=None):
        return (within or self.d).find_element(By.XPATH, path)

    def submit(self, element):
        """Click a link or button that loads a page, and wait for the new page.

        The old page is marked by a property on its window object; a new page has a fresh window object,
        so the wait ends when the mark is gone and the new document has loaded. (Selenium's staleness_of
        asks the old element a question, and Chromium sometimes answers that with a generic inspector
        error instead of a stale-element error while the page is being replaced.)
        """
        self.d.execute_script("window.__pnOldPage = true;")
        element.click()
        # While the page is being replaced, a script may fail with "context destroyed": ask again.
        WebDriverWait(self.d, 30, ignored_exceptions=(WebDriverException,)).until(lambda d: d.execute_script(
            "return window.__pnOldPage === undefined && document.readyState === 'complete';"))

    def shot(self, name):
        path = os.path.join(self.shots, f"{name}.png")
        self.d.save_screenshot(path)
        extra = os.environ.get("PN_SCREENSHOT_DIR")
        if extra:
            os.makedirs(extra, exist_ok=True)
            shutil.copy(path, os.path.join(extra, f"annotate-{name}.png"))

    def login(self, name, shot=None):
        self.go("/p/sky/login")
        self.css("input[name=name]").send_keys(name)
        self.css("input[name=password]").send_keys(PASSWORDS[name])
        if shot:
            self.shot(shot)
        self.submit(self.css("#login button"))
        assert self.d.current_url.endswith("/p/sky/"), self.d.current_url

    def sign_in_here(self, name):
        """Sign in on the login page the browser shows."""
        self.css("input[name=name]").send_keys(name)
        self.css("input[name=password]").send_keys(PASSWORDS[name])
        self.submit(self.css("#login button"))

    def logout(self):
        self.submit(self.css("header button.link"))
        assert self.d.current_url.endswith("/login")

    def nugget(self, text):
        return self.xpath(f"//div[contains(@class,'nugget')][.//div[@class='question'][contains(., {text!r})]]")

    def fill(self, element, text):
        element.clear()
        element.send_keys(text)


def stage1(p: Person):
    p.submit(p.css("#topic-0 td:nth-child(2) a"))
    for step in STAGE1:
        assert p.css(".docno").text == step["docno"]
        p.css(f"input[name=relevance][value='{step['grade']}']").click()
        for question, answer in step.get("answers", {}).items():
            p.css("input[name^=answer-]", p.nugget(question)).send_keys(answer)
        for answer in step.get("links", []):
            p.xpath(f"//label[contains(., {answer!r})]/input[@type='checkbox']").click()
        if "new" in step:
            p.css("input[name=question]").send_keys(step["new"][0])
            p.css("input[name=qanswer]").send_keys(step["new"][1])
        if step["docno"] == "d3":
            text = p.css("#doc-text").text
            assert "<script>document.title='pwned'</script>" in text and "onerror=" in text
            assert p.d.title != "pwned"
            assert p.d.execute_script("return document.querySelectorAll('#doc-text script, #doc-text img').length") == 0
        if step["docno"] == "d1":
            p.shot("1-stage1-nugget-creation")
        p.submit(p.css("#done"))
    assert "Stage 1 is done" in p.css("#stage-done").text


def row_of(p: Person, text: str):
    """The stage 2 row of the nugget whose text field holds ``text``."""
    return p.xpath(f"//tr[.//input[starts-with(@name, 'text-')][@value={text!r}]]")


def stage2(p: Person):
    """One form for the page: the rewording and the importance together, then "Save and freeze", confirmed."""
    p.submit(p.css("#topic-0 td:nth-child(3) a"))
    old, new = STAGE2["reword"]
    reworded = row_of(p, old)
    for text, importance in STAGE2["importance"].items():
        p.css(f"input[name^=importance-][value={importance}]", row_of(p, text)).click()
    p.fill(p.css("input[name^=text-]", reworded), new)
    p.shot("2-stage2-revision")
    p.submit(p.css("#freeze"))
    assert "Freeze the 3 nugget questions of t1" in p.css("#consequences").text
    p.submit(p.css("#confirm-yes"))
    assert "frozen, 3 nuggets" in p.css("#topic-0").text


def stage3(p: Person):
    p.submit(p.css("#topic-0 td:nth-child(4) a"))
    first = True
    while not p.d.find_elements(By.ID, "stage-done"):
        for item in p.d.find_elements(By.CSS_SELECTOR, "#citing .sentence"):
            key = p.css("input[name=labels]", item).get_attribute("value")
            _, j, k = (int(x) for x in key.split("-"))
            run = p.css(".run", item).text
            p.css(f"input[value={STAGE3[run, j, k]}]", item).click()
        if first:
            assert "LLM: Full support" in p.css("#citing").text  # the pre-fill is shown (post-editing)
            p.css("#citing details summary").click()
            p.shot("3-stage3-support")
            first = False
        p.submit(p.css("#done"))


def stage4(p: Person):
    p.submit(p.css("#topic-0 td:nth-child(5) a"))
    first = True
    while not p.d.find_elements(By.ID, "stage-done"):
        run = p.css(".topic .run").text
        for s in p.d.find_elements(By.CSS_SELECTOR, "#align .sentence"):
            j = int(p.css("input[name=sentence]", s).get_attribute("value"))
            content, nuggets, missing = STAGE4[run, j]
            p.css(f"input[name=content-{j}][value={content}]", s).click()
            for text in nuggets:  # the checkbox is labelled with the nugget's text, not only its id
                p.xpath(f".//label[contains(@class, 'chip')][contains(., {text!r})]/input", s).click()
            if missing:
                p.css(f"input[name=missing-{j}]", s).send_keys(missing)
        if first:
            p.shot("4-stage4-alignment")
            first = False
        p.submit(p.css("#done"))


def test_two_annotators_and_a_manager_finish_the_project_in_the_browser(tmp_path):
    store = make_project(tmp_path)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with live_server([store.directory]) as base, chromium() as driver:
        p = Person(driver, base, str(shots))
        p.login("alice", shot="0-login")
        p.shot("0-dashboard")
        stage1(p)
        p.logout()
        p.login("boss")
        stage2(p)
        p.logout()
        p.login("alice")
        stage3(p)
        p.logout()
        p.login("bob")
        stage4(p)
        p.go("/p/sky/")
        assert "complete" in p.css("#topic-0").text
        p.shot("5-dashboard-complete")
        p.logout()
        p.login("boss")
        p.go("/p/sky/audit")
        assert "s4_align" in p.css("#audit").text and "s2_freeze" in p.css("#audit").text
    assert sorted(os.listdir(shots)) == ["0-dashboard.png", "0-login.png", "1-stage1-nugget-creation.png",
                                         "2-stage2-revision.png", "3-stage3-support.png", "4-stage4-alignment.png",
                                         "5-dashboard-complete.png"]
    from pyterrier_nuggets.annotate import export_project
    export_project(store.directory, str(tmp_path / "out"))
    check_export(tmp_path / "out")
    assert NEW_NUGGET[0] in (tmp_path / "out" / "nuggets.jsonl").read_text()


# ------------------------------------------------------------------------- usability, page by page

def _db(store, sql, *args):
    with store.read() as c:
        return [tuple(r) for r in c.execute(sql, args)]


def test_stage1_one_save_keeps_everything_and_a_refusal_names_the_field(tmp_path):
    """Stage 1 has one form: an answer, a reworded question, a new nugget and the grade are saved by one click.
    A refused form saves nothing, says which field, and keeps what was typed; the answers can be edited and
    deleted."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base, chromium() as driver:
        p = Person(driver, base, str(tmp_path))
        p.login("alice")
        p.go("/p/sky/t/0/s1/d/0")
        n0 = p.nugget("Blue light is scattered more than red light")
        p.css("input[name^=answer-]", n0).send_keys("five times more")
        n1 = p.nugget("Sunsets are red")
        p.css("details.edit summary", n1).click()
        p.fill(p.css("input[name^=qtext-]", n1), "Why are sunsets red?")
        p.css("input[name=question]").send_keys("Why not violet?")
        p.css("input[name=relevance][value='3']").click()
        p.submit(p.css("#save"))  # the new nugget has no answer: refused, nothing saved
        assert "the new nugget's answer is empty" in p.css("#form-error").text
        assert "the new nugget's answer is empty" in p.css("#error-qanswer").text
        assert "invalid" in p.css("#f-qanswer").get_attribute("class")
        assert p.css("input[name=question]").get_attribute("value") == "Why not violet?"
        assert p.css("input[name^=answer-]", p.nugget("Blue light")).get_attribute("value") == "five times more"
        assert p.css("input[name^=qtext-]", p.nugget("Sunsets are red")).get_attribute("value") == "Why are sunsets red?"
        assert p.css("input[name=relevance][value='3']").is_selected()
        assert _db(store, "SELECT count(*) FROM nugget_answers") == [(0,)]
        p.css("input[name=qanswer]").send_keys("eyes are less sensitive to violet")
        p.submit(p.css("#save"))
        assert p.css("#notice").text == "Saved."
        assert _db(store, "SELECT text FROM nuggets ORDER BY idx") == [
            ("Blue light is scattered more than red light",), ("Why are sunsets red?",), ("Why not violet?",)]
        assert _db(store, "SELECT text FROM nugget_answers ORDER BY id") == [
            ("five times more",), ("eyes are less sensitive to violet",)]
        assert _db(store, "SELECT relevance FROM pool WHERE position = 0") == [(3,)]
        # edit one answer, delete the other
        first = p.xpath("//li[starts-with(@id, 'answer-')][contains(., 'five times more')]")
        p.css("summary", first).click()
        p.fill(p.css("input[name^=atext-]", first), "about five times more")
        second = p.xpath("//li[starts-with(@id, 'answer-')][contains(., 'eyes are less')]")
        p.css("summary", second).click()
        p.css("input[name^=adelete-]", second).click()
        p.submit(p.css("#save"))
        assert _db(store, "SELECT text FROM nugget_answers") == [("about five times more",)]
        p.shot("stage1-after-edits")


def test_a_session_that_ends_mid_form_loses_nothing(tmp_path):
    """alice's session ends while she types: what she typed is kept as her draft. bob signs in next at the same
    browser: it is not offered to him. When she signs in, she is back on the page with it, its changes listed."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base, chromium() as driver:
        p = Person(driver, base, str(tmp_path))
        p.login("alice")
        p.go("/p/sky/t/0/s1/d/1")
        p.css("input[name^=answer-]", p.nugget("Sunsets are red")).send_keys("the horizon looks red")
        with store.write() as c:  # the session ends (expired, or signed out elsewhere)
            c.execute("DELETE FROM sessions")
        p.submit(p.css("#save"))
        assert "Your session has ended" in p.css("#login-error").text
        assert "What you typed is kept" in p.css("#login-error").text
        p.sign_in_here("bob")
        assert p.d.current_url.endswith("/p/sky/t/0/s1/d/1")
        assert not p.d.find_elements(By.ID, "draft-changes")
        assert p.css("input[name^=answer-]", p.nugget("Sunsets are red")).get_attribute("value") == ""
        p.logout()
        p.go("/p/sky/t/0/s1/d/1")
        p.sign_in_here("alice")
        assert p.d.current_url.endswith("/p/sky/t/0/s1/d/1")  # back on the document, not the dashboard
        assert "not saved yet" in p.css("#notice").text
        changes = p.css("#draft-changes").text
        assert "t1:n1: new answer" in changes and "the horizon looks red" in changes
        assert p.css("input[name^=answer-]", p.nugget("Sunsets are red")).get_attribute("value") == "the horizon looks red"
        assert _db(store, "SELECT count(*) FROM nugget_answers") == [(0,)]
        p.submit(p.css("#save"))
        assert _db(store, "SELECT text FROM nugget_answers") == [("the horizon looks red",)]
        # a page asked for without a session returns there after signing in, too
        with store.write() as c:
            c.execute("DELETE FROM sessions")
        p.go("/p/sky/t/0/s1/d/2")
        p.sign_in_here("alice")
        assert p.d.current_url.endswith("/p/sky/t/0/s1/d/2")


def test_stage2_confirms_deletes_merges_and_freezing_and_undoes_them(tmp_path):
    store = make_project(tmp_path)
    from pyterrier_nuggets.annotate import protocol
    from tests.annotate_project import form_id
    alice = {u["name"]: u for u in store.users()}["alice"]
    with store.read() as c:
        n1 = {n["text"]: n for n in protocol._nuggets(c, "t1")}["Sunsets are red"]
    protocol.save_document(store, alice, 0, 1, 1, protocol.DocumentForm(
        form_id(), new_answers=[("a", n1["id"], "the horizon")], new_nugget=("Why not violet?", "eyes")))
    with live_server([store.directory]) as base, chromium() as driver:
        p = Person(driver, base, str(tmp_path))
        p.login("boss")
        p.go("/p/sky/t/0/s2")
        # one form for the page: two rows changed, one save
        p.fill(p.css("input[name^=text-]", row_of(p, "Blue light is scattered more than red light")), "Why is the sky blue?")
        p.css("input[name^=importance-][value=okay]", row_of(p, "Why not violet?")).click()
        Select(p.css("select", row_of(p, "Sunsets are red"))).select_by_visible_text("delete")
        Select(p.css("select", row_of(p, "Why not violet?"))).select_by_index(2)  # merge into t1:n0
        p.submit(p.css("#save"))
        consequences = p.css("#consequences").text
        assert "Delete t1:n1 “Sunsets are red”" in consequences and "Merge t1:n2 “Why not violet?” into t1:n0" in consequences
        assert _db(store, "SELECT count(*) FROM nuggets WHERE status = 'active'") == [(3,)]  # nothing yet
        p.submit(p.css("#confirm-no"))  # go back: the form as it was, to change it
        assert Select(p.css("select", row_of(p, "Sunsets are red"))).first_selected_option.text == "delete"
        assert p.css("input[name^=text-]", row_of(p, "Why is the sky blue?")) is not None
        p.submit(p.css("#save"))
        p.submit(p.css("#confirm-yes"))
        assert _db(store, "SELECT idx, text, status, importance FROM nuggets ORDER BY idx") == [
            (0, "Why is the sky blue?", "active", "vital"), (1, "Sunsets are red", "deleted", "okay"),
            (2, "Why not violet?", "merged", "okay")]
        assert "t1:n1 Sunsets are red" in p.css("#removed").text
        # undo the deletion: no confirmation needed
        p.xpath("//li[contains(., 'Sunsets are red')]/label/input[@name='restore']").click()
        p.submit(p.css("#save"))
        assert _db(store, "SELECT status FROM nuggets WHERE idx = 1") == [("active",)]
        assert _db(store, "SELECT n.idx FROM nugget_answers a JOIN nuggets n ON n.id = a.nugget_id "
                   "WHERE a.text = 'the horizon'") == [(1,)]
        with store.write() as c:  # stage 1 done for every document
            c.execute("UPDATE pool SET s1_done_at = 'now', s1_done_by = 'alice', relevance = 1")
        p.go("/p/sky/t/0/s2")
        p.submit(p.css("#freeze"))
        assert "Freeze the 2 nugget questions" in p.css("#consequences").text
        p.submit(p.css("#confirm-yes"))
        assert "frozen, 2 nuggets" in p.css("#topic-0").text
        p.go("/p/sky/t/0/s2")
        p.submit(p.css("#unfreeze button"))
        assert "Unfreeze the nugget questions of t1" in p.css("#consequences").text
        p.submit(p.css("#confirm-yes"))
        assert _db(store, "SELECT frozen_at FROM topics") == [(None,)]
        p.shot("stage2-revision-after-undo")


def test_stage4_nuggets_show_their_text(tmp_path):
    from tests.annotate_project import annotate_by_api
    store = make_project(tmp_path)
    annotate_by_api(store)
    with store.write() as c:
        c.execute("UPDATE reports SET s4_done_at = NULL")
    with live_server([store.directory]) as base, chromium() as driver:
        p = Person(driver, base, str(tmp_path))
        p.login("bob")
        p.go("/p/sky/t/0/s4")
        chips = [e.text for e in p.d.find_elements(By.CSS_SELECTOR, "#sentence-0 label.chip")]
        assert chips == ["t1:n0 Blue light is scattered more than red light", "t1:n1 Why are sunsets red?",
                         "t1:n2 Why does the sky not look violet?"]


def test_manager_pages_index_audit_users_and_own_password(tmp_path):
    """The index lists no project and its brand link goes home; the audit trail pages back to its first row;
    the manager disables a user on the Users page; anyone changes their own password."""
    store = make_project(tmp_path, users=("boss", "alice", "bob", "carol"))
    with store.write() as c:
        for i in range(150):
            c.execute("INSERT INTO audit(at, user, action, target, detail) VALUES ('2025', 'test', 'page_test', ?, "
                      "'{}')", (str(i),))
    with live_server([store.directory]) as base, chromium() as driver:
        p = Person(driver, base, str(tmp_path))
        p.go("/")
        assert "sky" not in p.css("#index").text and p.css(".brand").get_attribute("href") == base + "/"
        p.login("boss")
        p.go("/p/sky/audit")
        pages = 1
        while p.d.find_elements(By.ID, "older"):
            p.submit(p.css("#older"))
            pages += 1
        assert pages == 2 and p.d.find_elements(By.XPATH, "//td[text()='create_project']")
        p.go("/p/sky/users")
        p.css("#user-carol input[name^=disabled-]").click()
        p.submit(p.css("#save"))
        assert p.css("#user-carol input[name^=disabled-]").is_selected() and "saved" in p.css("#notice").text
        p.logout()
        p.go("/p/sky/login")
        p.sign_in_here("carol")
        assert "disabled" in p.css("#login-error").text
        p.login("bob")
        p.submit(p.css("a.who"))
        p.css("input[name=current]").send_keys(PASSWORDS["bob"])
        p.css("input[name=new]").send_keys("a-new-password")
        p.css("input[name=again]").send_keys("another-one")
        p.submit(p.css("#account button"))
        assert "the two new passwords differ" in p.css("#error-again").text
        p.css("input[name=current]").send_keys(PASSWORDS["bob"])
        p.css("input[name=new]").send_keys("a-new-password")
        p.css("input[name=again]").send_keys("a-new-password")
        p.submit(p.css("#account button"))
        assert "Your password is changed" in p.css("#notice").text
    assert store.authenticate("bob", "a-new-password") is not None


def test_an_edit_saved_after_the_browsers_back_is_not_lost(tmp_path):
    """Save, go Back (the page may come from the back/forward cache with the form id it had), change the form and
    save again: the second edit is saved too, never answered "saved already"."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base, chromium() as driver:
        p = Person(driver, base, str(tmp_path))
        p.login("alice")
        p.go("/p/sky/t/0/s1/d/3")
        p.css("input[name=question]").send_keys("Saved first?")
        p.css("input[name=qanswer]").send_keys("yes")
        p.submit(p.css("#save"))
        assert p.css("#notice").text == "Saved."
        p.d.back()  # Chromium restores the page from its back/forward cache: the same form id, the fields as typed
        WebDriverWait(p.d, 30, ignored_exceptions=(WebDriverException,)).until(lambda d: d.current_url.endswith(
            "/p/sky/t/0/s1/d/3") and d.execute_script("return document.readyState === 'complete';"))
        p.fill(p.css("input[name=question]"), "Saved after Back?")
        p.fill(p.css("input[name=qanswer]"), "also")
        p.submit(p.css("#save"))
        assert "saved already" not in p.d.page_source and p.css("#notice").text == "Saved."
    assert _db(store, "SELECT text FROM nuggets WHERE origin = 'annotator' ORDER BY idx") == [
        ("Saved first?",), ("Saved after Back?",)]


def test_a_page_of_another_origin_cannot_leave_a_draft(tmp_path):
    """A page on another origin of the same site (another port of the host: the browser sends the tool's
    SameSite=Strict cookies with its form) posts to the Users page after the manager's session ended: nothing is
    kept, the manager signs in to the Users page as it is saved, and one click on Save changes nothing."""
    import http.server

    from tests.annotate_project import free_port
    store = make_project(tmp_path)
    users = {u["name"]: u["id"] for u in store.users()}
    with live_server([store.directory]) as base:
        evil = (f'<!doctype html><form method="post" action="{base}/p/sky/users" id="evil">'
                f'<input type="hidden" name="disabled-{users["bob"]}" value="1">'
                f'<input type="hidden" name="base-user-{users["alice"]}" value="0:x">'
                '<button type="submit" id="prize">Win a prize</button></form>').encode()

        class Evil(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(evil)

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", free_port()), Evil)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            with chromium() as driver:
                p = Person(driver, base, str(tmp_path))
                p.login("boss")
                with store.write() as c:  # the manager's session ends
                    c.execute("DELETE FROM sessions")
                p.d.get(f"http://127.0.0.1:{server.server_port}/")
                p.submit(p.css("#prize"))
                assert "not kept" in p.css("#login-error").text
                p.sign_in_here("boss")
                assert p.d.current_url.endswith("/p/sky/users")
                assert not p.d.find_elements(By.ID, "draft-changes")
                assert not p.css(f"#user-bob input[name=disabled-{users['bob']}]").is_selected()
                p.submit(p.css("#save"))
        finally:
            server.shutdown()
            server.server_close()
            thread.join(10)
    assert {u["name"]: (u["topics"], u["disabled"]) for u in store.users()}["bob"] == (["t1"], False)
    assert _db(store, "SELECT count(*) FROM drafts") == [(0,)]


def test_two_tabs_saving_the_same_user_show_a_conflict(tmp_path):
    """The Users page open in two tabs: the second save of the same user is the conflict page (both versions, who
    changed it and when), not a server error, and writes nothing."""
    store = make_project(tmp_path)
    with live_server([store.directory]) as base, chromium() as driver:
        p = Person(driver, base, str(tmp_path))
        p.login("boss")
        p.go("/p/sky/users")
        first = p.d.current_window_handle
        p.d.switch_to.new_window("tab")
        p.go("/p/sky/users")
        p.css("#user-alice input[value=t1]").click()
        p.submit(p.css("#save"))
        assert "saved" in p.css("#notice").text
        p.d.switch_to.window(first)
        p.css("#user-alice input[name^=disabled-]").click()
        p.submit(p.css("#save"))
        assert "Not saved: someone changed this first" in p.css("#conflict").text
        assert "user alice was changed by boss" in p.css("#conflict").text
    assert {u["name"]: (u["topics"], u["disabled"]) for u in store.users()}["alice"] == ([], False)
