"""Perl CGI locking idioms for Python ports, interoperable with running Perl scripts.

Every name is loaded on first use (PEP 562), so ``import perlcompat`` costs almost
nothing: a CGI script pays only for the functions it calls.  The table below is
the whole public API; each entry names the module that implements it.
"""

from __future__ import annotations

LOCK_SH = 1
LOCK_EX = 2
LOCK_NB = 4
LOCK_UN = 8
SEEK_SET = 0
SEEK_CUR = 1
SEEK_END = 2

_EXPORTS = {
    # $! and die/warn
    "OS_ERROR": "_errno",
    "ERRNO": "_errno",
    "Die": "_die",
    "die": "_die",
    "warn": "_die",
    # file handles
    "PerlFile": "_handle",
    "open_": "_handle",
    "close": "_handle",
    "print_": "_handle",
    "printf": "_handle",
    "seek": "_handle",
    "tell": "_handle",
    "truncate": "_handle",
    "binmode": "_handle",
    "eof": "_handle",
    "flock": "_flock",
    # files and directories
    "mkdir": "_fs",
    "rmdir": "_fs",
    "rename": "_fs",
    "unlink": "_fs",
    "symlink": "_fs",
    "readlink": "_fs",
    "utime": "_fs",
    "chmod": "_fs",
    "chown": "_fs",
    "stat": "_fs",
    "filetest": "_fs",
    "sleep": "_fs",
    "BASETIME": "_fs",
    # strings, numbers, time and crypt
    "split": "_text",
    "num": "_text",
    "truth": "_text",
    "time": "_time",
    "localtime": "_time",
    "gmtime": "_time",
    "scalar_localtime": "_time",
    "scalar_gmtime": "_time",
    "crypt": "_crypt",
    # alarm and %SIG
    "alarm": "_alarm",
    "SIG": "_alarm",
    "local_sig": "_alarm",
    # lock()/unlock() and Lock
    "lock": "_api",
    "unlock": "_api",
    "Lock": "_api",
    "LockError": "_api",
    "LockTimeout": "_api",
    "DuplicateLockError": "_api",
    "NotLockedError": "_api",
    "HasNotLockError": "_api",
    "ExpiredLockError": "_api",
    "SharedStorageWarning": "_fsinfo",
    # semaphores and atomic replace
    "Semaphore": "_semaphore",
    "sem_acquire": "_semaphore",
    "sem_release": "_semaphore",
    "replace_file": "_replace",
    # TOP?LOCK's "check again before renaming the work file into place"
    "still_holding": "_toplock",
    "rename_if_holding": "_toplock",
    "readline": "_handle",
    "PerlWarning": "_handle",
    "PerlList": "_handle",
    "lstat": "_fs",
}

__all__ = sorted(
    [*_EXPORTS, "LOCK_SH", "LOCK_EX", "LOCK_NB", "LOCK_UN", "SEEK_SET", "SEEK_CUR", "SEEK_END"]
)
__version__ = "0.1.0"

from time import time as _time  # noqa: E402  (a builtin module: free)

#: Perl's ``$^T``: when this process started using perlcompat, in whole seconds.
_START_TIME = int(_time())

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._alarm import (
        SIG as SIG,
        alarm as alarm,
        local_sig as local_sig,
    )
    from ._api import (
        DuplicateLockError as DuplicateLockError,
        ExpiredLockError as ExpiredLockError,
        HasNotLockError as HasNotLockError,
        Lock as Lock,
        LockError as LockError,
        LockTimeout as LockTimeout,
        NotLockedError as NotLockedError,
        lock as lock,
        unlock as unlock,
    )
    from ._crypt import (
        crypt as crypt,
    )
    from ._die import (
        Die as Die,
        die as die,
        warn as warn,
    )
    from ._errno import (
        ERRNO as ERRNO,
        OS_ERROR as OS_ERROR,
    )
    from ._flock import (
        flock as flock,
    )
    from ._fs import (
        BASETIME as BASETIME,
        chmod as chmod,
        chown as chown,
        filetest as filetest,
        lstat as lstat,
        mkdir as mkdir,
        readlink as readlink,
        rename as rename,
        rmdir as rmdir,
        sleep as sleep,
        stat as stat,
        symlink as symlink,
        unlink as unlink,
        utime as utime,
    )
    from ._fsinfo import (
        SharedStorageWarning as SharedStorageWarning,
    )
    from ._handle import (
        PerlFile as PerlFile,
        PerlList as PerlList,
        PerlWarning as PerlWarning,
        binmode as binmode,
        close as close,
        eof as eof,
        open_ as open_,
        print_ as print_,
        printf as printf,
        readline as readline,
        seek as seek,
        tell as tell,
        truncate as truncate,
    )
    from ._replace import (
        replace_file as replace_file,
    )
    from ._semaphore import (
        Semaphore as Semaphore,
        sem_acquire as sem_acquire,
        sem_release as sem_release,
    )
    from ._text import (
        num as num,
        split as split,
        truth as truth,
    )
    from ._time import (
        gmtime as gmtime,
        localtime as localtime,
        scalar_gmtime as scalar_gmtime,
        scalar_localtime as scalar_localtime,
        time as time,
    )
    from ._toplock import (
        rename_if_holding as rename_if_holding,
        still_holding as still_holding,
    )


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'perlcompat' has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{module}", None, None, [name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
