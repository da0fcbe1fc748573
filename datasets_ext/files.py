"""Where each dataset file comes from: public files with URL and md5, licensed files placed by the user;
and :func:`atomic_write`, the one way this distribution writes a file (pyterrier_nuggets uses it too).

Every file has a fixed place under ``$IR_DATASETS_HOME/<dataset directory>/``. A public file found there is
used as is (no network); otherwise ir_datasets' ``Download`` fetches it from its URL and verifies its md5.
A licensed file must be placed there by the user; the error says exactly where. The home directory is read
when a file is first needed (not at import), so ``IR_DATASETS_HOME`` can be set late.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import warnings
from pathlib import Path

import ir_datasets
from ir_datasets.util import Download, RequestsDownload

from nuggets_core.errors import InvalidInput, SetupError


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_current_umask()  # what open() would give a new file (read once, at import)
DIRECTORY_MODE = 0o777 & ~_current_umask()  # what os.mkdir() would give a new folder


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w"):
    """Open a temporary file next to ``path``; it replaces ``path`` only if the block completes.

    So the file is complete or absent (never half-written): its content is flushed to the disk (fsync) before the
    rename, and the rename to the disk after it, so that even a crash of the machine leaves the old file or the
    new one, never an empty one. A process killed inside the block leaves its temporary file
    (``.NAME.*.tmp``, never ``NAME`` itself). The file gets the mode a plain ``open()`` would give it (0666 less
    the umask), not the 0600 of a temporary file.

    :param path: the file to write.
    :param mode: the ``open()`` mode (``"w"`` text, ``"wb"`` bytes).

    Examples::

        with atomic_write("out/run.txt") as f:
            f.write(text)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temporary_prefix(path.name), suffix=".tmp")
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        sync_directory(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _temporary_prefix(name: str) -> str:
    """``.NAME.``, cut where needed so that the temporary file's name (the prefix, 8 random characters and
    ``.tmp``) stays within the 255 bytes of a file name: every file name that fits can be written."""
    raw = os.fsencode("." + name)[:255 - 13]
    return raw.decode("utf-8", "ignore") + "."  # a character cut in two is left out


def sync_directory(directory: str | os.PathLike) -> None:
    """Flush a directory's entries to the disk (fsync), so that a rename in it survives a crash of the machine;
    nothing where directories cannot be opened (Windows).

    :param directory: the directory.
    """
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory: their renames are as durable as they get
        pass
    finally:
        os.close(fd)


def file_md5(path: Path) -> str:
    """The MD5 of a file's bytes, read 1 MiB at a time (the checksum ir_datasets and the track publish)."""
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class DatasetFile:
    """One file of a dataset, at ``$IR_DATASETS_HOME/{directory}/{name}``: a download handle (``path()``,
    ``stream()``) as ir_datasets' formats expect.

    ``url`` + ``md5``: public file, downloaded and verified when absent. A copy placed by hand is accepted;
    if its md5 differs from the pinned one a warning says so (the upstream file may have been updated).
    ``md5=None`` means no pinned checksum is known. ``instructions``: licensed file, never downloaded.
    """

    def __init__(self, directory: str, name: str, url: str | None = None, md5: str | None = None,
                 instructions: str | None = None):
        if (url is None) == (instructions is None):
            raise InvalidInput("give exactly one of url and instructions")
        self.directory = directory
        self.name = name
        self.url = url
        self.md5 = md5
        self.instructions = instructions
        self._checked: set[Path] = set()

    def local_path(self) -> Path:
        return Path(ir_datasets.util.home_path()) / self.directory / self.name

    def path(self, force: bool = True) -> str:
        local = self.local_path()
        if not force:
            return str(local)
        if local.exists():
            self._check_md5(local)
            return str(local)
        if self.instructions is not None:
            raise FileNotFoundError(f"{local} not found. {self.instructions.format(path=local)}")
        download = Download([RequestsDownload(self.url)], cache_path=str(local), expected_md5=self.md5)
        try:
            return download.path()
        except Exception as e:
            raise SetupError(f"could not download {self.url} ({type(e).__name__}: {e}). If you have a copy "
                               f"of this file, put it at {local}"
                               + (f" (md5 {self.md5})." if self.md5 else ".")) from e

    def _check_md5(self, local: Path) -> None:
        if self.md5 is None or local in self._checked or local.is_dir():
            return
        self._checked.add(local)
        actual = file_md5(local)
        if actual != self.md5:
            warnings.warn(f"{local} has md5 {actual}, not the expected {self.md5} of {self.url}; using it anyway "
                          f"(delete it to download the expected version)", stacklevel=3)

    @contextlib.contextmanager
    def stream(self):
        with open(self.path(), "rb") as f:
            yield f

    def __repr__(self) -> str:
        return f"DatasetFile({self.directory!r}, {self.name!r}, url={self.url!r}, md5={self.md5!r})"
