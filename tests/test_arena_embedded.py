"""The arena's pairwise judge for real with the embedded SmolLM2-135M (llama-cpp-python, CPU), in both orders. The
tiny model's verdicts mean nothing (design: it checks the code path); what is checked is that every battle has a
valid verdict or is a reported failure, never a tie in its place, and that the recorded positions are those the
model was shown. Slow: run with ``pytest -m slow``."""
import warnings

import pytest
from embedded import embedded_client, needs_model

pytestmark = pytest.mark.slow


@needs_model
def test_embedded_pairwise_battles(tmp_path):
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation.arena import battle_frame, plan_battles
    from pyterrier_nuggets.judges import PairwiseJudge

    llm = embedded_client(tmp_path / "cache.sqlite", 2, 20)
    answers = {"full": {"t1": "Paris is the capital of France.", "t2": "Cats purr by vibrating their larynx."},
               "empty": {"t1": "I do not know.", "t2": "No idea."}}
    queries = {"t1": "what is the capital of france", "t2": "how do cats purr"}
    frame = battle_frame(plan_battles(answers).battles, answers, queries)
    judge = PairwiseJudge(llm, orders="both", on_failure="mark", max_reasks=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny model's failures are warned about; they are not the point
        out = judge(frame)
    assert len(out) == 2 and set(out["assistant_a"]) <= {"full", "empty"}
    battles = formats.frame_to_battles(out, judge.describe())
    for b, failure in zip(battles, out["error"]):
        if b.ok:
            assert b.verdict in ("A", "B", "Tie") and len(b.verdicts) == 2
        else:
            assert failure and b.raw  # failed: its replies kept, never counted as a tie
    assert llm.stats["calls"] >= 4
