"""``pyterrier-nuggets report`` in a real browser (Debian's chromium + chromium-driver, driven by selenium), on the
main job's output and on a ``trec-rag`` + ``arena`` output, opened from the file system: the pages load without a
console error, every drill-down link resolves, the numbers shown equal the scores files, markup in answers, nuggets,
criteria, topics and segments stays text, and the pages work from the keyboard. Screenshots go to the test's
temporary folder (and to $PN_SCREENSHOT_DIR when set, e.g. docs/images for docs/report.md)."""
import csv
import json
import os
import shutil
import tempfile
from urllib.parse import unquote

import pytest

from pyterrier_nuggets import cli
from pyterrier_nuggets.testing import TestEndpoint
from tests.report_folders import PAYLOAD, main_job_folder, trec_rag_folders

BROWSER, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the [test] extra installs it
    webdriver = None

pytestmark = pytest.mark.skipif(not (BROWSER and DRIVER and webdriver) and not os.environ.get("CI"),
                                reason="needs chromium, chromium-driver (apt) and selenium (bash run.sh test installs them)")


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium on a fresh profile, its console kept (the pages must log no error)."""
    profile = tempfile.mkdtemp(prefix="pn-report-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = BROWSER
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage", "--window-size=1400,1000",
                 f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def main_job(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("main-job")
    out, coll = main_job_folder(tmp)
    report = tmp / "report"
    assert cli.main(["report", str(out), "--collection", str(coll), "--out", str(report)]) == 0
    return out, report


@pytest.fixture(scope="module")
def trec_rag(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trec-rag")
    with TestEndpoint() as server:
        trec, arena, docs = trec_rag_folders(tmp, server.base_url)
    report = tmp / "report"
    assert cli.main(["report", str(trec), str(arena), "--docs", docs, "--out", str(report)]) == 0
    return trec, report


def _open(driver, url: str, ready: str = "#main") -> None:
    """Load a page of the report and wait until its script has drawn ``ready``; its console must stay clean."""
    driver.get(url)
    WebDriverWait(driver, 20, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return document.readyState") == "complete" and d.find_elements(By.CSS_SELECTOR, ready))
    _no_console_errors(driver)


def _no_console_errors(driver) -> None:
    problems = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert not problems, problems
    assert driver.execute_script("return window.__pnXss === undefined"), "markup in the data ran as script"


def _shot(driver, tmp_path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    extra = os.environ.get("PN_SCREENSHOT_DIR")
    if extra:
        os.makedirs(extra, exist_ok=True)
        shutil.copy(path, os.path.join(extra, f"report-{name}.png"))


def _means(path) -> dict[tuple[str, str], float]:
    """(system, measure) -> mean, as the scores file states it (a joint table's CSV, or scores.tsv's 'all')."""
    if path.name == "scores.tsv":
        with open(path, newline="") as f:
            return {(r["run"], r["measure"]): float(r["value"]) for r in csv.DictReader(f, delimiter="\t")
                    if r["qid"] == "all"}
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    measures = [c for c in rows[0] if c != "system" and not c.endswith(" p") and f"{c} p" in rows[0]]
    return {(r["system"], m): float(r[m]) for r in rows for m in measures}


def _per_topic(path) -> dict[tuple[str, str, str], float]:
    with open(path, newline="") as f:
        if path.name == "scores.tsv":
            return {(r["run"], r["qid"], r["measure"]): float(r["value"]) for r in csv.DictReader(f, delimiter="\t")
                    if r["qid"] != "all"}
        return {(r["system"], r["qid"], r["measure"]): float(r["value"]) for r in csv.DictReader(f)}


def _check_overview(driver, report, means_file, per_topic_file) -> list[str]:
    """The leaderboard's numbers are the file's means (4 decimals shown, the full value kept); the heat map's and
    the topic table's are the file's per-topic values; returns every drill-down link of the page."""
    _open(driver, (report / "index.html").as_uri(), "#heatmap table")
    means = _means(means_file)
    cells = driver.find_elements(By.CSS_SELECTOR, "#leaderboard a.num[data-measure]")
    assert len(cells) == len(means)
    for a in cells:
        expected = means[a.get_attribute("data-system"), a.get_attribute("data-measure")]
        assert float(a.get_attribute("data-value")) == expected
        shown = a.text.rstrip("↑↓")
        assert shown == (f"{expected:.1f}" if a.get_attribute("data-measure") == "AnswerWords" else f"{expected:.4f}")
    per_topic = _per_topic(per_topic_file)
    measure = driver.find_element(By.ID, "measure").get_attribute("value")
    heat = driver.find_elements(By.CSS_SELECTOR, "#heatmap a.cell")
    assert heat
    for a in heat:
        params = dict(p.split("=", 1) for p in a.get_attribute("href").split("#", 1)[1].split("&"))
        key = (unquote(params["system"]), unquote(params["topic"]), measure)
        value = a.get_attribute("data-value")
        assert (float(value) if value else None) == per_topic.get(key)
    links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "a[href*='topic.html']")]
    return sorted(set(links))


def _drawn(driver, topic: str, systems: list[str]) -> bool:
    """The topic page shows ``topic`` with ``systems``: after a link that changes only the hash of the page shown, the
    old topic stays until the new one's data is in."""
    title = driver.find_elements(By.ID, "topic-title")
    return bool(title) and title[0].text == f"Topic {topic}" and [
        h.text for h in driver.find_elements(By.CSS_SELECTOR, "article.panel h3.system")] == systems


def _check_drilldowns(driver, links: list[str], per_topic_file) -> None:
    """Every drill-down link opens its topic with its system (and the one compared) shown, and the scores it shows
    are the file's values of that system on that topic."""
    assert links
    per_topic = _per_topic(per_topic_file)
    for link in links:
        params = {k: unquote(v) for k, v in (p.split("=", 1) for p in link.split("#", 1)[1].split("&"))}
        _open(driver, link, "#topic-title")
        systems = [params["system"]] + ([params["compare"]] if params.get("compare") else [])

        WebDriverWait(driver, 20, ignored_exceptions=(WebDriverException,)).until(
            lambda d, topic=params["topic"], shown=systems: _drawn(d, topic, shown))
        panels = driver.find_elements(By.CSS_SELECTOR, "article.panel")
        for panel, system in zip(panels, systems):
            shown = {a.get_attribute("data-measure"): a.get_attribute("data-value")
                     for a in panel.find_elements(By.CSS_SELECTOR, "dl.scores a.num")}
            expected = {m: v for (s, q, m), v in per_topic.items() if (s, q) == (system, params["topic"])}
            assert {m: float(v) for m, v in shown.items() if v} == expected


def test_main_job_report_in_the_browser(browser, main_job, tmp_path):
    out, report = main_job
    links = _check_overview(browser, report, out / "joint_table.csv", out / "joint_table.perquery.csv")
    assert "Heat map" in browser.find_element(By.ID, "heatmap-hint").text
    labels = browser.find_element(By.CSS_SELECTOR, "section.labels").text
    assert "baseline: embedding" in labels and "not a judge whose numbers mean anything" in labels
    _shot(browser, tmp_path, "overview")
    _check_drilldowns(browser, links, out / "joint_table.perquery.csv")
    # the drill-down of the system with markup in its answer: citations coloured by their support labels
    _open(browser, (report / "topic.html").as_uri() + "#topic=t1&system=marked&compare=bm25-k2", "#topic-title")
    text = browser.find_element(By.ID, "topic-body").text
    assert PAYLOAD.split("\u2028")[0] in text  # the answer's markup, shown as text
    judgments = [json.loads(line) for line in (out / "marked.support.jsonl").read_text().split("\n") if line]
    support = {j["sentence"]: j for j in judgments if j["qid"] == "t1" and j["citation"] == 0}
    first = browser.find_elements(By.CSS_SELECTOR, "article.panel")[0]
    for j, judgment in support.items():
        marker = first.find_element(By.CSS_SELECTOR, f"p.sentence[data-sentence='{j}'] a.cite")
        assert marker.get_attribute("data-support") == judgment["support"]
    grades = {c.text for c in first.find_elements(By.CSS_SELECTOR, "table.segments td.grade")}
    assert grades <= {"0", "1", "2", "3"} and grades  # the collection's relevance grades
    assert "Arena battles on this topic" in text and "marked preferred" in text
    browser.find_element(By.CSS_SELECTOR, "details.battle summary").click()
    battle = browser.find_element(By.CSS_SELECTOR, "details.battle").text
    assert "Judge: baseline: prefers the answer covering more nuggets" in battle and "No reply recorded" in battle
    _shot(browser, tmp_path, "topic-compare")


def test_trec_rag_report_in_the_browser(browser, trec_rag, tmp_path):
    trec, report = trec_rag
    links = _check_overview(browser, report, trec / "scores.tsv", trec / "scores.tsv")
    note = browser.find_element(By.CSS_SELECTOR, "#board ~ p.note").text
    assert "computed by the report" in note and "paired t-test" in note
    _check_drilldowns(browser, links, trec / "scores.tsv")
    _open(browser, (report / "topic.html").as_uri() + "#topic=t1&system=A", "#topic-title")
    body = browser.find_element(By.ID, "topic-body").text
    assert "Bananas <img src=x" in body  # criterion and nugget markup, as text
    verdicts = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "table.rubric td[class^='verdict-']")]
    written = json.loads((trec / "A.verdicts.jsonl").read_text().split("\n")[0])["criteria"]  # U+2028 is no line end
    assert verdicts == [c["verdict"].replace("_", " ") for c in written]
    assert "Capital city: covered" in body  # sub-narratives
    battle = browser.find_element(By.CSS_SELECTOR, "details.battle summary")
    battle.click()
    assert "[[" in browser.find_element(By.CSS_SELECTOR, "details.battle pre.reply").text  # the judge's reply
    assert "127.0.0.1" not in browser.find_element(By.TAG_NAME, "body").text  # the model, never the endpoint
    _shot(browser, tmp_path, "trec-rag-topic")
    # a score of the drill-down opens the overview on that measure, its system as A
    score = browser.find_element(By.CSS_SELECTOR, "dl.scores a.num[data-measure='RubricScore']")
    score.click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#heatmap table"))
    assert browser.find_element(By.ID, "measure").get_attribute("value") == "RubricScore"
    assert browser.find_element(By.ID, "system-a").get_attribute("value") == "A"
    _no_console_errors(browser)


def test_what_a_folder_lacks_is_shown_in_the_browser(browser, trec_rag, tmp_path):
    """A trec-rag folder without one run's assignments: the box on both pages and the note in that run's drill-down;
    an arena --battles folder (ratings without battles, no topic): the leaderboard with its ratings, no console
    error."""
    trec, _ = trec_rag
    partial = tmp_path / "partial"
    shutil.copytree(trec, partial)
    (partial / "C.assignments.jsonl").unlink()
    assert cli.main(["report", str(partial), "--out", str(tmp_path / "r1")]) == 0
    _open(browser, (tmp_path / "r1" / "index.html").as_uri(), "#heatmap table")
    assert "C.assignments.jsonl" in browser.find_element(By.ID, "incomplete").find_element(By.XPATH, "..").text
    _open(browser, (tmp_path / "r1" / "topic.html").as_uri() + "#topic=t1&system=C", "#topic-title")
    notes = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "#topic-body p.note.warn")]
    assert any("The folder lacks C.assignments.jsonl" in n for n in notes), notes
    _open(browser, (tmp_path / "r1" / "topic.html").as_uri() + "#topic=t1&system=A", "#topic-title")
    assert not browser.find_elements(By.CSS_SELECTOR, "#topic-body p.note.warn")
    assert cli.main(["arena", "--battles", str(trec.parent / "arena" / "battles.jsonl"), "--out",
                     str(tmp_path / "board"), "--resamples", "20", "--no-plot"]) == 0
    assert cli.main(["report", str(tmp_path / "board"), "--out", str(tmp_path / "r2")]) == 0
    _open(browser, (tmp_path / "r2" / "index.html").as_uri(), "#leaderboard")
    ratings = browser.find_elements(By.CSS_SELECTOR, "#leaderboard a.num[data-arena]")
    assert sorted(a.get_attribute("data-arena") for a in ratings) == ["A", "B", "C"]
    assert "judged elsewhere" in browser.find_element(By.ID, "incomplete").find_element(By.XPATH, "..").text
    _no_console_errors(browser)


def test_the_data_files_keep_markup_as_json_text(main_job, trec_rag):
    """The JSON in every data script has no raw < > & U+2028 U+2029 (nothing can end the script or start markup),
    and reads back to the texts of the files."""
    for _, report in (main_job, trec_rag):
        for path in (report / "data").iterdir():
            text = path.read_text(encoding="utf-8")
            assert not any(c in text for c in "<>&\u2028\u2029"), path
            assert text.startswith("PNReport.receive(") and text.endswith(");\n")
    topic = (trec_rag[1] / "data").glob("topic-*.js")
    payloads = 0
    for path in topic:
        body = path.read_text(encoding="utf-8")
        data = json.loads(body[body.index(",", body.index(",") + 1) + 1:-3])
        payloads += json.dumps(data).count("window.__pnXss=1")
    assert payloads >= 3  # the answer, the nugget and the criterion kept their text


def test_keyboard_navigation(browser, main_job):
    _, report = main_job
    _open(browser, (report / "index.html").as_uri(), "#heatmap table")
    body = browser.find_element(By.TAG_NAME, "body")
    body.click()
    for _ in range(300):  # Tab reaches the heat map (one tab stop: the grid moves with the arrows)
        body = browser.switch_to.active_element
        if "cell" in (body.get_attribute("class") or ""):
            break
        body.send_keys(Keys.TAB)
    cell = browser.switch_to.active_element
    assert cell.get_attribute("data-row") == "0" and cell.get_attribute("data-col") == "0"
    for key, place in ((Keys.ARROW_RIGHT, ("0", "1")), (Keys.ARROW_DOWN, ("1", "1")), (Keys.ARROW_LEFT, ("1", "0")),
                       (Keys.ARROW_RIGHT, ("1", "1"))):
        browser.switch_to.active_element.send_keys(key)
        moved = browser.switch_to.active_element
        assert (moved.get_attribute("data-row"), moved.get_attribute("data-col")) == place
    target = browser.switch_to.active_element
    href = target.get_attribute("href")
    target.send_keys(Keys.ENTER)
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "topic-title"))
    assert browser.current_url == href
    first = browser.find_element(By.ID, "topic-title").text
    browser.find_element(By.TAG_NAME, "body").send_keys("n")  # the next topic
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "topic-title").text != first)
    _no_console_errors(browser)
    # the leaderboard sorts from the keyboard: Enter on a column's button orders the systems by it
    _open(browser, (report / "index.html").as_uri(), "#heatmap table")
    button = browser.find_elements(By.CSS_SELECTOR, "#leaderboard button.sort")[2]
    button.send_keys(Keys.ENTER)
    values = [float(td.get_attribute("data-value") or "-inf")
              for td in browser.find_elements(By.CSS_SELECTOR, "#leaderboard tbody td:nth-of-type(2)")]
    assert values == sorted(values, reverse=True)
