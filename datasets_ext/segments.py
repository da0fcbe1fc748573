"""The MS MARCO V2.1 segmented corpus (113,520,750 segments in 60 gzipped JSONL shards), read in place.

A segment id says where the segment is: ``msmarco_v2.1_doc_{shard}_{docbyte}#{segidx}_{segbyte}``, with
``segbyte`` the byte offset of the segment's line in the *decompressed* shard ``shard``. Looking a segment up
therefore needs no document store: seek to ``segbyte`` in the gzip stream and read one line. Seeking in a
gzip stream needs an access index (zran checkpoints: the inflate state every ``spacing`` decompressed bytes
plus the 32 KiB window before it), built once per shard by ``indexed_gzip`` in one pass over the shard and
stored, compressed, under ``$IR_DATASETS_HOME/msmarco-segment-v2.1/segment-index/``. Every line read is
checked to carry the requested id; ids that cannot be found are reported (``SegmentsNotFound``), never
silently dropped. See docs/datasets.md and docs/benchmarks.md for the figures behind the default spacing.
"""

import gzip
import io
import json
import re
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import ir_datasets
from ir_datasets.formats import BaseDocs
from ir_datasets.indices import Docstore

from datasets_ext.files import atomic_write
from nuggets_core.errors import InvalidInput

NAME = "msmarco-segment-v2.1"
N_SHARDS = 60
N_SEGMENTS = 113_520_750
SHARD_DIR = "msmarco_v2.1_doc_segmented"
SHARD_FILE = "msmarco_v2.1_doc_segmented_{shard:02d}.json.gz"
INDEX_DIR = "segment-index"
#: Decompressed bytes between two checkpoints of the gzip access index (see docs/benchmarks.md).
DEFAULT_SPACING = 1 << 20
#: Open shards (each holds its access index in memory, ~32 KiB per checkpoint) kept by a docstore.
DEFAULT_OPEN_SHARDS = 2
_INDEX_FORMAT = 1

SEGMENT_ID = re.compile(r"msmarco_v2\.1_doc_(\d{2})_(\d+)#(\d+)_(\d+)")

INSTRUCTIONS = """\
The MS MARCO V2.1 segmented corpus is not downloaded automatically (it is 25 GB; see the MS MARCO terms of use
at https://microsoft.github.io/msmarco/). Download msmarco_v2.1_doc_segmented.tar from the TREC RAG corpus page
(https://trec-rag.github.io/annoucements/2024-corpus-finalization/) and extract it so that the 60 shards are at

    {directory}/msmarco_v2.1_doc_segmented_00.json.gz
    ...
    {directory}/msmarco_v2.1_doc_segmented_59.json.gz

(e.g. `tar -xf msmarco_v2.1_doc_segmented.tar -C {parent}`; a symbolic link to an existing copy works too).
Keep the shards gzipped: lookups seek in them through a small access index built on first use.
"""


class MsMarcoV21Segment(NamedTuple):
    """One segment of the MS MARCO V2.1 segmented corpus (the ir_datasets document).

    Field-compatible with ir_datasets' own ``MsMarcoV21SegmentedDoc`` (its ``msmarco-segment-v2.1``, on its main
    branch): the same fields in the same order, the same types and the same ``default_text()``, so code reading
    segments works with either reader (see :func:`segment_docs`).

    :param doc_id: the segment id, ``msmarco_v2.1_doc_NN_DOCBYTE#IDX_SEGBYTE``.
    :param url: the document's URL.
    :param title: the document's title.
    :param headings: the document's headings.
    :param segment: the segment's text.
    :param start_char: where the segment starts in the document.
    :param end_char: where it ends.
    :param msmarco_document_id: the document's id, ``msmarco_v2.1_doc_NN_DOCBYTE``.
    :param msmarco_document_segment_idx: the segment's index in the document.
    """
    doc_id: str
    url: str
    title: str
    headings: str
    segment: str
    start_char: int
    end_char: int
    msmarco_document_id: str
    msmarco_document_segment_idx: int

    def default_text(self) -> str:
        """title + headings + segment (as for the full MS MARCO V2.1 documents: title + headings + body)."""
        return f"{self.title} {self.headings} {self.segment}"


class SegmentLocation(NamedTuple):
    shard: int
    document_id: str
    segment_idx: int
    offset: int


def parse_segment_id(doc_id: str) -> SegmentLocation | None:
    """Where segment ``doc_id`` lives, or None if it is not a V2.1 segment id.

    :param doc_id: the segment id.
    """
    m = SEGMENT_ID.fullmatch(doc_id)
    if m is None:
        return None
    shard, docbyte, segidx, segbyte = m.groups()
    return SegmentLocation(int(shard), f"msmarco_v2.1_doc_{shard}_{docbyte}", int(segidx), int(segbyte))


def segment_from_json(line: bytes | str, where: str = "") -> MsMarcoV21Segment:
    """Parse one line of a shard."""
    try:
        data = json.loads(line)
        doc_id = data["docid"]
        loc = parse_segment_id(doc_id)
        if loc is None:
            raise InvalidInput(f"field docid: {doc_id!r} is not a segment id msmarco_v2.1_doc_NN_DOCBYTE#IDX_SEGBYTE")
        return MsMarcoV21Segment(doc_id, data["url"], data["title"], data["headings"], data["segment"],
                                 int(data["start_char"]), int(data["end_char"]), loc.document_id, loc.segment_idx)
    except (ValueError, KeyError, TypeError) as e:
        detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise InvalidInput(f"{where}: not a V2.1 segment line ({detail})") from e


class SegmentsNotFound(KeyError):
    """Some requested segment ids could not be found; ``missing`` maps each id to the reason.

    The message gives one line per kind of reason (how many ids, an example), not one per id.

    :param missing: id -> why it was not found.
    :param causes: id -> the kind of reason the message groups it under (default: the reason itself).
    """

    def __init__(self, missing: dict[str, str], causes: dict[str, str] | None = None):
        self.missing = dict(missing)
        causes = causes or {doc_id: reason for doc_id, reason in self.missing.items()}
        by_cause: dict[str, list[str]] = {}
        for doc_id in self.missing:
            by_cause.setdefault(causes[doc_id], []).append(doc_id)
        lines = "\n".join(f"  {len(ids)} {cause}: e.g. {ids[0]} ({self.missing[ids[0]]})"
                          for cause, ids in by_cause.items())
        super().__init__(f"{len(self.missing)} segment id(s) not found in msmarco-segment-v2.1:\n{lines}")

    def __str__(self) -> str:  # KeyError would show the repr of the message
        return self.args[0]


class ShardsMissing(FileNotFoundError):
    """Requested segments lie in shard files that are not in place: the message names them and where they go."""


class IndexedShard:
    """One gzip shard with random access by decompressed byte offset (indexed_gzip + a stored index).

    The index lives in ``index_path`` (gzip-compressed zran checkpoints) with a JSON sidecar recording the
    shard's size and the spacing; it is rebuilt when either no longer matches.
    """

    def __init__(self, path: Path, index_path: Path, spacing: int = DEFAULT_SPACING):
        self.path = Path(path)
        self.index_path = Path(index_path)
        self.meta_path = self.index_path.with_name(self.index_path.name + ".json")
        if spacing <= 32768:
            raise InvalidInput(f"spacing must be more than the 32 KiB deflate window, not {spacing}")
        self.spacing = spacing
        self._file = None

    def _index_is_current(self) -> bool:
        try:
            meta = json.loads(self.meta_path.read_text())
        except (OSError, ValueError):
            return False
        return (meta.get("format") == _INDEX_FORMAT and meta.get("spacing") == self.spacing
                and meta.get("shard_bytes") == self.path.stat().st_size and self.index_path.exists())

    def build_index(self) -> None:
        """Build the access index (one pass over the shard) and store it."""
        import indexed_gzip

        with indexed_gzip.IndexedGzipFile(str(self.path), spacing=self.spacing, drop_handles=False) as f:
            f.build_full_index()
            buf = io.BytesIO()
            f.export_index(fileobj=buf)
        with atomic_write(self.index_path, "wb") as f:
            f.write(gzip.compress(buf.getvalue(), compresslevel=6, mtime=0))
        meta = {"format": _INDEX_FORMAT, "spacing": self.spacing, "shard_bytes": self.path.stat().st_size,
                "shard": str(self.path)}
        with atomic_write(self.meta_path, "wb") as f:
            f.write(json.dumps(meta).encode())

    def ensure_index(self) -> None:
        if not self._index_is_current():
            self.build_index()

    def open(self):
        if self._file is None:
            import indexed_gzip

            self.ensure_index()
            index = io.BytesIO(gzip.decompress(self.index_path.read_bytes()))
            f = indexed_gzip.IndexedGzipFile(str(self.path), spacing=self.spacing, drop_handles=False,
                                             auto_build=False, buffer_size=16384)
            f.import_index(fileobj=index)
            self._file = f
        return self._file

    def read_line(self, offset: int) -> bytes:
        """The line starting at decompressed byte ``offset`` (b'' past the end of the shard)."""
        f = self.open()
        f.seek(offset)
        return f.readline()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class SegmentDocstore(Docstore):
    """Docstore over the gzipped shards: ``get``, ``get_many``, ``get_many_iter`` by seeking.

    ``on_missing`` says what happens to ids that cannot be found: ``"raise"`` (default) raises
    ``SegmentsNotFound`` (a KeyError listing every missing id and why) after the found ones were yielded;
    ``"warn"`` issues one warning with the same list and goes on.
    """

    def __init__(self, shards: "SegmentShards", on_missing: str = "raise", open_shards: int = DEFAULT_OPEN_SHARDS):
        super().__init__(MsMarcoV21Segment, "doc_id")
        if on_missing not in ("raise", "warn"):
            raise InvalidInput(f"on_missing must be 'raise' or 'warn', not {on_missing!r}")
        self.shards = shards
        self.on_missing = on_missing
        self.open_shards = max(1, open_shards)
        self._open: OrderedDict[int, IndexedShard] = OrderedDict()

    def _shard(self, shard: int) -> IndexedShard:
        if shard in self._open:
            self._open.move_to_end(shard)
            return self._open[shard]
        indexed = self.shards.indexed_shard(shard)
        indexed.open()
        self._open[shard] = indexed
        while len(self._open) > self.open_shards:
            _, old = self._open.popitem(last=False)
            old.close()
        return indexed

    def get_many_iter(self, doc_ids: Iterable[str]) -> Iterator[MsMarcoV21Segment]:
        missing: dict[str, str] = {}  # id -> why, in detail
        causes: dict[str, str] = {}  # id -> the kind of reason (one line of the error each)
        absent: dict[Path, list[str]] = {}  # shard files not in place -> the ids asked of them
        by_shard: dict[int, list[tuple[int, str]]] = {}

        def lost(doc_id: str, cause: str, detail: str) -> None:
            missing[doc_id], causes[doc_id] = detail, cause

        for doc_id in dict.fromkeys(doc_ids):  # unique, in order
            loc = parse_segment_id(doc_id)
            if loc is None:
                lost(doc_id, "not segment ids", "not of the form msmarco_v2.1_doc_NN_DOCBYTE#IDX_SEGBYTE")
            elif loc.shard >= N_SHARDS:
                lost(doc_id, "name a shard that does not exist", f"no shard {loc.shard:02d}; shards are "
                     f"00-{N_SHARDS - 1}")
            else:
                by_shard.setdefault(loc.shard, []).append((loc.offset, doc_id))
        # shard by shard, offsets ascending: each shard's index is loaded once and reads move forward
        for shard in sorted(by_shard, key=lambda s: (s not in self._open, s)):
            path = self.shards.shard_path(shard)
            if not path.exists():
                absent[path] = [doc_id for _, doc_id in by_shard[shard]]
                for _, doc_id in by_shard[shard]:
                    lost(doc_id, "are in shard files not in place", f"shard file {path} not found")
                continue
            indexed = self._shard(shard)
            for offset, doc_id in sorted(by_shard[shard]):
                line = indexed.read_line(offset)
                if not line:
                    lost(doc_id, "are not at their offset", f"offset {offset} is past the end of {path.name}")
                    continue
                try:
                    seg = segment_from_json(line, f"{path}@{offset}")
                except ValueError:
                    lost(doc_id, "are not at their offset", f"no segment line starts at offset {offset} of "
                         f"{path.name}")
                    continue
                if seg.doc_id != doc_id:
                    lost(doc_id, "are not at their offset", f"the line at offset {offset} of {path.name} is "
                         f"{seg.doc_id}")
                    continue
                yield seg
        if absent and len(missing) == sum(len(v) for v in absent.values()) and self.on_missing == "raise":
            # nothing else is wrong: the corpus is incomplete, not the ids (ir_datasets lookup says so too)
            names = ", ".join(p.name for p in list(absent)[:5]) + (", ..." if len(absent) > 5 else "")
            raise ShardsMissing(f"msmarco-segment-v2.1: {len(missing)} requested segment(s) (e.g. "
                                f"{next(iter(missing))}) lie in {len(absent)} shard file(s) not in place: {names}; "
                                f"put them in {next(iter(absent)).parent}.\n{self.shards.instructions()}")
        if missing:
            error = SegmentsNotFound(missing, causes)
            if self.on_missing == "raise":
                raise error
            warnings.warn(str(error), stacklevel=2)

    def clear_cache(self) -> None:
        for indexed in self._open.values():
            indexed.close()
        self._open.clear()

    def build(self, shards: Iterable[int] | None = None) -> list[Path]:
        """Build (or check) the access index of every present shard; returns the shards indexed."""
        done = []
        for shard in (range(N_SHARDS) if shards is None else shards):
            if self.shards.shard_path(shard).exists():
                self.shards.indexed_shard(shard).ensure_index()
                done.append(self.shards.shard_path(shard))
        return done


class UpstreamSegmentsWarning(UserWarning):
    """ir_datasets registers ``msmarco-segment-v2.1`` with records whose fields differ from
    :class:`MsMarcoV21Segment`'s: the TREC RAG ids of datasets_ext read them as they are."""


def segment_docs() -> BaseDocs:
    """The docs handler of ``msmarco-segment-v2.1`` that the TREC RAG ids build on.

    The one registered under the id when there is one (ir_datasets' own, from the version that ships it), else a
    reader of the local shards (:class:`SegmentShards`), so that a sub-id never reads segments another way than
    its parent. Registered records whose fields differ from :class:`MsMarcoV21Segment`'s are used all the same,
    with an :class:`UpstreamSegmentsWarning` naming the fields.

    Examples::

        docs = segment_docs()
        docs.docs_store().get("msmarco_v2.1_doc_00_1534870566#4_2687181963").default_text()
    """
    if NAME not in ir_datasets.registry or not ir_datasets.registry[NAME].has_docs():
        return SegmentShards()
    docs = ir_datasets.registry[NAME].docs_handler()
    fields = getattr(docs.docs_cls(), "_fields", ())
    if fields != MsMarcoV21Segment._fields:
        warnings.warn(f"ir_datasets registers {NAME} with {docs.docs_cls().__name__} records of fields "
                      f"{', '.join(fields) or '(none)'}, not {', '.join(MsMarcoV21Segment._fields)}: the TREC RAG "
                      f"ids of datasets_ext use its documents as they are (see docs/datasets.md)",
                      UpstreamSegmentsWarning, stacklevel=2)
    return docs


class SegmentShards(BaseDocs):
    """Docs handler for the 60 local shards of ``msmarco-segment-v2.1`` (our reader; usable directly also where
    ir_datasets registers the id itself, see :func:`segment_docs`).

    :param base_path: the directory holding ``msmarco_v2.1_doc_segmented/`` (default
        ``$IR_DATASETS_HOME/msmarco-segment-v2.1``, read on use).
    :param spacing: decompressed bytes between two checkpoints of a shard's access index.
    """

    def __init__(self, base_path: str | Path | None = None, spacing: int = DEFAULT_SPACING):
        self._fixed_base_path = None if base_path is None else Path(base_path)
        self._spacing = spacing

    @property
    def _base_path(self) -> Path:
        """``$IR_DATASETS_HOME/msmarco-segment-v2.1`` unless a directory was given (read on use, not import)."""
        if self._fixed_base_path is not None:
            return self._fixed_base_path
        return Path(ir_datasets.util.home_path()) / NAME

    def docs_path(self, force: bool = True) -> str:
        path = self._base_path / SHARD_DIR
        if force:
            self._check_present()
        return str(path)

    def shard_path(self, shard: int) -> Path:
        return self._base_path / SHARD_DIR / SHARD_FILE.format(shard=shard)

    def index_path(self, shard: int) -> Path:
        return self._base_path / INDEX_DIR / (SHARD_FILE.format(shard=shard) + ".gzidx.gz")

    def indexed_shard(self, shard: int) -> IndexedShard:
        return IndexedShard(self.shard_path(shard), self.index_path(shard), self._spacing)

    def instructions(self) -> str:
        directory = self._base_path / SHARD_DIR
        return INSTRUCTIONS.format(directory=directory, parent=self._base_path)

    def _check_present(self) -> None:
        missing = [self.shard_path(s).name for s in range(N_SHARDS) if not self.shard_path(s).exists()]
        if len(missing) == N_SHARDS:
            raise FileNotFoundError(f"msmarco-segment-v2.1: no shards found.\n{self.instructions()}")
        if missing:
            raise FileNotFoundError(f"msmarco-segment-v2.1: {len(missing)} of {N_SHARDS} shards are missing "
                                    f"({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}).\n"
                                    f"{self.instructions()}")

    def docs_iter(self) -> Iterator[MsMarcoV21Segment]:
        """All segments, shard 00 to 59, in file order."""
        self._check_present()
        for shard in range(N_SHARDS):
            path = self.shard_path(shard)
            with gzip.open(path, "rb") as f:
                for lineno, line in enumerate(io.BufferedReader(f, buffer_size=1 << 20), start=1):
                    yield segment_from_json(line, f"{path}:{lineno}")

    def docs_cls(self):
        return MsMarcoV21Segment

    def docs_store(self, field: str = "doc_id", options=None, on_missing: str = "raise") -> SegmentDocstore:
        if field != "doc_id":
            raise NotImplementedError("msmarco-segment-v2.1 segments can be looked up by doc_id only")
        return SegmentDocstore(self, on_missing=on_missing)

    def docs_count(self) -> int:
        return N_SEGMENTS

    def docs_namespace(self) -> str:
        return "msmarco-segment-v2.1"

    def docs_lang(self) -> str:
        return "en"
