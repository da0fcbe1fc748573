"""The annotation tool in a real browser (Debian's chromium + chromium-driver, driven by selenium): three
people complete all four stages of the test project (alice stages 1 and 3, boss stage 2, bob stage 4)
through the pages, the export then scores to the hand-worked values, and a script in a document and an
onerror attribute in an answer stay text. Screenshots of each stage go to the test's temporary directory
(and to $PN_SCREENSHOT_DIR when set, e.g. docs/images for docs/annotation.md)."""
import os
import shutil
import tempfile
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
    from selenium.webdriver.support.ui import WebDriverWait
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


def stage2(p: Person):
    p.submit(p.css("#topic-0 td:nth-child(3) a"))
    old, new = STAGE2["reword"]
    row = p.xpath(f"//tr[.//input[@name='text'][@value={old!r}]]")
    p.fill(p.css("input[name=text]", row), new)
    p.submit(p.css("button[type=submit]", row))
    for text, importance in STAGE2["importance"].items():
        row = p.xpath(f"//tr[.//input[@name='text'][@value={text!r}]]")
        p.css(f"input[name=importance][value={importance}]", row).click()
        p.shot("2-stage2-revision")
        p.submit(p.css("button[type=submit]", row))
    p.submit(p.css("#freeze button"))
    assert "frozen, 3 nuggets" in p.css("#topic-0").text


def stage3(p: Person):
    p.submit(p.css("#topic-0 td:nth-child(4) a"))
    first = True
    while not p.d.find_elements(By.ID, "stage-done"):
        for item in p.d.find_elements(By.CSS_SELECTOR, "#citing .sentence"):
            key = p.css("input[name=item]", item).get_attribute("value")
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
            for text in nuggets:
                p.xpath(f".//label[@title={text!r}]/input", s).click()
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
