"""msmarco-segment-v2.1 on miniature shards: lookups by seeking, missing ids, docs_iter, access index."""
import gzip
import json
import os
import warnings

import pytest
from datasets_fixtures import build_segments, write_shard

from datasets_ext.segments import (
    N_SHARDS,
    MsMarcoV21Segment,
    SegmentShards,
    SegmentsNotFound,
    ShardsMissing,
    parse_segment_id,
)


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    base = tmp_path_factory.mktemp("home") / "msmarco-segment-v2.1"
    ids = build_segments(base.parent)
    return SegmentShards(base, spacing=1 << 16), ids


def test_parse_segment_id():
    loc = parse_segment_id("msmarco_v2.1_doc_00_1534870566#4_2687181963")
    assert loc == (0, "msmarco_v2.1_doc_00_1534870566", 4, 2687181963)
    assert parse_segment_id("msmarco_v2.1_doc_00_1534870566") is None
    assert parse_segment_id("msmarco_v2.1_doc_0_1#4_2") is None


def test_get_many_reads_every_segment_by_offset(collection):
    shards, ids = collection
    wanted = ids[0] + ids[7] + ids[59]
    found = shards.docs_store().get_many(wanted)
    assert list(found) == wanted  # every id, in request order for a dict of unique ids
    seg = found[ids[0][1]]
    assert isinstance(seg, MsMarcoV21Segment)
    assert seg.msmarco_document_id == ids[0][1].split("#")[0]
    assert seg.msmarco_document_segment_idx == int(ids[0][1].split("#")[1].split("_")[0])
    assert "café" in seg.title and "✓" in seg.headings and "naïve" in seg.segment
    assert seg.default_text() == f"{seg.title} {seg.headings} {seg.segment}"


def test_lookup_matches_docs_iter(collection):
    shards, ids = collection
    docs = list(shards.docs_iter())
    assert [d.doc_id for d in docs] == [i for s in range(N_SHARDS) for i in ids[s]]  # shard order, file order
    store = shards.docs_store()
    for d in docs[::17]:
        assert store.get(d.doc_id) == d


def test_unknown_ids_are_reported_not_dropped(collection):
    shards, ids = collection
    good = ids[0][5]
    offset = int(good.rsplit("_", 1)[1])
    wrong_offset = good.rsplit("_", 1)[0] + f"_{offset + 3}"             # not the start of a line
    other_line = ids[0][4].rsplit("_", 1)[0] + f"_{offset}"            # a line, but another segment's
    past_end = good.rsplit("_", 1)[0] + "_99999999"
    bad = ["not-a-segment", wrong_offset, other_line, past_end, "msmarco_v2.1_doc_61_0#0_0"]
    store = shards.docs_store()
    with pytest.raises(SegmentsNotFound) as err:
        store.get_many([good] + bad)
    assert set(err.value.missing) == set(bad)
    assert ids[0][5] in err.value.missing[other_line]  # says which segment is really there
    assert isinstance(err.value, KeyError)
    message = str(err.value).splitlines()  # one line per kind of reason, not one per id
    assert message[0] == "5 segment id(s) not found in msmarco-segment-v2.1:" and len(message) == 4
    assert sum(line.startswith("  3 are not at their offset: e.g.") for line in message) == 1
    with pytest.raises(KeyError):
        store.get(past_end)
    with pytest.warns(UserWarning, match="5 segment id"):
        found = shards.docs_store(on_missing="warn").get_many([good] + bad)
    assert list(found) == [good]


def test_missing_shard_file(tmp_path):
    base = tmp_path / "msmarco-segment-v2.1"
    ids = write_shard(base / "msmarco_v2.1_doc_segmented" / "msmarco_v2.1_doc_segmented_03.json.gz", 3, 3)
    shards = SegmentShards(base)
    assert shards.docs_store().get(ids[1]).doc_id == ids[1]  # one shard is enough for its lookups
    with pytest.raises(ShardsMissing, match="1 requested segment.* msmarco_v2.1_doc_segmented_04.json.gz; put them "
                                            f"in {base / 'msmarco_v2.1_doc_segmented'}"):
        shards.docs_store().get("msmarco_v2.1_doc_04_0#0_0")  # ir_datasets lookup's call: not a bare KeyError
    with pytest.raises(SegmentsNotFound) as err:  # another cause too: the ids' error, one line per cause
        shards.docs_store().get_many(["msmarco_v2.1_doc_04_0#0_0", "no-id"])
    assert sorted(str(err.value).splitlines()[1:]) == [
        f"  1 are in shard files not in place: e.g. msmarco_v2.1_doc_04_0#0_0 (shard file "
        f"{base / 'msmarco_v2.1_doc_segmented' / 'msmarco_v2.1_doc_segmented_04.json.gz'} not found)",
        "  1 not segment ids: e.g. no-id (not of the form msmarco_v2.1_doc_NN_DOCBYTE#IDX_SEGBYTE)"]
    with pytest.raises(FileNotFoundError, match="59 of 60 shards are missing") as err:
        next(shards.docs_iter())
    assert str(base / "msmarco_v2.1_doc_segmented") in str(err.value)  # says where to put them


def test_no_shards_gives_instructions(tmp_path):
    with pytest.raises(FileNotFoundError, match="msmarco_v2.1_doc_segmented_59.json.gz"):
        next(SegmentShards(tmp_path / "msmarco-segment-v2.1").docs_iter())


def test_access_index_built_once_and_rebuilt_when_shard_changes(tmp_path):
    base = tmp_path / "msmarco-segment-v2.1"
    shard_path = base / "msmarco_v2.1_doc_segmented" / "msmarco_v2.1_doc_segmented_00.json.gz"
    ids = write_shard(shard_path, 0, 30)
    shards = SegmentShards(base, spacing=1 << 16)
    store = shards.docs_store()
    assert store.get(ids[-1]).doc_id == ids[-1]
    index = shards.index_path(0)
    assert index.exists()
    stamp = index.stat().st_mtime_ns
    shards.docs_store().get(ids[3])
    assert index.stat().st_mtime_ns == stamp  # reused, not rebuilt
    # a different shard at the same place (e.g. re-extracted): the stale index is not used
    ids2 = write_shard(shard_path, 0, 5)
    with gzip.open(shard_path, "ab") as f:  # make sure the size differs
        f.write(json.dumps({"docid": "x"}).encode() + b"\n")
    assert shards.docs_store().get(ids2[2]).doc_id == ids2[2]
    assert json.loads(shards.indexed_shard(0).meta_path.read_text())["shard_bytes"] == os.path.getsize(shard_path)


def test_bad_line_names_file_and_line(tmp_path):
    base = tmp_path / "msmarco-segment-v2.1"
    for shard in range(N_SHARDS):
        p = base / "msmarco_v2.1_doc_segmented" / f"msmarco_v2.1_doc_segmented_{shard:02d}.json.gz"
        write_shard(p, shard, 1)
    with gzip.open(base / "msmarco_v2.1_doc_segmented" / "msmarco_v2.1_doc_segmented_00.json.gz", "ab") as f:
        f.write(b'{"docid": "msmarco_v2.1_doc_00_0#0_0", "url": "u"}\n')
    with pytest.raises(ValueError, match=r"msmarco_v2.1_doc_segmented_00.json.gz:2: .*missing field 'title'"):
        with warnings.catch_warnings():
            list(SegmentShards(base).docs_iter())
