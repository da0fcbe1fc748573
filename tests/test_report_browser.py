"""``pyterrier-nuggets report`` in a real browser (Debian's chromium + chromium-driver, driven by selenium), on the
main job's output and on a ``trec-rag`` + ``arena`` output, each with a second judge, opened from the file system:
the pages load without a console error, every drill-down link resolves, the numbers shown equal the scores files,
markup in answers, nuggets, criteria, topics and segments stays text, the pages work from the keyboard; the support
states are told apart without colour and by a 3:1 contrast; a 301-topic heat map keeps its system names in view and
its topic ids legible; no page overflows at 400 px, nor a TREC RAG 2026 leaderboard at 1,400 px; the four views
(nuggets x systems, judge against judge, topic difficulty, the arena) show what the files hold. Screenshots go to the
test's temporary folder (and to $PN_SCREENSHOT_DIR when set, e.g. docs/images for docs/report.md)."""
import csv
import json
import os
import shutil
import tempfile
from urllib.parse import unquote

import pytest

from pyterrier_nuggets import cli
from pyterrier_nuggets.testing import TestEndpoint
from tests.report_folders import (
    PAYLOAD,
    REPLY_MARKUP,
    lenient_judge,
    main_job_folder,
    replies_with_markup,
    second_judge_folder,
    trec_rag_folders,
)

BROWSER, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait
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
    """The main job's folder and its report, with a second judge of its answers (trec-rag on the test endpoint's
    lenient judge) for the judge-against-judge view."""
    tmp = tmp_path_factory.mktemp("main-job")
    out, coll = main_job_folder(tmp)
    with TestEndpoint(responder=lenient_judge) as server:
        second = second_judge_folder(tmp, server.base_url, [str(p) for p in sorted(out.glob("*.answers.jsonl"))],
                                     str(out / "nuggets.jsonl"))
    report = tmp / "report"
    assert cli.main(["report", str(out), "--collection", str(coll), "--second-judge", str(second), "--out",
                     str(report)]) == 0
    return out, report


# the runs of the TREC RAG 2026 folder under names as long as a track's
LONG_NAMES = {"A": "team-alpha.run-1-bm25-gpt4o-rerank", "B": "team-beta.run-2-splade-llama70b",
              "C": "team-gamma.run-3-hybrid-qwen-32b"}


@pytest.fixture(scope="module")
def trec_rag(tmp_path_factory):
    """A TREC RAG 2026 folder (nuggets with sub-narratives, every citation's support, a rubric with a flaw; the judges'
    replies with markup before their verdicts) and an arena of its runs under a track's long names, with a second judge
    of the same answers, and its report."""
    tmp = tmp_path_factory.mktemp("trec-rag")
    with TestEndpoint(responder=lambda body: lenient_judge(body) or replies_with_markup(body)) as server:
        trec, arena, docs = trec_rag_folders(tmp, server.base_url, LONG_NAMES)
        second = second_judge_folder(tmp, server.base_url, [str(tmp / "answers.jsonl")], str(tmp / "nuggets.jsonl"),
                                     docs)
    report = tmp / "report"
    assert cli.main(["report", str(trec), str(arena), "--docs", docs, "--topics", str(tmp / "topics.tsv"),
                     "--second-judge", str(second), "--out", str(report)]) == 0
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
    generation = browser.find_element(By.XPATH, "//div[contains(@class, 'label')][dt='generation']")
    assert "badge" not in generation.get_attribute("innerHTML")  # a generator is not a judge
    judged = {td.get_attribute("data-measure"): td.text.split("\n")[0] for td in
              browser.find_elements(By.CSS_SELECTOR, "#leaderboard tr.judged-by td")}
    assert judged["V_strict"] == "⚠ baseline" and judged["AnswerWords"] == "counted" and judged["nDCG@10"] == "qrels"
    _shot(browser, tmp_path, "overview")
    _check_drilldowns(browser, links, out / "joint_table.perquery.csv")
    # the drill-down of the system with markup in its answer: citations marked by their support labels
    _open(browser, (report / "topic.html").as_uri() + "#topic=t1&system=marked&compare=bm25-k2", "#topic-title")
    text = browser.find_element(By.ID, "topic-body").text
    assert PAYLOAD.split("\u2028")[0] in text  # the answer's markup, shown as text
    judgments = [json.loads(line) for line in (out / "marked.support.jsonl").read_text().split("\n") if line]
    support = {j["sentence"]: j for j in judgments if j["qid"] == "t1" and j["citation"] == 0}
    first = browser.find_elements(By.CSS_SELECTOR, "article.panel")[0]
    for j, judgment in support.items():
        marker = first.find_element(By.CSS_SELECTOR, f"p.sentence[data-sentence='{j}'] button.cite")
        assert marker.get_attribute("data-support") == judgment["support"]
        assert marker.text.startswith("[") and len(marker.text) <= 6  # [n] and a glyph, not a 44-character id
    grades = {c.text for c in first.find_elements(By.CSS_SELECTOR, "table.segments td.grade")}
    assert grades <= {"0", "1", "2", "3"} and grades  # the collection's relevance grades
    assert "Arena battles on this topic" in text and "marked preferred" in text
    browser.find_element(By.CSS_SELECTOR, "details.battle summary").click()
    battle = browser.find_element(By.CSS_SELECTOR, "details.battle").text
    assert "Judge: baseline: prefers the answer covering more nuggets" in battle and "No reply recorded" in battle
    _shot(browser, tmp_path, "topic-compare")


def test_a_citation_opens_its_text_in_place(browser, main_job):
    out, report = main_job
    _open(browser, (report / "topic.html").as_uri() + "#topic=t1&system=marked", "#topic-title")
    marker = browser.find_element(By.CSS_SELECTOR, "article.panel p.sentence[data-sentence='0'] button.cite")
    box = browser.find_element(By.CSS_SELECTOR, "article.panel div.sentence-wrap div.cited")
    assert not box.is_displayed()
    marker.click()
    docno = marker.get_attribute("data-docno")
    docs = {json.loads(line)["docno"]: json.loads(line)["text"] for line in
            (out.parent / "collection" / "docs.jsonl").read_text().splitlines()}
    assert box.is_displayed() and docs[docno] in box.text and marker.get_attribute("aria-expanded") == "true"
    marker.click()
    assert not box.is_displayed()
    _no_console_errors(browser)


def test_trec_rag_report_in_the_browser(browser, trec_rag, tmp_path):
    trec, report = trec_rag
    a = LONG_NAMES["A"]
    links = _check_overview(browser, report, trec / "scores.tsv", trec / "scores.tsv")
    note = browser.find_element(By.CSS_SELECTOR, "#board ~ p.note").text
    assert "computed by the report" in note and "paired t-test" in note and "holm-corrected" in note
    judged = {td.get_attribute("data-measure"): td for td in
              browser.find_elements(By.CSS_SELECTOR, "#leaderboard tr.judged-by td")}
    for m in ("V_strict", "SupportP", "RubricScore", "Arena"):  # every judge's badge, not only the arena's
        assert judged[m].get_attribute("data-kind") == "test endpoint" and "⚠" in judged[m].text, m
    counts = {td.get_attribute("data-measure"): td.text for td in
              browser.find_elements(By.CSS_SELECTOR, "#leaderboard tr.topic-counts td[data-measure]")}
    assert counts["V_strict"] == "2" and counts["RubricScore"] == "2"
    _check_drilldowns(browser, links, trec / "scores.tsv")
    _open(browser, (report / "topic.html").as_uri() + f"#topic=t1&system={a}", "#topic-title")
    body = browser.find_element(By.ID, "topic-body").text
    assert "Bananas <img src=x" in body  # criterion and nugget markup, as text
    assert "tell me about French cities" in body  # the topic's text, from --topics
    verdicts = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "article.panel table.rubric td[class^='verdict-']")]
    written = json.loads((trec / f"{a}.verdicts.jsonl").read_text().split("\n")[0])["criteria"]  # U+2028: no line end
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
    assert browser.find_element(By.ID, "system-a").get_attribute("value") == a
    _no_console_errors(browser)


def test_rubric_flaws_are_coloured_by_their_effect(browser, trec_rag):
    """A −3 flaw 'not satisfied' was red although it helps the score: each criterion shows the points it gained or
    lost, its effect, and a flaw is marked as one; the points add up to the rubric score (with partial credit)."""
    trec, report = trec_rag
    scores = _per_topic(trec / "scores.tsv")
    for run in LONG_NAMES.values():
        _open(browser, (report / "topic.html").as_uri() + f"#topic=t1&system={run}", "#topic-title")
        panel = browser.find_element(By.CSS_SELECTOR, "article.panel")
        rows = panel.find_elements(By.CSS_SELECTOR, "table.rubric tbody tr")
        flaw = rows[2]  # "Lyon", weight -3
        assert "flaw" in flaw.find_element(By.CSS_SELECTOR, "td:nth-child(3)").text
        verdict = flaw.find_element(By.CSS_SELECTOR, "td[class^='verdict-']").text
        effect = flaw.get_attribute("class")
        assert effect == ("effect-lost" if verdict == "satisfied" else "effect-avoided"), (run, verdict, effect)
        points = flaw.find_element(By.CSS_SELECTOR, "td.points").text
        assert points == ("−3 (flaw present)" if verdict == "satisfied" else "0 (flaw absent)")
        colour = browser.execute_script("return getComputedStyle(arguments[0]).color",
                                        flaw.find_element(By.CSS_SELECTOR, "td.points"))
        assert (colour == "rgb(179, 38, 30)") == (verdict == "satisfied")  # red only where it costs points
        total = panel.find_element(By.XPATH, ".//p[starts-with(., 'Points:')]").text
        assert float(total.split("= ")[1].split(",")[0]) == pytest.approx(scores[run, "t1", "RubricScore"], abs=1e-4)


def test_what_a_folder_lacks_is_shown_in_the_browser(browser, trec_rag, tmp_path):
    """A trec-rag folder without one run's assignments: the box on both pages and the note in that run's drill-down;
    an arena --battles folder (ratings without battles, no topic): the leaderboard with its ratings, no console
    error."""
    trec, _ = trec_rag
    partial = tmp_path / "partial"
    shutil.copytree(trec, partial)
    c, a = LONG_NAMES["C"], LONG_NAMES["A"]
    (partial / f"{c}.assignments.jsonl").unlink()
    assert cli.main(["report", str(partial), "--out", str(tmp_path / "r1")]) == 0
    _open(browser, (tmp_path / "r1" / "index.html").as_uri(), "#heatmap table")
    assert f"{c}.assignments.jsonl" in browser.find_element(By.ID, "incomplete").find_element(By.XPATH, "..").text
    _open(browser, (tmp_path / "r1" / "topic.html").as_uri() + f"#topic=t1&system={c}", "#topic-title")
    notes = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "#topic-body p.note.warn")]
    assert any(f"The folder lacks {c}.assignments.jsonl" in n for n in notes), notes
    _open(browser, (tmp_path / "r1" / "topic.html").as_uri() + f"#topic=t1&system={a}", "#topic-title")
    assert not browser.find_elements(By.CSS_SELECTOR, "#topic-body p.note.warn")
    assert cli.main(["arena", "--battles", str(trec.parent / "arena" / "battles.jsonl"), "--out",
                     str(tmp_path / "board"), "--resamples", "20", "--no-plot"]) == 0
    assert cli.main(["report", str(tmp_path / "board"), "--out", str(tmp_path / "r2")]) == 0
    _open(browser, (tmp_path / "r2" / "index.html").as_uri(), "#leaderboard")
    ratings = browser.find_elements(By.CSS_SELECTOR, "#leaderboard a.num[data-arena]")
    assert sorted(x.get_attribute("data-arena") for x in ratings) == sorted(LONG_NAMES.values())
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
    # the page redraws the title: an element found just before it is replaced is looked up again
    WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: d.find_element(By.ID, "topic-title").text != first)
    _no_console_errors(browser)
    # the leaderboard sorts from the keyboard: Enter on a column's button orders the systems by it
    _open(browser, (report / "index.html").as_uri(), "#heatmap table")
    button = browser.find_elements(By.CSS_SELECTOR, "#leaderboard button.sort")[2]
    button.send_keys(Keys.ENTER)
    values = [float(td.get_attribute("data-value") or "-inf")
              for td in browser.find_elements(By.CSS_SELECTOR, "#leaderboard tbody td:nth-of-type(2)")]
    assert values == sorted(values, reverse=True)


# ------------------------------------------------------------------------------ readable by everyone, any size

def _rgb(driver, element, prop: str = "backgroundColor") -> tuple[int, int, int]:
    value = driver.execute_script(f"return getComputedStyle(arguments[0]).{prop}", element)
    return tuple(int(float(x)) for x in value[value.index("(") + 1:value.index(")")].split(",")[:3])


def _luminance(rgb) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""
    def channel(c):
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a, b) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_support_states_are_told_apart_without_colour(browser, main_job, trec_rag):
    """Support was shown by colour alone (full vs partial 1.08:1, full vs none 1.23:1; one olive under deuteranopia):
    the three grades' markers now differ by 3:1 or more in contrast, and every state has its own glyph and words."""
    for _, report in (main_job, trec_rag):
        _open(browser, (report / "topic.html").as_uri(), "#topic-title")
        legend = {s: browser.find_element(By.CSS_SELECTOR, f"p.hint span.cite.support-{s}")
                  for s in ("full", "partial", "none", "unjudged", "unknown")}
        colours = {s: _rgb(browser, e) for s, e in legend.items()}
        for x, y in (("full", "partial"), ("partial", "none"), ("full", "none")):
            assert _contrast(colours[x], colours[y]) >= 3, (x, y, colours[x], colours[y])
        for s, e in legend.items():  # the text on each marker is readable on its background
            assert _contrast(_rgb(browser, e, "color"), colours[s]) >= 4.5, s
        glyphs = {s: e.find_element(By.CSS_SELECTOR, ".glyph").text for s, e in legend.items()}
        assert len(set(glyphs.values())) == len(glyphs) and all(glyphs.values()), glyphs
        for marker in browser.find_elements(By.CSS_SELECTOR, "#topic-body button.cite"):
            state = marker.get_attribute("data-support")
            assert _rgb(browser, marker) == colours[state] and glyphs[state] in marker.text, state
            words = {"full": "full support", "partial": "partial support", "none": "no support",
                     "unjudged": "unjudged", "unknown": "no support judgment"}[state]
            assert words in marker.get_attribute("aria-label")
        _no_console_errors(browser)


def _topics_folder(root, systems, topics: int):
    """A scores.tsv of ``systems`` on ``topics`` topics (V_strict, values in 0-0.25: a measure whose mean is low), as
    trec-rag writes it."""
    import random
    rng = random.Random(0)
    root.mkdir()
    rows = {(s, f"2024-{100000 + 37 * t}"): round(rng.random() * 0.25, 4) for s in systems for t in range(topics)}
    means = {s: sum(v for (x, _), v in rows.items() if x == s) / topics for s in systems}
    (root / "scores.tsv").write_text("run\tqid\tmeasure\tvalue\n" + "".join(
        f"{s}\t{q}\tV_strict\t{v}\n" for (s, q), v in rows.items()) + "".join(
        f"{s}\tall\tV_strict\t{m!r}\n" for s, m in means.items()))
    return rows


def test_a_301_topic_heat_map_keeps_names_in_view_and_ids_legible(browser, tmp_path):
    """At 301 topics the numbers ran together, about 70 of 301 columns were visible, system names scrolled away, and a
    0-1 colour scale left a measure of mean 0.13 almost white."""
    systems = ["team-alpha.run-1-bm25-gpt4o-rerank", "team-beta.run-2-splade-llama70b", "team-gamma.run-3-qwen"]
    rows = _topics_folder(tmp_path / "track", systems, 301)
    assert cli.main(["report", str(tmp_path / "track"), "--out", str(tmp_path / "report")]) == 0
    browser.set_window_size(1400, 1000)
    try:
        _open(browser, (tmp_path / "report" / "index.html").as_uri(), "#heatmap table")
        wrap = browser.find_element(By.ID, "heatmap")
        browser.execute_script("arguments[0].scrollIntoView(); window.scrollBy(0, -200);", wrap)
        cells = browser.find_elements(By.CSS_SELECTOR, "#heatmap tbody tr:first-child a.cell")
        assert len(cells) == 301
        for position in (0, 0.5, 1):  # the start, the middle, the end of the topics
            browser.execute_script("arguments[0].scrollLeft = arguments[1] * arguments[0].scrollWidth", wrap, position)
            for th in browser.find_elements(By.CSS_SELECTOR, "#heatmap th.system-name"):
                shown = browser.execute_script(
                    "var r = arguments[0].getBoundingClientRect(); var w = arguments[1].getBoundingClientRect();"
                    "var hit = document.elementFromPoint(r.left + 4, r.top + r.height / 2);"
                    "return [r.left >= w.left - 1, r.right <= w.right, arguments[0].contains(hit)];", th, wrap)
                assert shown == [True, True, True], (position, th.text, shown)
        labels = browser.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('#heatmap th.topic-head span'), function (s) {"
            "var r = s.getBoundingClientRect(); return [s.textContent, r.left, r.right, r.height, s.scrollHeight,"
            "parseFloat(getComputedStyle(s).fontSize)]; })")
        assert [x[0] for x in labels] == sorted({q for _, q in rows}, key=lambda q: int(q.split("-")[1]))
        assert all(x[5] >= 10 for x in labels)  # legible: 10 px or more
        assert all(x[3] >= x[4] - 1 for x in labels)  # each id shown whole
        assert all(a[2] <= b[1] + 0.5 for a, b in zip(labels, labels[1:]))  # no two ids on each other
        key = browser.find_element(By.ID, "heatmap-key").text
        low, high = min(rows.values()), max(rows.values())
        assert f"from {low:.4f} (lightest) to {high:.4f} (darkest), this measure's range" in key
        darkest = [c for c in cells if c.get_attribute("data-value") and float(c.get_attribute("data-value")) == max(
            v for (s, _), v in rows.items() if s == systems[0])]
        assert _luminance(_rgb(browser, darkest[0])) < 0.3  # the highest value is dark on this measure's own scale
        _no_console_errors(browser)
    finally:
        browser.set_window_size(1400, 1000)


OVERFLOW = """
var width = document.documentElement.clientWidth, bad = [];
if (document.documentElement.scrollWidth > width) { bad.push('the page: ' + document.documentElement.scrollWidth); }
document.querySelectorAll('body *').forEach(function (e) {
  var r = e.getBoundingClientRect();
  if (!r.width || !r.height || e.closest('.skip') || e.closest('.visually-hidden')) { return; }
  for (var p = e.parentElement; p && p !== document.body; p = p.parentElement) {
    var o = getComputedStyle(p).overflowX;
    if (o === 'auto' || o === 'scroll') { return; }
    if (o === 'hidden' || o === 'clip') {
      var q = p.getBoundingClientRect();
      if (r.right > q.right + 1 || r.left < q.left - 1) { bad.push('cut: ' + e.tagName + '.' + e.className); }
      return;
    }
  }
  if (r.right > width + 1 || r.left < -1) { bad.push(e.tagName + '.' + e.className + ' ' + Math.round(r.right)); }
});
return bad.slice(0, 10);
"""


def _pages(report) -> list[str]:
    pages = ["index.html", "topic.html#topic=t1&system={a}&compare={b}", "arena.html"]
    return pages + (["judges.html"] if (report / "judges.html").exists() else [])


@pytest.mark.parametrize("width", [400, 1400])
def test_no_page_overflows_sideways(browser, main_job, trec_rag, width, tmp_path):
    """At 400 px the label grid, the nugget table's assignment column ('not suppo'), the heat map's caption and the
    B − A column were cut; at 1,400 px the 2026 leaderboard was 1,794 px wide (RubricScore and Arena off-screen).
    Measured in Chromium: no page is wider than the window, nothing is cut, and what is wider than the window is in
    a region that scrolls (a table at 400 px); at 1,400 px the 2026 leaderboard fits whole."""
    browser.set_window_size(width, 1000)
    try:
        for (_, report), a, b in ((main_job, "marked", "bm25-k2"), (trec_rag, LONG_NAMES["A"], LONG_NAMES["B"])):
            for page in _pages(report):
                url = (report / page.format(a=a, b=b)).as_uri() if "#" not in page else \
                    (report / "topic.html").as_uri() + "#" + page.split("#")[1].format(a=a, b=b)
                _open(browser, url, "#topic-title" if "topic" in page else "main h2")
                if page.startswith("index"):
                    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#difficulty table"))
                else:
                    WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
                        lambda d: "Loading" not in d.find_element(By.ID, "main").text)
                assert browser.execute_script(OVERFLOW) == [], (width, report.parent.name, page)
                if width == 400 and page.startswith("index"):
                    _shot(browser, tmp_path, f"{report.parent.name}-400")
        if width == 1400:  # the 2026 folder's leaderboard, 19 measures and the arena: whole in the window
            _open(browser, (trec_rag[1] / "index.html").as_uri(), "#leaderboard")
            board = browser.find_element(By.ID, "leaderboard")
            sizes = browser.execute_script("return [arguments[0].scrollWidth, arguments[0].parentNode.clientWidth]",
                                           board)
            assert sizes[0] <= sizes[1], sizes
            columns = browser.find_elements(By.CSS_SELECTOR, "#leaderboard thead tr:first-child th")
            assert len(columns) == 1 + 18 + 1 and columns[-1].text == "Arena"
            assert columns[-1].rect["x"] + columns[-1].rect["width"] <= 1400
    finally:
        browser.set_window_size(1400, 1000)


# ------------------------------------------------------------------------------------------- the four views

@pytest.mark.parametrize("which", ["main_job", "trec_rag"])
def test_nuggets_against_every_system(browser, request, which, tmp_path):
    """Per topic, the nuggets (vital first) against every system, a nugget no system got marked; for a rubric, its
    criteria with the points each system gained or lost."""
    out, report = request.getfixturevalue(which)
    answers = {}
    for path in sorted(out.glob("*.assignments.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line:
                obj = json.loads(line)
                answers[obj["run_id"], obj["qid"]] = {n["id"]: n["assignment"] for n in obj["nuggets"]}
    _open(browser, (report / "topic.html").as_uri() + "#topic=t1", "#topic-title")
    table = browser.find_element(By.CSS_SELECTOR, "table.nuggets-matrix")
    systems = [th.get_attribute("title") for th in table.find_elements(By.CSS_SELECTOR, "thead th.sys")]
    assert systems == sorted({s for s, q in answers if q == "t1"}, key=systems.index)
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    importance = [r.find_element(By.CSS_SELECTOR, "th .imp").text for r in rows]
    assert importance == sorted(importance, key=lambda i: {"vital": 0, "okay": 1}.get(i, 2))  # vital first
    nuggets = {json.loads(line)["qid"]: json.loads(line) for line in (
        out.parent / "nuggets.jsonl" if which == "trec_rag" else out / "nuggets.jsonl").read_text().split("\n") if line}
    texts = [" ".join(n["text"].split()) for n in nuggets["t1"]["nuggets"]]  # U+2028 shows as a space
    assert sorted(" ".join(r.find_element(By.CSS_SELECTOR, "th").text.split()[1:]) for r in rows) == sorted(texts)
    for row in rows:
        text = " ".join(row.find_element(By.CSS_SELECTOR, "th").text.split()[1:])
        nid = next(i for (s, q), a in answers.items() if q == "t1" for i in a
                   if texts[int(i.rsplit("n", 1)[1])] == text)
        got = [s for s in systems if answers[s, "t1"][nid] in ("support", "partial_support")]
        marks = [c.text for c in row.find_elements(By.CSS_SELECTOR, "td.m")]
        assert marks == [{"support": "✓", "partial_support": "½", "not_support": "✗"}[answers[s, "t1"][nid]]
                         for s in systems]
        assert row.find_element(By.CSS_SELECTOR, "td.got").text == (f"{len(got)} of {len(systems)}" if got else
                                                                    "no system")
        assert ("nobody" in (row.get_attribute("class") or "")) == (not got)
    if which == "trec_rag":
        rubric = browser.find_element(By.CSS_SELECTOR, "table.rubric-matrix")
        flaw = [r for r in rubric.find_elements(By.CSS_SELECTOR, "tbody tr") if "flaw" in r.text][0]
        for s, cell in zip(systems, flaw.find_elements(By.CSS_SELECTOR, "td.m")):
            verdict = json.loads((out / f"{s}.verdicts.jsonl").read_text().split("\n")[0])["criteria"][2]["verdict"]
            assert cell.text == {"satisfied": "−3", "partially_satisfied": "−1.5", "not_satisfied": "0"}[verdict]
    _shot(browser, tmp_path, f"{which}-matrix")
    _no_console_errors(browser)


@pytest.mark.parametrize("which", ["main_job", "trec_rag"])
def test_judge_against_judge(browser, request, which, tmp_path):
    """Two label sources side by side: the agreement per label kind, the disagreements per (topic, system), and on the
    topic page each nugget's two labels with the disagreements marked."""
    out, report = request.getfixturevalue(which)
    second = out.parent / "second"

    def labels(folder):
        found = {}
        for path in folder.glob("*.assignments.jsonl"):
            for line in path.read_text(encoding="utf-8").split("\n"):
                if line:
                    obj = json.loads(line)
                    found.update({(obj["run_id"], obj["qid"], n["id"]): n["assignment"] for n in obj["nuggets"]})
        return found
    mine, theirs = labels(out), labels(second)
    shared = set(mine) & set(theirs)
    differ = sum(mine[k] != theirs[k] for k in shared)
    _open(browser, (report / "judges.html").as_uri(), "#judges-body h2")
    text = browser.find_element(By.ID, "judges-body").text
    assert f"{len(shared)} items both judged: exact agreement {100 * (1 - differ / len(shared)):.1f}%" in text, text
    system = next(s for s, q, _ in sorted(shared) if q == "t1")
    _open(browser, (report / "topic.html").as_uri() + f"#topic=t1&system={system}", "#topic-title")
    table = browser.find_element(By.CSS_SELECTOR, "article.panel table.nuggets")
    marked = len(table.find_elements(By.CSS_SELECTOR, "tbody tr.differs"))
    assert marked == sum(mine[k] != theirs[k] for k in shared if k[:2] == (system, "t1"))
    assert "second judge" in table.find_element(By.CSS_SELECTOR, "thead").text
    _open(browser, (report / "judges.html").as_uri(), "#judges-body h2")
    _shot(browser, tmp_path, f"{which}-judges")
    _no_console_errors(browser)


@pytest.mark.parametrize("which", ["main_job", "trec_rag"])
def test_topic_difficulty(browser, request, which, tmp_path):
    """Per topic the mean over the systems and its spread, hardest first; a topic where every system fails said."""
    out, report = request.getfixturevalue(which)
    per_topic = _per_topic(out / "scores.tsv" if which == "trec_rag" else out / "joint_table.perquery.csv")
    _open(browser, (report / "index.html").as_uri() + "#measure=V_strict", "#difficulty table")
    rows = browser.find_elements(By.CSS_SELECTOR, "#difficulty table tbody tr")
    means = {}
    for (_, q, m), v in per_topic.items():
        if m == "V_strict":
            means.setdefault(q, []).append(v)
    assert len(rows) == len(means)
    shown = [(r.find_element(By.CSS_SELECTOR, "th").text, float(r.find_element(By.CSS_SELECTOR, "td:nth-child(4)").text))
             for r in rows]
    for q, mean in shown:
        assert mean == pytest.approx(sum(means[q]) / len(means[q]), abs=5e-5)
    assert [m for _, m in shown] == sorted(m for _, m in shown)  # hardest first
    failing = [q for q, vs in means.items() if max(vs) == 0]
    summary = browser.find_element(By.ID, "difficulty-body").text
    assert (f"{len(failing)} topic(s) where every system fails" in summary) if failing else "No topic where" in summary
    _shot(browser, tmp_path, f"{which}-difficulty")
    _no_console_errors(browser)


@pytest.mark.parametrize("which", ["main_job", "trec_rag"])
def test_arena_overview(browser, request, which, tmp_path):
    """pairwise.csv and arena.json were written but not shown: ratings with intervals, the win-rate matrix, the
    position bias and each system's lost battles."""
    from pyterrier_nuggets import formats
    out, report = request.getfixturevalue(which)
    arena = out if which == "main_job" else out.parent / "arena"
    board = formats.read_leaderboard(str(arena / "leaderboard.csv"))
    battles = formats.read_battles(str(arena / "battles.jsonl"))
    _open(browser, (report / "arena.html").as_uri(), "#arena-body h2")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.ratings tbody tr")
    assert [r.find_element(By.CSS_SELECTOR, "th").text for r in rows] == [b.run_id for b in board]
    assert [r.find_element(By.CSS_SELECTOR, "td:nth-child(3)").text for r in rows] == [f"{b.arena_score:.0f}"
                                                                                        for b in board]
    systems = [th.get_attribute("title") for th in browser.find_elements(By.CSS_SELECTOR, "table.winrates thead th.sys")]
    matrix = browser.find_elements(By.CSS_SELECTOR, "table.winrates tbody tr")
    for i, a in enumerate(systems):
        for j, b in enumerate(systems):
            if a == b:
                continue
            met = [x for x in battles if x.ok and set(x.pair) == {a, b}]
            cell = matrix[i].find_elements(By.CSS_SELECTOR, "td")[j]
            wins = sum(x.winner == a for x in met)
            losses = sum(x.winner == b for x in met)
            assert cell.text.split()[-1] == f"{wins}–{losses}–{len(met) - wins - losses}", (a, b, cell.text)
    assert "Position bias: of" in browser.find_element(By.ID, "arena-body").text
    loser = systems[-1]
    Select(browser.find_element(By.ID, "lost-system")).select_by_value(loser)
    lost = [x for x in battles if x.ok and x.winner is not None and loser in x.pair and x.winner != loser]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#lost-list li")) == len(lost)
    _shot(browser, tmp_path, f"{which}-arena")
    _no_console_errors(browser)


def test_search_the_answers(browser, main_job):
    out, report = main_job
    _open(browser, (report / "index.html").as_uri(), "#search-form")
    browser.find_element(By.ID, "search-text").send_keys("waggle")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: "contain" in d.find_element(By.ID, "search-results").text)
    from pyterrier_nuggets import formats
    expected = sum("waggle" in a.text.lower() for p in out.glob("*.answers.jsonl") for a in formats.read_answers(str(p)))
    assert browser.find_element(By.ID, "search-results").text.startswith(f"{expected} answer(s) contain")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#search-results li")) == expected > 0
    _no_console_errors(browser)


def test_a_verdicts_reply_opens_in_place_as_text(browser, trec_rag, tmp_path):
    """The judges' replies beside their verdicts: a nugget's assignment and a criterion's verdict each have the reply
    they were parsed from, closed at first, opened from the keyboard in place; the reply's markup (<b>x</b>) is shown
    as text. A folder without RUN.replies.jsonl (written before it) opens and says the replies are not recorded."""
    from pyterrier_nuggets import formats
    trec, report = trec_rag
    a = LONG_NAMES["A"]
    written = formats.read_replies(str(trec / f"{a}.replies.jsonl"))
    _open(browser, (report / "topic.html").as_uri() + f"#topic=t1&system={a}", "#topic-title")
    panel = browser.find_element(By.CSS_SELECTOR, "article.panel")
    for table, step in (("table.nuggets", "assignment"), ("table.rubric", "rubric")):
        row = panel.find_elements(By.CSS_SELECTOR, f"{table} tbody tr")[1]
        item = row.find_element(By.CSS_SELECTOR, "td").text if step == "assignment" else "t1:r1"
        [expected] = [r.text for r in written if r.qid == "t1" and r.step == step and item in r.items]
        reply = row.find_element(By.CSS_SELECTOR, "td.reply-cell details.judge-reply")
        text = reply.find_element(By.CSS_SELECTOR, "pre.reply")
        assert not text.is_displayed()
        reply.find_element(By.TAG_NAME, "summary").send_keys(Keys.ENTER)  # a summary is reached and opened by keys
        WebDriverWait(browser, 5).until(lambda d, shown=text: shown.is_displayed())
        assert text.text == expected and text.text.startswith(REPLY_MARKUP)  # <b>x</b> shown, as text
        assert not text.find_elements(By.TAG_NAME, "b")
        assert item in reply.find_element(By.CSS_SELECTOR, "p.hint").text
    assert not panel.find_elements(By.CSS_SELECTOR, "p.replies-missing")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", reply)
    _shot(browser, tmp_path, "judge-reply")
    _no_console_errors(browser)
    old = tmp_path / "old"
    shutil.copytree(trec, old)
    manifest = json.loads((old / ".pyterrier-nuggets-outputs.json").read_text())
    for path in old.glob("*.replies.jsonl"):
        path.unlink()
        manifest["files"].remove(path.name)
    (old / ".pyterrier-nuggets-outputs.json").write_text(json.dumps(manifest))
    assert cli.main(["report", str(old), "--out", str(tmp_path / "r")]) == 0
    _open(browser, (tmp_path / "r" / "topic.html").as_uri() + f"#topic=t1&system={a}", "#topic-title")
    panel = browser.find_element(By.CSS_SELECTOR, "article.panel")
    assert not panel.find_elements(By.CSS_SELECTOR, "details.judge-reply")
    said = [p.text for p in panel.find_elements(By.CSS_SELECTOR, "p.replies-missing")]
    assert len(said) == 2 and all("replies are not recorded" in t for t in said)  # under the nuggets and the rubric
    _no_console_errors(browser)
