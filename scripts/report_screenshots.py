"""The screenshots of docs/report.md: the report of a main job's output folder, opened in headless Chromium.

    .venv/bin/pyterrier-nuggets demo --out out/demo            # the default offline main job on the sample
    .venv/bin/python scripts/report_screenshots.py out/demo [--out out/report] [--images docs/images]

Writes the report (with the shipped sample collection's texts and grades) and four screenshots,
``report-overview.png``, ``report-per-topic.png``, ``report-drilldown.png`` and ``report-battle.png``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from pyterrier_nuggets.pipeline import SAMPLE_COLLECTION
from pyterrier_nuggets.report import build_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a main job's output folder, e.g. out/demo")
    parser.add_argument("--out", default="out/report")
    parser.add_argument("--images", default="docs/images")
    args = parser.parse_args()
    build_report([args.folder], args.out, collection=SAMPLE_COLLECTION, overwrite=True)
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
    index = "file://" + os.path.abspath(os.path.join(args.out, "index.html"))
    topic = "file://" + os.path.abspath(os.path.join(args.out, "topic.html"))
    os.makedirs(args.images, exist_ok=True)
    try:
        for name, url, height, action in (
                ("overview", index, 1150, None),
                ("per-topic", index + "#measure=V_strict&a=bm25-k3&b=dense-k3&sort=diff", 1000,
                 lambda: driver.find_element(By.ID, "topics").location_once_scrolled_into_view),
                ("drilldown", topic + "#topic=t01&system=bm25-k3-smollm2&compare=dense-k5", 1400, None),
                ("battle", topic + "#topic=t09&system=bm25-k1&compare=dense-k5", 1000,
                 lambda: [d.click() for d in driver.find_elements(By.CSS_SELECTOR, "details.battle summary")[:1]]
                 and driver.find_element(By.CSS_SELECTOR, "section.battles").location_once_scrolled_into_view)):
            driver.set_window_size(1400, height)
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


if __name__ == "__main__":
    main()
