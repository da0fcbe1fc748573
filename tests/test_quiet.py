"""Quiet by default for what the user did not ask for: the model libraries' loading bars only with -v, the
embedded model's "not a judge" warning only where it judges."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_nuggets import cli
from pyterrier_nuggets.judges import base
from pyterrier_nuggets.judges.generation import CitedGenerator
from pyterrier_nuggets.judges.support import SupportJudge

ASSIGNMENTS = Path(__file__).resolve().parent.parent / "pyterrier_nuggets" / "sample" / "rag_mini" / \
    "dense-rag.assignments.jsonl"
LOAD_A_MODEL = ("import sys\nfrom pyterrier_nuggets.cli import main\nmain(sys.argv[1:])\n"
                "from pyterrier_nuggets.matchers import EmbeddingMatcher\nEmbeddingMatcher().match([('a cat', 'a dog')])")


def test_verbose_option_before_or_after_the_subcommand():
    parser = cli.build_parser()
    assert parser.parse_args(["calibrate", "pairs.jsonl"]).verbose == 0
    assert parser.parse_args(["-v", "calibrate", "pairs.jsonl"]).verbose == 1
    assert parser.parse_args(["calibrate", "pairs.jsonl", "-vv"]).verbose == 2


@pytest.mark.parametrize("verbose", [False, True])
def test_model_loading_bars_only_with_verbose(verbose):
    env = {k: v for k, v in os.environ.items() if k not in cli.QUIET_LIBRARIES}
    argv = ["-v"] * verbose + ["score", "--assignments", str(ASSIGNMENTS)]  # the top level's -v (score has none)
    result = subprocess.run([sys.executable, "-c", LOAD_A_MODEL, *argv], capture_output=True, text=True, env=env,
                            check=True)
    assert ("Loading weights" in result.stderr) is verbose, result.stderr[-2000:]
    assert "# run " in result.stdout  # the command's own output either way


class _Stop(Exception):
    pass


class _EmbeddedClient:
    """Stands for an LLMClient on the embedded model: says so, and stops at the first request."""
    embedded = True
    mode = "run"
    model = "SmolLM2"

    def ask(self, *args, **kwargs):
        raise _Stop


@pytest.mark.parametrize("judge_class, warned", [(CitedGenerator, False), (SupportJudge, True)])
def test_embedded_warning_only_where_it_judges(monkeypatch, judge_class, warned):
    said = []
    monkeypatch.setattr(base, "announce_embedded", lambda: said.append(True))
    judge = judge_class(llm=_EmbeddedClient())
    with pytest.raises(_Stop):
        judge.ask(judge.llm, [{"role": "user", "content": "x"}], str)
    assert bool(said) is warned
