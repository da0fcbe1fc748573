"""One parser per format: every route that reads the same file (the ir_datasets entries of datasets_ext, the
package's formats, the command line) gives the same ids, grades and texts."""
import json
import warnings

import pytest
from ir_datasets.formats import TrecQrels

from datasets_ext import cone_parser
from datasets_ext.files import DatasetFile
from datasets_ext.nugget_parser import InvalidNuggetWarning, NuggetDocs, NuggetQrels
from pyterrier_nuggets import formats
from pyterrier_nuggets.formats import nugget_qrels


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    return tmp_path


def _place(home, name: str, data: bytes) -> tuple[str, DatasetFile]:
    path = home / "d" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    return str(path), DatasetFile("d", name, instructions="-")


def _qrels_of_package(path: str) -> list[tuple[str, str, int]]:
    frame = nugget_qrels(formats.read_nuggets(path, on_invalid="drop"))
    return sorted(zip(frame.qid, frame.docno, frame.label.astype(int)))


def _qrels_of_datasets(dlc) -> list[tuple[str, str, int]]:
    return sorted((q.query_id, q.doc_id, q.relevance) for q in NuggetQrels(dlc).qrels_iter())


# ids written out of position order: nugget "t1:n1" stands first and is okay, "t1:n0" second and vital. A
# reader that numbers by position would swap the two grades.
OUT_OF_ORDER = [
    {"qid": "t1", "query": "q1", "nuggets": [
        {"id": "t1:n1", "text": "second written first", "importance": "okay"},
        {"id": "t1:n0", "text": "first written second", "importance": "vital", "source": "post-edit"},
        {"id": "t1:n2", "text": "third", "importance": "okay"}]},
    {"topic_id": "t2", "nuggets": [{"text": "by position", "importance": "vital"},
                                   {"text": "failed label", "importance": "failed"},
                                   {"text": "kept its index", "importance": "okay"}]},
]


def test_nugget_file_with_out_of_order_ids_gives_one_set_of_qrels(home):
    data = "\ufeff" + "\n".join(json.dumps(x) for x in OUT_OF_ORDER) + "\n"  # with a byte order mark
    path, dlc = _place(home, "nuggets.jsonl", data.encode())
    expected = [("t1", "t1:n0", 2), ("t1", "t1:n1", 1), ("t1", "t1:n2", 1), ("t2", "t2:n0", 2), ("t2", "t2:n2", 1)]
    with pytest.warns(UserWarning, match="dropped"):
        assert _qrels_of_package(path) == expected
    with pytest.warns(InvalidNuggetWarning, match="t2: 1 left out"):
        assert _qrels_of_datasets(dlc) == expected
    # ids and texts, too
    package = {n.id: n.text for n in formats.read_nuggets(path, on_invalid="drop").nuggets}
    docs = {d.doc_id: d.text for d in NuggetDocs(dlc, "d").docs_iter() if d.importance in ("vital", "okay")}
    assert package == docs
    assert package["t1:n0"] == "first written second"


@pytest.mark.parametrize("line, message", [
    ('{"qid": "1", "nuggets": [{"text": "a", "importance": "vital"}]}', "topic 1 already appeared at line 1"),
    ('{"qid": "2", "nuggets": [{"id": "3:n0", "text": "a", "importance": "vital"}]}', "not a nugget id of topic 2"),
    ('{"qid": "2", "nuggets": [{"text": "b", "importance": "okay"}, '
     '{"id": "2:n0", "text": "a", "importance": "vital"}]}', "nugget index 0 appears twice"),  # first by position
    ('{"qid": "2 3", "nuggets": []}', "contains whitespace"),
    ('{"qid": "2", "nuggets": [{"text": 5, "importance": "vital"}]}', r"nuggets\[0\].text"),
])
def test_nugget_file_errors_are_the_same_on_both_routes(home, line, message):
    first = '{"qid": "1", "nuggets": [{"text": "a", "importance": "vital"}]}'
    path, dlc = _place(home, "nuggets.jsonl", (first + "\n" + line + "\n").encode())
    with pytest.raises(ValueError, match=message) as package:
        formats.read_nuggets(path)
    with pytest.raises(ValueError, match=message) as datasets:
        list(NuggetQrels(dlc).qrels_iter())
    assert str(package.value) == str(datasets.value)
    assert ":2:" in str(package.value)


def test_cone_gold_nuggets_same_on_both_routes(home):
    doc = {"0_1": {"[2]": {"text": "Second", "relevance": "3"}, "[1]": {"text": "First", "relevance": "2"}},
           "0_2": {"[1]": {"text": "Other", "relevance": 1}}}
    path, dlc = _place(home, "gold.json", b"\xef\xbb\xbf" + json.dumps(doc).encode())  # a byte order mark
    package = formats.read_cone_gold_nuggets(path)
    frame = nugget_qrels(package)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        datasets = sorted((q.query_id, q.doc_id, q.relevance) for q in cone_parser.GoldNuggetQrels(dlc).qrels_iter())
    assert sorted(zip(frame.qid, frame.docno, frame.label.astype(int))) == datasets
    docs = {d.doc_id: d.text for d in cone_parser.gold_nugget_docs(dlc, "d").docs_iter()}
    assert {n.id: n.text for n in package.nuggets} == docs == {"0_1:n1": "Second", "0_1:n0": "First",
                                                                "0_2:n0": "Other"}


def test_trec_qrels_same_through_ir_datasets_and_formats(home):
    # TREC RAG 2024's qrels have the assessment condition (1-5) in column 2; both routes ignore it
    text = "2024-1 3 seg#1 2\n2024-1 1 seg#2 0\n2024-2 0 seg#1 3\n"
    path, dlc = _place(home, "qrels.txt", text.encode())
    datasets = [(q.query_id, q.doc_id, q.relevance) for q in TrecQrels(dlc, {}).qrels_iter()]
    assert formats.read_qrels_rows(path) == datasets


def test_one_json_document_reader_for_every_json_file(tmp_path):
    from datasets_ext.reading import InputError, load_json
    path = tmp_path / "x.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}')
    assert load_json(str(path), dict) == {"a": 1}
    path.write_bytes(b'{"a":\n "\xff"}')
    with pytest.raises(InputError, match=r"x.json:2: not UTF-8 \(byte 0xff at column 3\)"):
        load_json(str(path))
    path.write_bytes(b'{"a":\n 1,}')
    with pytest.raises(InputError, match=r"x.json:2: not valid JSON"):
        load_json(str(path))
    path.write_bytes(b"[1]")
    with pytest.raises(InputError, match="expected a JSON object keyed by turn id, got list"):
        formats.read_cone_responses(str(path))
