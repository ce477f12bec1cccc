"""Where uploads are written while a request uses them: a directory this process owns, and
that the next start-up removes if this process dies without removing it itself.

`POST /collections` writes its replay files to disk (the collectors read recorded answers from
paths); a server killed mid-upload (SIGKILL, out of memory, power) once left its temporary
directories behind for good, tens of MB each. Now every serving process has one directory,
`<tmp>/gpuprices-uploads-<uid>/<pid>-<random>/`, holding an exclusive `flock` on its `.owner`
file for as long as it runs; the kernel releases the lock when the process ends, however it
ends. Each start-up (the app's lifespan) removes every directory there whose lock it can take:
its owner is gone. A clean stop removes its own. What the form parser spools to disk is in
unlinked temporary files, which vanish with the process.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ScratchSpace", "uploads_root"]

logger = logging.getLogger(__name__)

OWNER_FILE = ".owner"
UNLOCKED_GRACE_S = 60.0
"""A directory with no owner file yet is another process's, starting, for this long."""


def uploads_root() -> Path:
    """`<tmp>/gpuprices-uploads-<uid>`: the temporary directory of this user's processes."""
    return Path(tempfile.gettempdir()) / f"gpuprices-uploads-{os.getuid()}"


def _owner_gone(directory: Path) -> bool:
    """Whether no live process holds `directory`'s owner lock (taking it for a moment)."""
    try:
        fd = os.open(directory / OWNER_FILE, os.O_RDWR)
    except FileNotFoundError:  # killed between making the directory and locking it, or a
        # process starting now, about to lock it: gone only when it has been a while
        try:
            return time.time() - directory.stat().st_mtime > UNLOCKED_GRACE_S
        except FileNotFoundError:
            return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def _sweep(root: Path) -> int:
    """Remove what dead processes left under `root`: how many."""
    removed = 0
    for directory in sorted(root.iterdir()):
        if directory.is_dir() and not directory.is_symlink() and _owner_gone(directory):
            shutil.rmtree(directory, ignore_errors=True)
            removed += 1
    return removed


@dataclass(slots=True)
class ScratchSpace:
    """This process's upload directory, locked while it is open."""

    path: Path
    _lock_fd: int

    @classmethod
    def open(cls, root: Path | None = None) -> ScratchSpace:
        """Sweep what dead processes left under `root`, then make and lock this one's."""
        root = root or uploads_root()
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        removed = _sweep(root)
        if removed:
            logger.info("removed %d upload directories left by stopped processes", removed)
        path = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
        fd = os.open(path / OWNER_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return cls(path, fd)

    def close(self) -> None:
        """Remove the directory and what is in it (a clean stop)."""
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._lock_fd)
