"""Conversational generation (iKAT turns, raw utterance + history + PTKB) with the embedded SmolLM2-135M
(llama-cpp-python, CPU): the end-to-end check of the LLM code path, not a generator whose answers mean
anything. Slow."""
import pandas as pd
import pytest
from embedded import embedded_client, needs_model

from datasets_ext.ikat_parser import parse_ikat_topics
from pyterrier_nuggets import formats
from pyterrier_nuggets.judges.generation import CitedGenerator

pytestmark = pytest.mark.slow

TOPICS = [{"number": 0, "title": "Glasgow", "ptkb": {"1": "I live in Glasgow.", "2": "I am vegetarian."},
           "turns": [{"turn_id": 1, "utterance": "What is the weather like?", "resolved_utterance":
                      "What is the weather like in Glasgow?", "response": "Mild and wet.", "ptkb_provenance": ["1"],
                      "response_provenance": []},
                     {"turn_id": 2, "utterance": "What should I eat?", "resolved_utterance":
                      "What Scottish food should I eat as a vegetarian?", "response": "Vegetarian haggis.",
                      "ptkb_provenance": ["2"], "response_provenance": []}]}]


@needs_model
def test_embedded_model_answers_conversational_turns(tmp_path):

    llm = embedded_client(tmp_path / "cache.sqlite", 2, 120)
    turns = list(parse_ikat_topics(TOPICS, "topics.json"))
    ranking = pd.DataFrame([{"qid": "0_2", "docno": "p1", "score": 2.0,
                             "text": "Vegetarian haggis is made with oats, onions and spices."},
                            {"qid": "0_2", "docno": "p2", "score": 1.0, "text": "Glasgow has a mild, wet climate."}])
    generator = CitedGenerator(llm, conversation="raw", topics=turns, on_failure="exclude", run_id="emb")
    out = generator(ranking)
    if out.empty:  # the tiny model may fail to cite after the re-ask: a reported failure, never an answer
        assert [f.qid for f in generator.failures] == ["0_2"]
        return
    row = out.iloc[0]
    assert row["turn_id"] == "0_2" and row["query"] == "What Scottish food should I eat as a vegetarian?"
    assert row["qanswer"] and not generator.failures
    for s in row["sentences"]:
        assert all(0 <= c < 2 for c in s["citations"])
    run = formats.ikat_run_from_frames("emb", ranking, out)
    assert [t.turn_id for t in run.turns] == ["0_2"]
    calls = llm.stats["calls"]
    CitedGenerator(llm, conversation="raw", topics=turns, on_failure="exclude", run_id="emb")(ranking)
    assert llm.stats["calls"] == calls  # cached
