"""Shard manifests (``shard.json``, docs/shards.md): what a finished ``--shard I/N`` run of ``demo``, ``trec-rag``,
``ikat`` or ``arena`` did, written into its ``--out`` when it finishes (:func:`write_manifest`), read by ``merge`` and
by the report (:func:`read_manifest`, every field checked). The split of the topics into shards (:func:`shard_of`)
is part of the format: a manifest records its rule and the topics of its shard.

A manifest is one JSON object: ``format`` ("pyterrier-nuggets shard"), ``version`` (1), ``command``, ``shard``
(``I/N``), ``rule``, ``command_line``, ``argv``, ``cwd``, ``options``, ``topics`` (every topic of the run),
``own_topics`` (the shard's), ``cache`` (its response cache: a file name beside the manifest, or an absolute path;
``null`` without LLM), ``llm`` (model and endpoint), ``failed`` (topic -> the step that failed on it).
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
from dataclasses import dataclass, field

from pyterrier_nuggets.formats.files import InputError, atomic_write, load_json

MANIFEST = "shard.json"
FORMAT = "pyterrier-nuggets shard"
VERSION = 1
RULE = "int(sha256(qid).hexdigest(), 16) % n + 1"


def shard_of(qid: str, n: int) -> int:
    """The shard (1 to ``n``) of topic ``qid``: ``int(sha256(qid).hexdigest(), 16) % n + 1``.

    :param qid: the topic id (its UTF-8 bytes are hashed).
    :param n: the number of shards.
    """
    return int(hashlib.sha256(str(qid).encode("utf-8")).hexdigest(), 16) % n + 1


@dataclass(frozen=True)
class Shard:
    """Shard ``i`` of ``n`` (1-based)."""

    i: int
    n: int

    def owns(self, qid: str) -> bool:
        return shard_of(qid, self.n) == self.i

    def select(self, qids) -> list[str]:
        """The topics of ``qids`` in this shard, in their order."""
        return [q for q in qids if self.owns(q)]

    def __str__(self) -> str:
        return f"{self.i}/{self.n}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``I/N`` with 1 <= I <= N, e.g. ``2/8``; else a ValueError saying what is wrong."""
        i, sep, n = text.partition("/")
        try:
            shard = cls(int(i), int(n))
        except ValueError:
            shard = None
        if not sep or shard is None:
            raise ValueError(f"{text!r} is not I/N (shard I of N, e.g. 2/8)")
        if not 1 <= shard.i <= shard.n:
            raise ValueError(f"{text!r}: I must be between 1 and N (shards are numbered from 1, e.g. 1/8 ... 8/8)")
        return shard


@dataclass
class Manifest:
    """``shard.json``: what a finished shard did.

    :param command: the subcommand (``demo``, ``trec-rag``, ``ikat``, ``arena``).
    :param options: the run's options as parsed (``cli.shards.options_of``: without --shard, --out, --llm-cache,
        --index-dir).
    :param argv: the command line as given (after ``pyterrier-nuggets``); merge re-runs it on every topic.
    :param cwd: the folder it ran in (relative paths of ``argv`` are read from there).
    :param shard: which shard.
    :param topics: every topic of the run, in the command's order.
    :param own_topics: the topics of this shard.
    :param cache: the response cache it wrote (absolute path; ``None``: no LLM).
    :param llm: the LLM's model and endpoint (``None``: no LLM).
    :param failed: topic -> the step that failed on it (merge refuses a shard with failures).
    :param path: the file it was read from.
    """

    command: str
    options: dict
    argv: list[str]
    cwd: str
    shard: Shard
    topics: list[str]
    own_topics: list[str]
    cache: str | None
    llm: dict | None
    failed: dict[str, str] = field(default_factory=dict)
    path: str = ""

    @property
    def folder(self) -> str:
        return os.path.dirname(self.path)

    def command_line(self, shard: Shard | None = None, out: str | None = None, again: bool = False) -> str:
        """The command line of this shard, or of another ``shard`` (into ``out``): to run it; ``again``: into the
        folder of its earlier run (with ``--overwrite``)."""
        argv = list(self.argv) + (["--overwrite"] if again and "--overwrite" not in self.argv else [])
        for option, value in (("--shard", str(shard) if shard else None), ("--out", out)):
            if value is None:
                continue
            spots = [k for k, a in enumerate(argv) if a == option and k + 1 < len(argv)]
            if spots:
                argv[spots[-1] + 1] = value
            else:
                argv = [a for a in argv if not a.startswith(option + "=")] + [option, value]
        return shlex.join(["pyterrier-nuggets", *argv])

    def to_json(self) -> dict:
        cache = self.cache
        if cache is not None and os.path.dirname(os.path.abspath(cache)) == os.path.abspath(self.folder):
            cache = os.path.basename(cache)  # beside the manifest: found there when the folder is moved
        return {"format": FORMAT, "version": VERSION, "command": self.command, "shard": str(self.shard),
                "rule": RULE, "command_line": self.command_line(), "argv": self.argv, "cwd": self.cwd,
                "options": self.options, "topics": self.topics, "own_topics": self.own_topics, "cache": cache,
                "llm": self.llm, "failed": self.failed}


def read_manifest(path: str) -> Manifest:
    """The manifest ``path`` (or ``path/shard.json``), every field checked (an error names the file and field)."""
    if os.path.isdir(path):
        path = os.path.join(path, MANIFEST)
    if not os.path.isfile(path):
        raise InputError(path, None, None, "no such file: not a finished shard",
                         "give the --out folders of shards that finished (a shard writes shard.json when it is done)")
    data = load_json(path, dict, "a shard manifest")

    def need(name: str, kind, what: str):
        value = data.get(name)
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise InputError(path, None, name, f"missing or not {what}", "the manifest is damaged: run the shard again")
        return value

    if data.get("format") != FORMAT or data.get("version") != VERSION:
        raise InputError(path, None, "format", f"not a shard manifest of this version ({FORMAT!r} version {VERSION})",
                         "run the shard again with this version")
    try:
        shard = Shard.parse(need("shard", str, "I/N"))
    except ValueError as e:
        raise InputError(path, None, "shard", str(e)) from None
    topics, own = need("topics", list, "a list of topic ids"), need("own_topics", list, "a list of topic ids")
    failed = need("failed", dict, "an object of topic -> step")
    argv = need("argv", list, "the command line")
    if not all(isinstance(x, str) for x in topics + own + argv + list(failed.values())):
        raise InputError(path, None, "topics", "topic ids, steps and arguments must be strings")
    cache = data.get("cache")
    if cache is not None:
        if not isinstance(cache, str):
            raise InputError(path, None, "cache", "not a path")
        cache = os.path.join(os.path.dirname(os.path.abspath(path)), cache)  # an absolute one stays as it is
    llm = data.get("llm")
    if llm is not None and not isinstance(llm, dict):
        raise InputError(path, None, "llm", "not an object of model and endpoint")
    return Manifest(need("command", str, "a subcommand"), need("options", dict, "an object"), argv,
                    need("cwd", str, "a folder"), shard, topics, own, cache, llm, failed, path)


def write_manifest(manifest: Manifest) -> None:
    """Write ``manifest`` to its ``path``, atomically (its folder created when missing)."""
    os.makedirs(os.path.dirname(os.path.abspath(manifest.path)), exist_ok=True)
    with atomic_write(manifest.path) as f:
        json.dump(manifest.to_json(), f, indent=1, ensure_ascii=False)
        f.write("\n")
