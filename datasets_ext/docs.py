"""Documents and qrels read from one downloaded file (nugget files, CONE-RAG JSON files, rubric files): the parts
of ir_datasets' ``BaseDocs`` and ``BaseQrels`` they share, and a docstore that looks documents up by id after one
pass over the file (the files are small)."""
from __future__ import annotations

from ir_datasets.formats import BaseDocs, BaseQrels, TrecQrel
from ir_datasets.indices import Docstore


class InMemoryStore(Docstore):
    """Documents by ``doc_id``, read once from ``docs.docs_iter()`` on the first lookup."""

    def __init__(self, docs: BaseDocs):
        super().__init__(docs.docs_cls(), "doc_id")
        self._docs = docs
        self._by_id: dict | None = None

    def get_many_iter(self, doc_ids):
        if self._by_id is None:
            self._by_id = {d.doc_id: d for d in self._docs.docs_iter()}
        for doc_id in doc_ids:
            if doc_id in self._by_id:
                yield self._by_id[doc_id]


class FileDocs(BaseDocs):
    """Documents of class ``cls`` parsed from the file of ``dlc``; subclasses implement ``docs_iter``."""

    def __init__(self, dlc, namespace: str, cls):
        self._dlc, self._namespace, self._cls = dlc, namespace, cls

    def docs_path(self, force: bool = True) -> str:
        return self._dlc.path(force)

    def docs_cls(self):
        return self._cls

    def docs_store(self, field: str = "doc_id", options=None) -> Docstore:
        return InMemoryStore(self)

    def docs_count(self) -> int:
        return sum(1 for _ in self.docs_iter())

    def docs_namespace(self) -> str:
        return self._namespace

    def docs_lang(self) -> str:
        return "en"


class FileQrels(BaseQrels):
    """Qrels parsed from the file of ``dlc`` (``TrecQrel`` rows unless ``cls`` says otherwise, relevance levels
    ``defs``); subclasses implement ``qrels_iter``."""

    def __init__(self, dlc, defs: dict[int, str], cls=TrecQrel):
        self._dlc, self._defs, self._cls = dlc, dict(defs), cls

    def qrels_path(self) -> str:
        return self._dlc.path()

    def qrels_cls(self):
        return self._cls

    def qrels_defs(self) -> dict[int, str]:
        return dict(self._defs)
