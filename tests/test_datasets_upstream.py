"""``msmarco-segment-v2.1`` with and without ir_datasets' own registration of it.

Without it (ir_datasets 0.6.x), datasets_ext registers the corpus and every TREC RAG id reads the local shards
through that one docs handler. With it (simulated by ``upstream_segments`` in a subprocess, so the registry of
this process keeps ours), upstream's ids win and our sub-ids build on upstream's docs handler: a sub-id never
reads segments another way than its parent. Our records are field-compatible with upstream's either way.
"""
import gzip
import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import ir_datasets
import pytest
import upstream_segments
from datasets_fixtures import SEG_DIR, build_home, write_shard

import datasets_ext
from datasets_ext.segments import MsMarcoV21Segment, SegmentShards, segment_from_json

TESTS = Path(__file__).resolve().parent
NAME = "msmarco-segment-v2.1"
# the ids of datasets_ext whose docs are segments
SEGMENT_IDS = [NAME, f"{NAME}/trec-rag-2024", f"{NAME}/trec-rag-2024/umbrela", f"{NAME}/trec-rag-2025"]
pytestmark = pytest.mark.filterwarnings("ignore:.* has md5 .*:UserWarning")  # the miniature files


def test_records_are_field_compatible_with_upstream(tmp_path):
    upstream = upstream_segments.MsMarcoV21SegmentedDoc
    assert MsMarcoV21Segment._fields == upstream._fields
    assert typing.get_type_hints(MsMarcoV21Segment) == typing.get_type_hints(upstream)
    shard = tmp_path / "shard.json.gz"
    write_shard(shard, 7, 6)
    with gzip.open(shard, "rb") as f:
        lines = f.read().splitlines()
    assert len(lines) == 12
    for line in lines:
        ours, theirs = segment_from_json(line), upstream_segments.parse_line(line)
        assert ours == theirs and ours.default_text() == theirs.default_text()
        assert [type(v) for v in ours] == [type(v) for v in theirs]


def test_without_upstream_every_id_reads_the_local_shards(tmp_path, monkeypatch):
    assert NAME in datasets_ext.REGISTERED  # ir_datasets 0.6.x does not ship the id: ours is registered
    home = tmp_path / "home"
    ids = build_home(home)
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    corpus = ir_datasets.load(NAME).docs_handler()
    assert isinstance(corpus, SegmentShards)
    for dataset_id in SEGMENT_IDS[1:]:
        assert ir_datasets.load(dataset_id).docs_handler() is corpus, dataset_id
    seg = ir_datasets.load(f"{NAME}/trec-rag-2025").docs_store().get(ids[59][3])
    assert type(seg) is MsMarcoV21Segment and seg.msmarco_document_id == ids[59][3].split("#")[0]


SCRIPT = """
import json, sys, warnings
sys.path.insert(0, {tests!r})
import ir_datasets
import upstream_segments
collection = upstream_segments.register({paths!r}, {version!r})
before = {{name: ir_datasets.registry[name] for name in ir_datasets.registry if name.startswith("{name}")}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import datasets_ext
from pyterrier_nuggets.docstore import fetch_texts
rag25 = ir_datasets.load("{name}/trec-rag-2025")
doc = rag25.docs_store().get({doc_id!r})
print(json.dumps({{
    "registered": [n for n in datasets_ext.REGISTERED if n.startswith("{name}")],
    "upstream_kept": [n for n, ds in before.items() if ir_datasets.registry[n] is ds],
    "on_upstream_docs": [n for n in {ids!r} if ir_datasets.load(n).docs_handler() is collection],
    "record": type(doc).__name__, "fields": list(doc._fields), "default_text": doc.default_text(),
    "fetched": fetch_texts(rag25, [{doc_id!r}]),
    "warnings": [(w.category.__name__, str(w.message)) for w in caught
                 if w.category.__name__ == "UpstreamSegmentsWarning"],
}}))
"""


def with_upstream(tmp_path: Path, version: str, doc_id: str, paths: list[str]) -> dict:
    """What datasets_ext registers, and what its ids read, in a Python where ``version`` of the stand-in for
    upstream registered first (as ``import ir_datasets`` would, before the start-up hook imports datasets_ext)."""
    script = SCRIPT.format(tests=str(TESTS), paths=paths, version=version, name=NAME, doc_id=doc_id,
                           ids=SEGMENT_IDS)
    env = dict(os.environ, PYTERRIER_NUGGETS_NO_HOOK="1", IR_DATASETS_HOME=str(tmp_path / "home"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    """One shard file of the miniature corpus and its ids."""
    path = tmp_path_factory.mktemp("upstream") / SEG_DIR / "msmarco_v2.1_doc_segmented_59.json.gz"
    return str(path), write_shard(path, 59, 5)


def test_with_upstream_our_sub_ids_build_on_its_docs(tmp_path, shard):
    path, ids = shard
    out = with_upstream(tmp_path, "main", ids[4], [path])
    # upstream's two ids stay upstream's; ours register only the ids upstream has not
    assert out["upstream_kept"] == [NAME, f"{NAME}/trec-rag-2024"]
    assert NAME not in out["registered"] and f"{NAME}/trec-rag-2024" not in out["registered"]
    assert {f"{NAME}/trec-rag-2024/umbrela", f"{NAME}/trec-rag-2025"} <= set(out["registered"])
    assert out["on_upstream_docs"] == SEGMENT_IDS  # every segment id reads upstream's docs
    expected = upstream_segments.parse_line(json.dumps(_record(path, ids[4])))
    assert out["record"] == "MsMarcoV21SegmentedDoc" and out["fields"] == list(MsMarcoV21Segment._fields)
    ours = segment_from_json(json.dumps(_record(path, ids[4])))
    assert out["default_text"] == expected.default_text() == ours.default_text()
    assert out["fetched"] == {ids[4]: expected.default_text()}  # what the package's judges read
    assert out["warnings"] == []


def test_with_an_earlier_upstream_record_the_difference_is_said(tmp_path, shard):
    path, ids = shard
    out = with_upstream(tmp_path, "earlier", ids[0], [path])
    assert out["upstream_kept"] == [NAME]
    assert f"{NAME}/trec-rag-2024" in out["registered"]  # this version has no sub-id of its own
    assert out["on_upstream_docs"] == SEGMENT_IDS and out["record"] == "EarlierSegmentedDoc"
    [(category, message)] = out["warnings"]
    assert "records of fields doc_id, url, title, headings, segment, start_char, end_char, not" in message
    assert message.endswith("use its documents as they are (see docs/datasets.md)")


def _record(path: str, doc_id: str) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return next(r for r in map(json.loads, f) if r["docid"] == doc_id)
