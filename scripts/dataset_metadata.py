"""Count the docs, queries and qrels of every dataset id this package registers, as ir_datasets counts its own
entries, and write ``datasets_ext/metadata.json`` (ir_datasets' metadata form: ``{id: {"docs": {"count": N},
"queries": {"count": N}, "qrels": {"count": N, "fields": {"relevance": {"counts_by_value": {...}}}}}}``).

    .venv/bin/python scripts/dataset_metadata.py [DATA_DIR] [--check]

Every file of the datasets is looked for under DATA_DIR (default: ../shared/data beside the repository), by its
pinned md5 (or by its name where none is pinned), placed in a temporary ``IR_DATASETS_HOME`` and read through the
package's own handlers, so the counts are those a user's ``ir_datasets.load(id)`` gives. The two licensed corpora
(MS MARCO V2.1 segments, iKAT's ClueWeb22-B passages) cannot be read here: their counts are the published ones their
handlers state (``docs_count()``), and the other ids that use them refer to them (``{"_ref": id}``, as ir_datasets
does). An entity whose file is not under DATA_DIR keeps the count already in ``metadata.json`` or a published one
(``PUBLISHED``, with its source; said so); one with no count at all is listed, and the exit status is 1. ``--check``: write nothing, exit 1 if a count differs from the file's.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's package (and its metadata.json), not an installed copy
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"
SEGMENTS, PASSAGES = "msmarco-segment-v2.1", "trec-ikat/2023"  # the ids whose docs are the licensed corpora
# counts published for a file that is not under DATA_DIR: (id, entity) -> metadata, with where it is published
PUBLISHED = {
    # ir_datasets' own integration test of its iKAT 2023 entry (allenai/ir_datasets test/integration/trec_ikat23.py,
    # `trec-ikat/2023` qrels: the NIST 2023 qrels); the same test's PTKB qrels count, 1,030, is the count of our file
    ("trec-ikat/2023", "qrels"): {"count": 34183},
}


def place_files(data: Path, home: Path) -> list[str]:
    """Link every dataset file found under ``data`` into ``home`` where the handlers look for it; returns the files
    not found."""
    from datasets_ext import ikat, trec_rag
    from datasets_ext.files import file_md5
    found = [p for p in data.rglob("*") if p.is_file()]
    by_md5: dict[str, Path] = {}
    for p in found:
        by_md5.setdefault(file_md5(p), p)
    missing = []
    for file in {**trec_rag.FILES, **ikat.FILES}.values():
        source = by_md5.get(file.md5) if file.md5 else next((p for p in found if p.name == file.name), None)
        if source is None:
            missing.append(f"{file.directory}/{file.name}")
            continue
        target = home / file.directory / file.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(source)
    return missing


def count(dataset_id: str, dataset) -> dict:
    """The metadata of one dataset, counted through its handlers (a licensed corpus: its stated count or a ``_ref``)."""
    from datasets_ext.ikat_parser import IkatPassages
    from datasets_ext.segments import SegmentShards
    out: dict = {}
    if dataset.has_docs():
        handler = dataset.docs_handler()
        if isinstance(handler, (SegmentShards, IkatPassages)) or type(handler).__name__ == "MsMarcoV21SegmentedDocs":
            ref = SEGMENTS if not isinstance(handler, IkatPassages) else PASSAGES
            out["docs"] = {"count": handler.docs_count()} if dataset_id == ref else {"_ref": ref}
        else:
            out["docs"] = {"count": sum(1 for _ in dataset.docs_iter())}
    if dataset.has_queries():
        out["queries"] = {"count": sum(1 for _ in dataset.queries_iter())}
    if dataset.has_qrels():
        grades = Counter(str(q.relevance) for q in dataset.qrels_iter())
        out["qrels"] = {"count": sum(grades.values()),
                        "fields": {"relevance": {"counts_by_value": dict(sorted(grades.items()))}}}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="?", default=str(DEFAULT_DATA), help="folder holding the real files")
    parser.add_argument("--check", action="store_true", help="compare with metadata.json, write nothing")
    args = parser.parse_args()
    if not Path(args.data).is_dir():
        parser.error(f"{args.data}: no such folder (give the folder of the real files)")
    with tempfile.TemporaryDirectory() as home:
        os.environ["IR_DATASETS_HOME"] = home
        os.environ["PYTERRIER_NUGGETS_NO_HOOK"] = "1"  # the datasets are built here, not registered
        warnings.simplefilter("ignore")  # what the readers say of the files' content is not this script's business
        from datasets_ext import ikat, trec_rag
        from datasets_ext.registry import METADATA_FILE
        missing_files = place_files(Path(args.data), Path(home))
        existing = json.loads(METADATA_FILE.read_text(encoding="utf-8"))
        datasets = {**trec_rag.datasets(), **ikat.datasets()}
        result, kept, unknown, differ = {}, [], [], []
        for dataset_id, dataset in datasets.items():
            entry = {}
            for kind in ("docs", "queries", "qrels"):
                if not getattr(dataset, f"has_{kind}")():
                    continue
                try:
                    entry[kind] = count(dataset_id, _only(dataset, kind))[kind]
                except Exception as e:  # noqa: BLE001 - a file that is not here, whatever its handler raises
                    old = existing.get(dataset_id, {}).get(kind) or PUBLISHED.get((dataset_id, kind))
                    if old:
                        entry[kind] = old
                        kept.append(f"{dataset_id} {kind} ({type(e).__name__})")
                    else:
                        unknown.append(f"{dataset_id} {kind}: {type(e).__name__}: {str(e)[:120]}")
                    continue
                if existing.get(dataset_id, {}).get(kind) not in (None, entry[kind]):
                    differ.append(f"{dataset_id} {kind}: {existing[dataset_id][kind]} -> {entry[kind]}")
            result[dataset_id] = entry
    for title, items in (("files not found under " + args.data, missing_files), ("kept from metadata.json", kept),
                         ("changed", differ), ("NO COUNT", unknown)):
        if items:
            print(f"{title}:\n  " + "\n  ".join(items))
    if not args.check:
        text = "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(result.items())) + "\n}\n"
        METADATA_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {METADATA_FILE} ({len(result)} ids)")
    return 1 if unknown or (args.check and differ) else 0


def _only(dataset, kind: str):
    """``dataset`` seen through one kind of entity (so that a missing file of another kind does not stop the count)."""
    from ir_datasets.datasets.base import Dataset
    handler = getattr(dataset, f"{kind}_handler")()
    return Dataset(handler)


if __name__ == "__main__":
    sys.exit(main())
