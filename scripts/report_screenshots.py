"""The screenshots of docs/report.md: the report of a main job's output folder, opened in headless Chromium.

    .venv/bin/pyterrier-nuggets demo --out out/demo            # the default offline main job on the sample
    .venv/bin/python scripts/report_screenshots.py out/demo [--out out/report] [--images docs/images]

Writes the report (with the shipped sample collection's texts and grades, and a second judge of the same answers:
``trec-rag`` on the main job's answers and nuggets by the package's test endpoint, a judge that supports every nugget,
into FOLDER-second-judge, for the judge-against-judge view) and its screenshots: ``report-overview.png``, ``report-per-topic.png``,
``report-drilldown.png``, ``report-battle.png``, ``report-matrix.png``, ``report-judges.png``,
``report-difficulty.png``, ``report-arena.png`` and ``report-narrow.png`` (the overview at 400 px).
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pyterrier_nuggets import cli  # noqa: E402
from pyterrier_nuggets.pipeline import SAMPLE_COLLECTION  # noqa: E402
from pyterrier_nuggets.report import build_report  # noqa: E402
from pyterrier_nuggets.testing import TestEndpoint, first_prompt, stage_reply  # noqa: E402


def lenient(body):
    """The second judge: every nugget supported (the test endpoint's replies otherwise)."""
    prompt = first_prompt(body)
    if body.get("model") == "lenient" and "Nugget List:" in prompt:
        return stage_reply(body, "assign").content.replace("not_support", "support").replace("partial_support",
                                                                                            "support")
    return None


def second_judge(folder: str, out: str, work: str) -> str:
    """``trec-rag`` of the main job's answers and nuggets by the second judge into ``out``; returns it."""
    answers = [x for a in sorted(glob.glob(os.path.join(folder, "*.answers.jsonl"))) for x in ("--answers", a)]
    with TestEndpoint(responder=lenient) as server:
        code = cli.main(["trec-rag", *answers, "--nuggets", os.path.join(folder, "nuggets.jsonl"), "--rules", "2025",
                         "--out", out, "--overwrite", "--base-url", server.base_url, "--model", "lenient",
                         "--llm-cache", os.path.join(work, "cache.sqlite")])
    if code != 0:
        raise SystemExit(f"trec-rag of the second judge exited {code}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a main job's output folder, e.g. out/demo")
    parser.add_argument("--out", default="out/report")
    parser.add_argument("--images", default="docs/images")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="pn-shots-work-")
    build_report([args.folder], args.out, collection=SAMPLE_COLLECTION, overwrite=True,
                 second_judge=second_judge(args.folder, args.folder.rstrip("/") + "-second-judge", work))
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    profile = tempfile.mkdtemp(prefix="pn-shots-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--window-size=1400,1000", "--hide-scrollbars", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=opts)
    page = {name: "file://" + os.path.abspath(os.path.join(args.out, f"{name}.html"))
            for name in ("index", "topic", "arena", "judges")}

    def scroll_to(selector: str):
        return lambda: driver.find_element(By.CSS_SELECTOR, selector).location_once_scrolled_into_view

    os.makedirs(args.images, exist_ok=True)
    try:
        for name, url, width, height, action in (
                ("overview", page["index"], 1400, 1150, None),
                ("per-topic", page["index"] + "#measure=V_strict&a=bm25-k3&b=dense-k3&sort=diff", 1400, 1000,
                 scroll_to("#topics")),
                ("difficulty", page["index"] + "#measure=V_strict", 1400, 900, scroll_to("#difficulty")),
                ("drilldown", page["topic"] + "#topic=t01&system=bm25-k3-smollm2&compare=dense-k5", 1400, 1500,
                 lambda: [b.click() for b in driver.find_elements(By.CSS_SELECTOR, "button.cite")[:1]]
                 and scroll_to("article.panel")()),
                ("matrix", page["topic"] + "#topic=t06&system=bm25-k1", 1400, 900, scroll_to("details.all-systems")),
                ("battle", page["topic"] + "#topic=t09&system=bm25-k1&compare=dense-k5", 1400, 1000,
                 lambda: [d.click() for d in driver.find_elements(By.CSS_SELECTOR, "details.battle summary")[:1]]
                 and scroll_to("section.battles")()),
                ("arena", page["arena"], 1400, 1300, None),
                ("judges", page["judges"], 1400, 1100, scroll_to("#judges-body")),
                ("narrow", page["index"], 400, 1400, None)):
            driver.set_window_size(width, height)
            driver.get(url)
            time.sleep(1.0)
            if action is not None:
                action()
                time.sleep(0.3)
            driver.save_screenshot(os.path.join(args.images, f"report-{name}.png"))
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            print(f"report-{name}.png" + (f" ({len(errors)} console errors: {errors})" if errors else ""))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
