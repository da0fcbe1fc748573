"""The reference pages of docs/reference/ are what ``scripts/reference_docs.py`` generates from the code (the measures,
the datasets, the command line's options, the registry of steps): a measure, dataset, option or step changed without
its page fails here, and so in CI. Regenerate with ``.venv/bin/python scripts/reference_docs.py``."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def script():
    spec = importlib.util.spec_from_file_location("reference_docs", ROOT / "scripts" / "reference_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATED = script().pages()


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_the_checked_in_page_is_the_generated_one(name):
    path = ROOT / "docs" / "reference" / name
    assert path.is_file(), f"docs/reference/{name} is missing: run .venv/bin/python scripts/reference_docs.py"
    assert path.read_text(encoding="utf-8") == GENERATED[name], (
        f"docs/reference/{name} differs from the code: run .venv/bin/python scripts/reference_docs.py and commit it")


def test_no_page_is_left_that_the_script_does_not_write():
    assert sorted(p.name for p in (ROOT / "docs" / "reference").glob("*.md")) == sorted(GENERATED)


def test_the_pages_cover_every_measure_dataset_command_and_step():
    import ir_measures_ext
    from datasets_ext import REGISTERED
    from pyterrier_nuggets import steps
    from pyterrier_nuggets.cli import SUBCOMMANDS, build_parser
    for measure in ir_measures_ext.measures.REGISTERED:
        assert f"\n## {measure.NAME}\n" in GENERATED["measures.md"], measure.NAME
    for dataset_id in REGISTERED:
        assert f"\n## {dataset_id}\n" in GENERATED["datasets.md"], dataset_id
    commands = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and "demo" in a.choices)
    assert len(commands.choices) == len(SUBCOMMANDS)
    for name in commands.choices:
        assert f"\n## pyterrier-nuggets {name}\n" in GENERATED["cli.md"], name
    assert "`--on-failure {leave-out,stop}`" in GENERATED["cli.md"]
    for step in steps.STEPS.values():
        assert f"\n## {step.name}\n" in GENERATED["steps.md"], step.name
