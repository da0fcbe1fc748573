"""What the package may write, replace or open: the one rule of every command that writes a folder, a file or a
database (docs/decisions.md, decision 17: the package touches only what it made).

**The marker.** Where the package writes, it records what it wrote in the hidden manifest
``.pyterrier-nuggets-outputs.json`` of the folder (:data:`MANIFEST`: the command and the files, relative to the
folder). A file is the package's own when a manifest of its folder (or of a folder above it) names it; anything
else (a file, a folder, a link) is the user's, and no command replaces, removes or alters it.

**An output folder** (:class:`OutputFolder`: ``demo``, ``trec-rag``, ``arena``, ``ikat``, ``merge``, ``report``,
``annotate export``, and :func:`~pyterrier_nuggets.pipeline.run_main_job`):

- It may be new or empty, hold only the files a run keeps beside its outputs (``keep``: a response cache and its
  ``-wal``/``-shm``/``-journal`` files, a shard's manifest, an arena's battle journal), or hold the outputs of an
  earlier run: those are refused unless ``overwrite`` (``--overwrite``), and then replaced as a whole; the kept files
  stay.
- A folder holding anything else (any entry no manifest names: the user's files, ``.``, the home folder, a web app
  with its own ``manifest.json``, a shard folder's cache for a command that does not keep it) is refused, also with
  ``overwrite``, naming what is there: nothing in it is touched.
- The outputs are written into a staging folder beside it (``.NAME.partial-PID-XXXX``), flushed to the disk, and the
  staging folder then takes its place in one step: a new folder by one rename, an existing one by an atomic
  exchange (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames). A run killed at any moment leaves the
  folder old or new, never mixed, and a staging folder that the next run on the same folder removes (its process is
  gone). A new folder gets the mode ``mkdir`` gives (the umask), a replaced one keeps its mode.
- A write that fails (a full disk, say) leaves no staging folder and no new empty folder, and names the output it
  was writing.

**Output files** (:func:`check_outputs`, :func:`write_all`: ``table --out``, ``export``, ``agree --out``/``--plot``,
``correlate --plot``, ``calibrate --write-pairs``, the plots and tables of the Python API): a path where a file
stands that the package did not write is refused before any work; the package's own file there (a re-run) is
replaced. The files of one command are written all or none, then recorded in their folder's manifest.

**A database** (:func:`check_database`: the LLM response cache, the embedding matcher's vector cache) is opened only
if it is the package's kind: a new path, an empty file, or an SQLite database holding the kind's own table (a
response cache's ``responses`` with its columns).
The user's own database or any other file is refused, unchanged (:func:`read_only_connection` reads one without
leaving ``-wal``/``-shm`` files).
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import quote

from datasets_ext.files import DIRECTORY_MODE, atomic_write, sync_directory
from datasets_ext.reading import InputError
from ir_measures_ext.errors import InvalidInput

MANIFEST = ".pyterrier-nuggets-outputs.json"
_PARTIAL = ".partial-"
SHOWN = 6  # entries named in a refusal; the rest as "..."


def _shown(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")


def _manifest_files(folder: str) -> set[str]:
    """The files the manifest of ``folder`` names (none without a manifest, or with one that is not ours)."""
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as f:
            files = json.load(f).get("files", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {os.path.normpath(f) for f in files if isinstance(f, str)} if isinstance(files, list) else set()


def is_own_file(path: str | os.PathLike) -> bool:
    """True when a manifest of the file's folder, or of a folder above it, names ``path``: a file the package wrote.

    :param path: the file.
    """
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    while True:
        if os.path.relpath(path, folder) in _manifest_files(folder):
            return True
        above = os.path.dirname(folder)
        if above == folder:
            return False
        folder = above


class OutputFolder:
    """The output folder ``path`` of a command (see the module docstring).

    :param path: the folder.
    :param command: the command writing it (named in the manifest).
    :param overwrite: replace the outputs of an earlier run (``--overwrite``).
    :param keep: names of files in the folder that are not outputs and stay (a response cache, a journal).
    :param option: the option that named the folder, in messages.

    Examples::

        folder = OutputFolder("out/run", "trec-rag", overwrite=False)
        folder.check()                                   # before any work: refused, or ready
        folder.write_all({"out/run/scores.tsv": lambda tmp: frame.to_csv(tmp)})   # all or nothing, then in place
    """

    def __init__(self, path: str, command: str, *, overwrite: bool = False, keep: Iterable[str] = (),
                 option: str = "--out"):
        self._given = os.path.abspath(path)  # the outputs' paths are given under it
        # a link to a folder: the folder it points to is written (the user's link stays, never replaced by a folder)
        self.path = os.path.realpath(path) if os.path.islink(self._given) else self._given
        self.shown = path
        self.command, self.overwrite, self.option = command, overwrite, option
        self.keep = {os.path.basename(k) for k in keep}  # carried into the new folder (a caller may drop one)
        self._ours = set(self.keep)  # the package's own files beside the outputs: never foreign

    def _kept(self, name: str, keep: set[str] | None = None) -> bool:
        keep = self.keep if keep is None else keep
        return name == MANIFEST or name in keep or any(name == k + s for k in keep for s in ("-wal", "-shm", "-journal", "-lock"))  # -lock: llm/cache.py

    def earlier_outputs(self) -> list[str]:
        """The entries of the folder that an earlier run left (all but the kept files)."""
        if not os.path.isdir(self.path):
            return []
        return sorted(n for n in os.listdir(self.path) if not self._kept(n, self._ours))

    def foreign(self, limit: int = SHOWN + 1) -> list[str]:
        """The entries of the folder that no manifest names (relative paths, a folder with ``/``), at most ``limit``:
        what the package did not write there. Only folders a manifest names files in are looked into: a folder of
        the user's (``Documents/``) is named as a whole, never walked."""
        found: list[str] = []

        def scan(rel: str, named: set[str]) -> None:
            folder = os.path.join(self.path, rel)
            named = named | {os.path.join(rel, f) for f in _manifest_files(folder)} if rel else named
            for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                name = os.path.join(rel, entry.name) if rel else entry.name
                if len(found) >= limit:
                    return
                if entry.name == MANIFEST or (not rel and self._kept(entry.name, self._ours)):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    inside = any(n.startswith(name + os.sep) for n in named)
                    if inside or os.path.isfile(os.path.join(entry.path, MANIFEST)):
                        scan(name, named)
                    else:
                        found.append(name + "/")
                elif name not in named:
                    found.append(name)

        if os.path.isdir(self.path):
            scan("", _manifest_files(self.path))
        return found

    def check(self) -> None:
        """Before any work: the folder is new, empty, or holds only kept files; or it holds an earlier run's outputs
        and ``overwrite`` was given. Anything no manifest names is refused, also with ``overwrite``. Staging
        folders left by killed runs are removed."""
        if os.path.lexists(self.path) and not os.path.isdir(self.path):
            raise InvalidInput(f"{self.option} {self.shown} is a file, not a folder: give a folder")
        self.remove_stale_stages()
        foreign = self.foreign()
        if foreign:
            raise InvalidInput(f"{self.option} {self.shown} holds files that no pyterrier-nuggets run wrote there "
                               f"({_shown(foreign)}); the package writes only into a new or empty folder or one "
                               "of its own outputs, and never touches anything else (--overwrite included): "
                               "give another folder")
        earlier = self.earlier_outputs()
        if earlier and not self.overwrite:
            raise InvalidInput(f"{self.option} {self.shown} holds the outputs of an earlier run ({_shown(earlier)}): "
                               "give --overwrite to replace them as a whole, or another folder")

    def manifest_files(self) -> list[str]:
        """The files the manifest of the folder's last run names (none without a manifest)."""
        return sorted(_manifest_files(self.path))

    def remove_stale_stages(self) -> None:
        """Remove the staging folders of this folder whose process is gone (a run killed with -9). Where the folder
        was being replaced by two renames and the run died between them, the old folder is put back first."""
        parent, name = os.path.split(self.path)
        if not os.path.isdir(parent or "."):
            return
        stale = []
        for entry in os.listdir(parent or "."):
            pid = entry[len(f".{name}{_PARTIAL}"):].split("-")[0]
            if entry.startswith(f".{name}{_PARTIAL}") and pid.isdigit() and not _alive(int(pid)):
                stale.append(os.path.join(parent, entry))
        for entry in sorted(stale, key=lambda e: not e.endswith(".old")):
            if entry.endswith(".old") and not os.path.exists(self.path):
                os.rename(entry, self.path)  # the old folder, back in place
            else:
                shutil.rmtree(entry, ignore_errors=True)

    @contextlib.contextmanager
    def staged(self):
        """A staging folder beside the output folder, removed when the block fails (with the folders made for it);
        :meth:`commit` puts it in place."""
        parent, name = os.path.split(self.path)
        made = []  # the missing folders above the output folder, made here: removed again on failure
        above = parent
        while above and not os.path.exists(above):
            made.append(above)
            above = os.path.dirname(above)
        os.makedirs(parent or ".", exist_ok=True)
        stage = tempfile.mkdtemp(prefix=f".{name}{_PARTIAL}{os.getpid()}-", dir=parent or ".")
        try:
            # the folder's mode: a replaced folder keeps its own, a new one what mkdir gives (not mkdtemp's 0700)
            os.chmod(stage, os.stat(self.path).st_mode & 0o7777 if os.path.isdir(self.path) else DIRECTORY_MODE)
            yield stage
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            for folder in made:
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
            raise

    def write_all(self, writers: Mapping[str, Callable[[str], object]], folders: Iterable[Callable[[str], object]] = ()
                  ) -> list[str]:
        """Write every output and put the folder in place, all or nothing. ``writers``: output path (in the folder)
        -> ``writer(path to write)``; ``folders``: ``fill(stage)`` functions writing files of their own choosing
        into the staging folder. Returns the output paths as given (the folder's files).

        A write that fails raises an ``OSError`` naming the output path (not the staging file) and leaves the
        folder as it was."""
        with self.staged() as stage:
            for path, writer in writers.items():
                relative = os.path.relpath(os.path.abspath(path), self._given)
                if relative.startswith(".."):
                    raise ValueError(f"{path} is not in the output folder {self.path}")
                target = os.path.join(stage, relative)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with self._naming(path, stage):
                    writer(target)
            for fill in folders:
                with self._naming(self.shown, stage):
                    fill(stage)
            with self._naming(self.shown, stage):
                _sync_tree(stage)
            self.commit(stage)
        return list(writers)

    @contextlib.contextmanager
    def _naming(self, path: str, stage: str):
        """An ``OSError`` of a write into ``stage`` (a full disk, say) as one naming the output (``path``, or the
        file it names in the staging folder, where it will be), and saying that nothing was written."""
        try:
            yield
        except OSError as e:
            where = str(e.filename) if e.filename else ""
            named = os.path.join(self.shown, os.path.relpath(where, stage)) if where.startswith(stage) else path
            written = "nothing of this run was written" + (f" to {self.shown}" if named != self.shown else "")
            raise OSError(e.errno, f"{e.strerror or e}; {written}", named) from None

    def commit(self, stage: str) -> None:
        """Put ``stage`` in place of the folder: the kept files of the folder go along (linked, else moved), the
        manifest names the rest, then the two change places in one step and the old one is removed. The folder is
        checked again first (a file put there since :meth:`check` is never removed)."""
        files = sorted(os.path.relpath(os.path.join(d, f), stage) for d, _, fs in os.walk(stage) for f in fs
                       if f != MANIFEST)
        with open(os.path.join(stage, MANIFEST), "w", encoding="utf-8") as f:
            json.dump({"command": self.command, "files": files}, f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        sync_directory(stage)
        parent = os.path.dirname(self.path)
        if not os.path.isdir(self.path):
            os.rename(stage, self.path)
            sync_directory(parent)
            return
        self.check()  # again: a file put into the folder since is never removed with it
        for name in os.listdir(self.path):
            if name != MANIFEST and self._kept(name) and not os.path.exists(os.path.join(stage, name)):
                _carry(os.path.join(self.path, name), os.path.join(stage, name))
        if _exchange(stage, self.path):
            sync_directory(parent)
            shutil.rmtree(stage, ignore_errors=True)  # now the old folder
            return
        old = stage + ".old"
        os.rename(self.path, old)
        os.rename(stage, self.path)
        sync_directory(parent)
        shutil.rmtree(old, ignore_errors=True)


def _sync_tree(folder: str) -> None:
    """Flush every file of a folder, and the folders, to the disk (fsync) before the folder is put in place: a crash
    of the machine after the rename leaves the new outputs whole."""
    for root, _, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        sync_directory(root)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _carry(source: str, target: str) -> None:
    """A kept file into the new folder: a second name for it (an open SQLite file stays the same file), else moved."""
    try:
        os.link(source, target)
    except OSError:
        os.rename(source, target)


def _exchange(a: str, b: str) -> bool:
    """Swap the folders ``a`` and ``b`` atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``, through ctypes:
    Python's ``os`` has no such call); False where the system or file system cannot (the caller renames twice)."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), b)


# ------------------------------------------------------------------------------------------------ output files

def check_outputs(outputs: Mapping[str, str | None], inputs: Mapping[str, str | None], *,
                  appended: Iterable[str] = ()) -> None:
    """Refuse before anything is written.

    An output that is also an input or another output (also through a link), a folder, under a file, or not
    writable is refused; so is one where a file stands that the package did not write (:func:`is_own_file`).
    Missing folders are allowed (:func:`write_all` creates them).

    :param outputs: ``{option: path}`` of the outputs (``None``: not written).
    :param inputs: ``{option: path}`` of the inputs (``None``: not given).
    :param appended: options of ``outputs`` that a run keeps and appends to (an arena's journal in its output folder,
        kept by :class:`OutputFolder`), not replaced.
    """
    def same(a: str, b: str) -> bool:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return os.path.realpath(a) == os.path.realpath(b)
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if not path:
            continue
        for other, given in list(inputs.items()) + list(seen.items()):
            if given and same(path, given):
                raise InputError(path, None, option, f"is also {other} ({option} is also an input or another "
                                 "output; it would be overwritten)", "choose another output path")
        parent = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(parent):  # missing folders are created when the outputs are written
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            raise InputError(path, None, option, f"{parent} is a file, not a folder", "choose another path")
        if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
            raise InputError(path, None, option, "cannot be written (permission denied)", "choose another path")
        if os.path.isdir(path):
            raise InputError(path, None, option, "is a folder", "give a file path")
        if option not in appended:
            _refuse_foreign(path, option)
        seen[option] = path


def _refuse_foreign(path: str, option: str | None) -> None:
    if os.path.lexists(path) and not is_own_file(path):
        raise InputError(path, None, option, "a file that pyterrier-nuggets did not write stands there (no "
                         f"{MANIFEST} of its folder names it); the package never replaces it",
                         "move it away, or choose another path")


def write_all(writers: Mapping[str, Callable[[str], object]]) -> list[str]:
    """Write several output files all or none, then record them in their folders' manifests.

    A path where a file stands that the package did not write is refused before anything is written. Each
    ``writer(tmp_path)`` writes a temporary file next to its output; only when every writer has succeeded do they all
    replace their outputs.

    :param writers: ``{output path: writer}``.
    :returns: the output paths.
    """
    for path in writers:
        _refuse_foreign(path, None)
    staged: dict[str, str] = {}
    try:
        for path, writer in writers.items():
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            tmp = os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.{os.getpid()}.part")
            staged[path] = tmp
            writer(tmp)
        for path, tmp in staged.items():
            os.replace(tmp, path)
    finally:
        for tmp in staged.values():
            if os.path.exists(tmp):
                os.remove(tmp)
    by_folder: dict[str, list[str]] = {}
    for path in writers:
        absolute = os.path.abspath(path)
        by_folder.setdefault(os.path.dirname(absolute), []).append(os.path.basename(absolute))
    for folder, names in by_folder.items():
        _record(folder, names)
    return list(writers)


def _record(folder: str, names: Iterable[str]) -> None:
    """Add ``names`` to the manifest of ``folder`` (made when missing), one process at a time (a lock on the
    folder)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):  # a file system without locks: the last writer's record wins
            fcntl.flock(fd, fcntl.LOCK_EX)
        path = os.path.join(folder, MANIFEST)
        try:
            with open(path, encoding="utf-8") as f:
                manifest = json.load(f)
        except (OSError, ValueError):
            manifest = {}
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
            manifest = {"files": []}
        manifest["files"] = sorted(set(manifest["files"]) | set(names))
        with atomic_write(path) as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------------- databases

def read_only_connection(path: str | os.PathLike) -> sqlite3.Connection:
    """A read-only connection to the SQLite file ``path`` that leaves nothing beside it: through its write-ahead log
    when one is there (``mode=ro``: the database is open elsewhere, or in rollback mode with a hot journal), else from
    the file alone (``immutable=1``: ``mode=ro`` would make ``-wal`` and ``-shm`` files for a database in WAL mode, and
    could not remove them). The file is never opened outside SQLite: closing a descriptor of a database file would
    drop the locks of this process's connections to it.

    :param path: the database file.
    """
    absolute = os.path.abspath(path)
    how = "mode=ro" if os.path.exists(absolute + "-wal") or os.path.exists(absolute + "-journal") else "immutable=1"
    return sqlite3.connect(f"file:{quote(absolute)}?{how}", uri=True, check_same_thread=False)


class ForeignDatabase(InputError):
    """A file that a command would open as a database of the package's, but that is not one (:func:`check_database`):
    left unchanged.

    :param path: the file.
    :param reason: what it is instead (``"not an SQLite database"``, ``"another SQLite database (its tables: ...)"``).
    :param damaged: it may be a damaged database of the kind (not an SQLite file, or one that cannot be read).
    """

    def __init__(self, path: str, reason: str, damaged: bool = False):
        self.reason, self.damaged = reason, damaged
        super().__init__(path, None, None, reason)


def check_database(path: str | os.PathLike, table: str, columns: Iterable[str]) -> dict[str, set[str]] | None:
    """Before a database file is opened: its tables (name -> columns) when it is of its kind (it has the kind's own
    ``table`` with its ``columns``; other tables may be there, as a later version of the package adds some), None
    when it is new (no file, an empty one, or an SQLite database without any table yet); else a
    :class:`ForeignDatabase`, the file left unchanged (read with :func:`read_only_connection`).

    :param path: the file.
    :param table: the table that makes a database one of the kind (a response cache's ``responses``).
    :param columns: the columns that table has.
    """
    path = os.fspath(path)
    if not os.path.lexists(path):
        return None
    if not os.path.isfile(path):
        raise ForeignDatabase(path, "not a file")
    if os.path.getsize(path) == 0:
        return None
    try:
        con = read_only_connection(path)
        try:
            names = [name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                     if not name.startswith("sqlite_")]
            found = {name: {row[0] for row in con.execute("SELECT name FROM pragma_table_info(?)", (name,))}
                     for name in names}
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        if "not a database" in str(e):
            raise ForeignDatabase(path, "not an SQLite database", damaged=True) from None
        raise ForeignDatabase(path, f"an SQLite file that cannot be read: {e}", damaged=True) from None
    if not found:
        return None
    if table not in found or not set(columns) <= found[table]:
        raise ForeignDatabase(path, f"another SQLite database (its tables: {_shown(sorted(found))})")
    return found
