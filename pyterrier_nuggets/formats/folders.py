"""An output folder written all or nothing (:class:`OutputFolder`): the rule of every command that writes a folder.

- A folder that holds the outputs of an earlier run is refused unless ``overwrite`` (``--overwrite``); then the
  earlier outputs are replaced as a whole: afterwards the folder holds this run's outputs only. Files a run keeps
  beside its outputs (``keep``: a response cache and its journal files, an arena's battle journal) stay, and so the
  folder of an interrupted run that left only those is no earlier run's outputs.
- A file in the folder that no run of the package wrote there (no manifest names it) is never replaced: the folder
  is refused, even with ``overwrite``.
- The outputs are written into a staging folder beside the output folder (``.NAME.partial-PID-XXXX``), which then
  takes its place in one step: a new folder by one rename, an existing one by an atomic exchange of the two
  (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames). A run killed at any moment leaves the folder old
  or new, never mixed, and a staging folder that the next run on the same folder removes (its process is gone).
- A write that fails (a full disk, say) leaves no staging folder and no new empty folder, and names the output it
  was writing.

The manifest ``.pyterrier-nuggets-outputs.json`` (hidden) names the command and the files it wrote.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable

from ir_measures_ext.errors import InvalidInput

MANIFEST = ".pyterrier-nuggets-outputs.json"
_PARTIAL = ".partial-"


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
        self.path = os.path.abspath(path)
        self.shown = path
        self.command, self.overwrite, self.option = command, overwrite, option
        self.keep = {os.path.basename(k) for k in keep}

    def _kept(self, name: str) -> bool:
        return name == MANIFEST or name in self.keep or any(name == k + s for k in self.keep  # and their sidecars:
                                                            for s in ("-wal", "-shm", "-journal", "-lock"))  # -lock: llm/cache.py

    def earlier_outputs(self) -> list[str]:
        """The entries of the folder that an earlier run left (all but the kept files)."""
        if not os.path.isdir(self.path):
            return []
        return sorted(n for n in os.listdir(self.path) if not self._kept(n))

    def check(self) -> None:
        """Before any work: the folder is new, empty, or holds only kept files; or it holds an earlier run's outputs
        and ``overwrite`` was given, and nothing else. Staging folders left by killed runs are removed."""
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise InvalidInput(f"{self.option} {self.shown} is a file, not a folder: give a folder")
        self.remove_stale_stages()
        earlier = self.earlier_outputs()
        if not earlier:
            return
        shown = ", ".join(earlier[:6]) + (", ..." if len(earlier) > 6 else "")
        if not self.overwrite:
            raise InvalidInput(f"{self.option} {self.shown} holds the outputs of an earlier run ({shown}): give "
                               "--overwrite to replace them as a whole, or another folder")
        unknown = sorted(set(earlier) - set(self.manifest_files()))
        if unknown:
            raise InvalidInput(f"{self.option} {self.shown} holds files that no pyterrier-nuggets run wrote there "
                               f"({', '.join(unknown[:6])}{', ...' if len(unknown) > 6 else ''}), which --overwrite "
                               "would delete with the folder's earlier outputs: move them away, or give another folder")

    def manifest_files(self) -> list[str]:
        """The files the manifest of the folder's last run names (none without a manifest)."""
        try:
            with open(os.path.join(self.path, MANIFEST), encoding="utf-8") as f:
                files = json.load(f).get("files", [])
        except (OSError, ValueError, AttributeError):
            return []
        return [f for f in files if isinstance(f, str)]

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
            yield stage
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            for folder in made:
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
            raise

    def write_all(self, writers: dict[str, Callable[[str], object]], folders: Iterable[Callable[[str], object]] = ()
                  ) -> list[str]:
        """Write every output and put the folder in place, all or nothing. ``writers``: output path (in the folder)
        -> ``writer(path to write)``; ``folders``: ``fill(stage)`` functions writing files of their own choosing
        into the staging folder. Returns the output paths as given (the folder's files).

        A write that fails raises an ``OSError`` naming the output path (not the staging file) and leaves the
        folder as it was."""
        with self.staged() as stage:
            for path, writer in writers.items():
                relative = os.path.relpath(os.path.abspath(path), self.path)
                if relative.startswith(".."):
                    raise ValueError(f"{path} is not in the output folder {self.path}")
                target = os.path.join(stage, relative)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with self._naming(path, stage):
                    writer(target)
            for fill in folders:
                with self._naming(self.shown, stage):
                    fill(stage)
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
        manifest names the rest, then the two change places in one step and the old one is removed."""
        files = sorted(os.path.relpath(os.path.join(d, f), stage) for d, _, fs in os.walk(stage) for f in fs)
        with open(os.path.join(stage, MANIFEST), "w", encoding="utf-8") as f:
            json.dump({"command": self.command, "files": files}, f, indent=1)
            f.write("\n")
        if not os.path.isdir(self.path):
            os.rename(stage, self.path)
            return
        for name in os.listdir(self.path):
            if name != MANIFEST and self._kept(name) and not os.path.exists(os.path.join(stage, name)):
                _carry(os.path.join(self.path, name), os.path.join(stage, name))
        if _exchange(stage, self.path):
            shutil.rmtree(stage, ignore_errors=True)  # now the old folder
            return
        old = stage + ".old"
        os.rename(self.path, old)
        os.rename(stage, self.path)
        shutil.rmtree(old, ignore_errors=True)


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
    """Swap the folders ``a`` and ``b`` atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``); False where the
    system or file system cannot (the caller renames twice)."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), b)
