"""Every dataset id this package registers has its metadata, as ir_datasets' own entries do (ir_datasets' test
``test/metadata.py::TestMetadata::test_all_metadata_available`` checks every registered id for a count of each
entity type it provides): counted from the real files by scripts/dataset_metadata.py, or published."""
import json

import ir_datasets
import pytest

import datasets_ext
from datasets_ext.registry import METADATA_FILE

# counts that no file here or publication gives yet (docs/datasets.md, "Metadata"): the test says so until they are in
NOT_COUNTED = {"msmarco-segment-v2.1/trec-rag-2024/umbrela": "qrels", "trec-ikat/2024": "qrels"}


def _ids():
    for dataset_id in sorted(ir_datasets.registry._registered):
        mark = ()
        if dataset_id in NOT_COUNTED:
            mark = pytest.mark.xfail(strict=True, reason=f"the {NOT_COUNTED[dataset_id]} count of {dataset_id} "
                                                         "needs its file (scripts/dataset_metadata.py)")
        yield pytest.param(dataset_id, marks=mark)


@pytest.mark.parametrize("dataset_id", list(_ids()))
def test_every_registered_id_has_a_count_of_each_entity(dataset_id):
    dataset = ir_datasets.load(dataset_id)
    metadata = dataset.metadata()
    for entity in ir_datasets.EntityType:
        if dataset.has(entity):
            assert "count" in metadata.get(entity.value, {}), f"{dataset_id} has no {entity.value} count"


def test_the_metadata_file_holds_exactly_the_registered_ids():
    assert sorted(json.loads(METADATA_FILE.read_text())) == sorted(datasets_ext.REGISTERED)


def test_counts_reach_ir_datasets_count_methods():
    """``qrels_count()`` and ``queries_count()`` read the metadata (ir_datasets' MetadataComponent), and a corpus that
    refers to another (``_ref``) gives the other's count."""
    assert ir_datasets.load("trec-rag-2026").queries_count() == 119
    assert ir_datasets.load("msmarco-segment-v2.1/trec-rag-2025/dev-nuggets").qrels_count() == 2510
    assert ir_datasets.load("trec-ikat/2024").docs_count() == 116_838_987
    assert ir_datasets.load("trec-rag-2026/research-rubrics-dev").metadata()["qrels"]["fields"]["relevance"][
        "counts_by_value"]["-5"] == 25
