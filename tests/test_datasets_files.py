"""Dataset files (local copy, md5, download failure) and the errors of the nugget and iKAT readers."""
import hashlib
import json

import pytest

from datasets_ext.files import DatasetFile
from datasets_ext.ikat_parser import parse_ikat_topics
from datasets_ext.nugget_parser import NuggetQrels, read_nuggets


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    monkeypatch.setenv("IR_DATASETS_DL_TRIES", "1")
    return tmp_path


def test_local_copy_is_used_and_checked(home):
    path = home / "some-dataset" / "topics.txt"
    path.parent.mkdir()
    path.write_bytes(b"1\tq\n")
    good = DatasetFile("some-dataset", "topics.txt", "http://127.0.0.1:9/topics.txt",
                       hashlib.md5(b"1\tq\n").hexdigest())
    assert good.path() == str(path)
    bad = DatasetFile("some-dataset", "topics.txt", "http://127.0.0.1:9/topics.txt", "0" * 32)
    with pytest.warns(UserWarning, match="not the expected 0000"):
        with bad.stream() as f:
            assert f.read() == b"1\tq\n"


def test_failed_download_says_where_to_put_the_file(home):
    f = DatasetFile("some-dataset", "qrels.txt", "http://127.0.0.1:9/qrels.txt", "a" * 32)
    with pytest.raises(RuntimeError, match=f"put it at {home / 'some-dataset' / 'qrels.txt'}"):
        f.path()


def test_licensed_file_instructions(home):
    f = DatasetFile("lic", "corpus.tar", instructions="Get it from the owner and put it at {path}.")
    with pytest.raises(FileNotFoundError, match="Get it from the owner and put it at .*corpus.tar"):
        f.path()


@pytest.mark.parametrize("line, message", [
    ("{not json", "nuggets.jsonl:2: not valid JSON"),
    (json.dumps({"nuggets": []}), "nuggets.jsonl:2: field 'qid': missing"),
    (json.dumps({"qid": "1", "nuggets": [{"text": "t"}]}), r"nuggets.jsonl:2: field 'nuggets\[0\].importance'"),
])
def test_nugget_file_errors_name_file_line_field(home, line, message):
    path = home / "d" / "nuggets.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({"qid": "0", "nuggets": [{"text": "a", "importance": "vital"}]}) + "\n" + line + "\n")
    f = DatasetFile("d", "nuggets.jsonl", instructions="-")
    with pytest.raises(ValueError, match=message):
        list(NuggetQrels(f).qrels_iter())
    with pytest.raises(ValueError, match=message):
        list(read_nuggets(f))


def test_ikat_topic_errors_name_conversation_turn_field():
    topics = [{"number": "9-1", "title": "t", "ptkb": {}, "turns": [{"turn_id": 1, "utterance": "u"}]}]
    with pytest.raises(ValueError, match="topics.json: conversation 9-1 turn 1: field 'response' missing"):
        list(parse_ikat_topics(topics, "topics.json"))
