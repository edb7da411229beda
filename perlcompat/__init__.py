"""Perl CGI locking idioms for Python ports, interoperable with running Perl scripts.

Every name is loaded on first use (PEP 562), so ``import perlcompat`` costs almost
nothing: a CGI script pays only for the functions it calls.  The table below is
the whole public API; each entry names the module that implements it.
``from perlcompat import *`` takes all of it but the names of standard modules
(``time``, ``stat``, ``crypt``, ``readline``), which a port imports by name.
"""

from __future__ import annotations

_EXPORTS = {
    # Fcntl's :flock and :seek constants
    "LOCK_SH": "perl.consts",
    "LOCK_EX": "perl.consts",
    "LOCK_NB": "perl.consts",
    "LOCK_UN": "perl.consts",
    "SEEK_SET": "perl.consts",
    "SEEK_CUR": "perl.consts",
    "SEEK_END": "perl.consts",
    # $! and die/warn
    "OS_ERROR": "perl.errno",
    "ERRNO": "perl.errno",
    "Die": "perl.die",
    "die": "perl.die",
    "warn": "perl.die",
    # file handles
    "PerlFile": "perl.handle",
    "open_": "perl.handle",
    "close": "perl.handle",
    "print_": "perl.handle",
    "printf": "perl.handle",
    "seek": "perl.handle",
    "tell": "perl.handle",
    "truncate": "perl.handle",
    "binmode": "perl.handle",
    "eof": "perl.handle",
    "flock": "perl.flock",
    # File::FcntlLock: fcntl(2) record locks and their constants
    "FcntlLock": "perl.fcntllock",
    "F_GETLK": "perl.fcntllock",
    "F_SETLK": "perl.fcntllock",
    "F_SETLKW": "perl.fcntllock",
    "F_RDLCK": "perl.fcntllock",
    "F_WRLCK": "perl.fcntllock",
    "F_UNLCK": "perl.fcntllock",
    "fcntl": "perl.fcntllock",
    "pack_flock": "perl.fcntllock",
    "unpack_flock": "perl.fcntllock",
    # files and directories
    "mkdir": "perl.fs",
    "rmdir": "perl.fs",
    "rename": "perl.fs",
    "unlink": "perl.fs",
    "symlink": "perl.fs",
    "readlink": "perl.fs",
    "utime": "perl.fs",
    "chmod": "perl.fs",
    "chown": "perl.fs",
    "stat": "perl.fs",
    "filetest": "perl.fs",
    "sleep": "perl.fs",
    "BASETIME": "perl.fs",
    # strings, numbers, time and crypt
    "split": "perl.text",
    "num": "perl.text",
    "truth": "perl.text",
    "time": "perl.time",
    "localtime": "perl.time",
    "gmtime": "perl.time",
    "scalar_localtime": "perl.time",
    "scalar_gmtime": "perl.time",
    "crypt": "perl.crypt",
    # alarm and %SIG
    "alarm": "perl.alarm",
    "SIG": "perl.alarm",
    "local_sig": "perl.alarm",
    # lock()/unlock() and Lock
    "lock": "locks.functions",
    "unlock": "locks.functions",
    "Lock": "locks.api",
    "fork": "locks.fork",
    "LockError": "locks.errors",
    "LockTimeout": "locks.errors",
    "NotALockError": "locks.errors",
    "DuplicateLockError": "locks.errors",
    "NotLockedError": "locks.errors",
    "HasNotLockError": "locks.errors",
    "ExpiredLockError": "locks.errors",
    "BrokenLockError": "locks.errors",
    "LockState": "locks.state",
    "SharedStorageWarning": "perl.fsinfo",
    # semaphores and atomic replace
    "Semaphore": "locks.semaphore",
    "LockedFile": "locks.lockedfile",
    "sem_acquire": "locks.semaphore",
    "sem_release": "locks.semaphore",
    "replace_file": "locks.replace",
    "read_file": "locks.replace",
    # TOP?LOCK's "check again before renaming the work file into place"
    "still_holding": "locks.methods.toplock",
    "rename_if_holding": "locks.methods.toplock",
    "readline": "perl.handle",
    "PerlWarning": "perl.handle",
    "LostLockWarning": "perl.handle",
    "PerlList": "perl.lists",
    # sysopen and Fcntl's O_* flags
    "sysopen": "perl.sysopen",
    "O_RDONLY": "perl.sysopen",
    "O_WRONLY": "perl.sysopen",
    "O_RDWR": "perl.sysopen",
    "O_CREAT": "perl.sysopen",
    "O_EXCL": "perl.sysopen",
    "O_TRUNC": "perl.sysopen",
    "O_APPEND": "perl.sysopen",
    "O_NONBLOCK": "perl.sysopen",
    "O_NOFOLLOW": "perl.sysopen",
    "O_NOCTTY": "perl.sysopen",
    "O_SYNC": "perl.sysopen",
    "O_BINARY": "perl.sysopen",
    "O_TEXT": "perl.sysopen",
    # undef, arrays and hashes read as Perl reads them
    "undef": "perl.undef",
    "defined": "perl.undef",
    "elem": "perl.lists",
    "hval": "perl.lists",
    "PerlHash": "perl.lists",
    "pop": "perl.lists",
    "shift": "perl.lists",
    "push": "perl.lists",
    "unshift": "perl.lists",
    "chomp": "perl.text",
    "chop": "perl.text",
    "strftime": "perl.time",
    # require "./lib.pl"
    "require": "perl.require",
    "lstat": "perl.fs",
    # the standard handles and read(FH, $buf, LEN)
    "STDIN": "perl.stdio",
    "STDOUT": "perl.stdio",
    "STDERR": "perl.stdio",
    "read": "perl.stdio",
    "Scalar": "perl.stdio",
    # child processes: piped open_ is in perl.handle; $?, qx, system
    "CHILD_ERROR": "perl.process",
    "qx": "perl.process",
    "qx_lines": "perl.process",
    "system": "perl.process",
    # Perl's ++, and byte answers on text (no ``use utf8``)
    "inc": "perl.text",
    "length": "perl.bytestr",
    "substr": "perl.bytestr",
    "tr": "perl.bytestr",
    "as_bytes": "perl.bytestr",
    "from_bytes": "perl.bytestr",
}

#: names ``from perlcompat import *`` leaves out: they are standard modules a port may
#: also import (``import time`` must stay the module); import them by name instead
#: (``from perlcompat import time as perl_time``).
_NOT_STAR = frozenset({"crypt", "fcntl", "readline", "stat", "time"})

__all__ = sorted(name for name in _EXPORTS if name not in _NOT_STAR)
__version__ = "0.1.0"

import atexit as _atexit  # noqa: E402  (builtin modules: free)
import sys as _sys  # noqa: E402
from time import time as _time  # noqa: E402


def _at_exit() -> None:
    """At exit, after the script's own ``atexit`` handlers: flush and close handles, then unlock.

    Registered by ``import perlcompat``, before the script registers its own (a
    port of Perl's ``END { print LOG ...; unlock() }``) and before the handle and
    lock modules load on first use, so it runs after them, as Perl runs END
    blocks before global destruction.  Every handle's data is written before a
    lock is released (``perl.handle.close_all``, then ``locks.cleanup.release_all``);
    a stopping signal that arrives meanwhile is held back until both are done.
    """
    handle = _sys.modules.get("perlcompat.perl.handle")
    cleanup = _sys.modules.get("perlcompat.locks.cleanup")
    if cleanup is not None:  # a stopping signal waits: its release must not beat the data
        cleanup.enter()
    try:
        if handle is not None:
            handle.close_all()
    finally:  # a signal handler's exception during the flush still lets the locks go
        if cleanup is not None:
            try:
                cleanup.release_all()
            finally:
                cleanup.leave()  # a signal held back meanwhile takes effect now


_atexit.register(_at_exit)

#: Perl's ``$^T``: when this process started using perlcompat, in whole seconds.
_START_TIME = int(_time())

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .locks.api import Lock as Lock
    from .locks.errors import (
        BrokenLockError as BrokenLockError,
        DuplicateLockError as DuplicateLockError,
        ExpiredLockError as ExpiredLockError,
        HasNotLockError as HasNotLockError,
        LockError as LockError,
        LockTimeout as LockTimeout,
        NotALockError as NotALockError,
        NotLockedError as NotLockedError,
    )
    from .locks.fork import fork as fork
    from .locks.functions import lock as lock, unlock as unlock
    from .locks.lockedfile import LockedFile as LockedFile
    from .locks.methods.toplock import (
        rename_if_holding as rename_if_holding,
        still_holding as still_holding,
    )
    from .locks.replace import (
        read_file as read_file,
        replace_file as replace_file,
    )
    from .locks.semaphore import (
        Semaphore as Semaphore,
        sem_acquire as sem_acquire,
        sem_release as sem_release,
    )
    from .locks.state import LockState as LockState
    from .perl.alarm import (
        SIG as SIG,
        alarm as alarm,
        local_sig as local_sig,
    )
    from .perl.bytestr import (
        as_bytes as as_bytes,
        from_bytes as from_bytes,
        length as length,
        substr as substr,
        tr as tr,
    )
    from .perl.consts import (
        LOCK_EX as LOCK_EX,
        LOCK_NB as LOCK_NB,
        LOCK_SH as LOCK_SH,
        LOCK_UN as LOCK_UN,
        SEEK_CUR as SEEK_CUR,
        SEEK_END as SEEK_END,
        SEEK_SET as SEEK_SET,
    )
    from .perl.crypt import (
        crypt as crypt,
    )
    from .perl.die import (
        Die as Die,
        die as die,
        warn as warn,
    )
    from .perl.errno import (
        ERRNO as ERRNO,
        OS_ERROR as OS_ERROR,
    )
    from .perl.fcntllock import (
        F_GETLK as F_GETLK,
        F_RDLCK as F_RDLCK,
        F_SETLK as F_SETLK,
        F_SETLKW as F_SETLKW,
        F_UNLCK as F_UNLCK,
        F_WRLCK as F_WRLCK,
        FcntlLock as FcntlLock,
        fcntl as fcntl,
        pack_flock as pack_flock,
        unpack_flock as unpack_flock,
    )
    from .perl.flock import (
        flock as flock,
    )
    from .perl.fs import (
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
    from .perl.fsinfo import (
        SharedStorageWarning as SharedStorageWarning,
    )
    from .perl.handle import (
        LostLockWarning as LostLockWarning,
        PerlFile as PerlFile,
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
    from .perl.lists import (
        PerlHash as PerlHash,
        PerlList as PerlList,
        elem as elem,
        hval as hval,
        pop as pop,
        push as push,
        shift as shift,
        unshift as unshift,
    )
    from .perl.process import (
        CHILD_ERROR as CHILD_ERROR,
        qx as qx,
        qx_lines as qx_lines,
        system as system,
    )
    from .perl.require import (
        require as require,
    )
    from .perl.stdio import (
        STDERR as STDERR,
        STDIN as STDIN,
        STDOUT as STDOUT,
        Scalar as Scalar,
        read as read,
    )
    from .perl.sysopen import (
        O_APPEND as O_APPEND,
        O_BINARY as O_BINARY,
        O_CREAT as O_CREAT,
        O_EXCL as O_EXCL,
        O_NOCTTY as O_NOCTTY,
        O_NOFOLLOW as O_NOFOLLOW,
        O_NONBLOCK as O_NONBLOCK,
        O_RDONLY as O_RDONLY,
        O_RDWR as O_RDWR,
        O_SYNC as O_SYNC,
        O_TEXT as O_TEXT,
        O_TRUNC as O_TRUNC,
        O_WRONLY as O_WRONLY,
        sysopen as sysopen,
    )
    from .perl.text import (
        chomp as chomp,
        chop as chop,
        inc as inc,
        num as num,
        split as split,
        truth as truth,
    )
    from .perl.time import (
        gmtime as gmtime,
        localtime as localtime,
        scalar_gmtime as scalar_gmtime,
        scalar_localtime as scalar_localtime,
        strftime as strftime,
        time as time,
    )
    from .perl.undef import (
        defined as defined,
        undef as undef,
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
