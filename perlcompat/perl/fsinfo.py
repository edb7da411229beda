"""Which file system a lock lives on: shared storage, and whether flock(2) excludes other hosts.

The file system type of a path is read once per device (``st_dev``) from
``/proc/self/mountinfo`` (the line whose ``major:minor`` is the device; its
type is ``fuse.sshfs``, ``nfs4``, ``cifs``, ...) and cached, so asking costs one
dict lookup per lock cycle.  Elsewhere (no ``/proc``: Windows, macOS, BSD) the
type is unknown and nothing is assumed.

*Shared* storage is a network file system or FUSE (:data:`NETWORK` and any
``fuse.*`` type): other hosts, or other mounts of one export, may use the same
files.  There:

* ``flock(2)`` is local to the mount on FUSE (sshfs) and SMB/CIFS, and on NFS
  unless the mount forwards it to the server (Linux does, as a whole-file POSIX
  lock, when the mount's options say ``local_lock=none``).  ``flock`` and
  ``Lock(method="flock")`` warn once per file system with
  :class:`SharedStorageWarning` where it does not exclude other hosts.
* ``locks.remover`` removes stale locks with a remover lock and a rename handshake on
  the storage itself (``locks.netfs``) instead of a flock on the directory.
"""

from __future__ import annotations

import os
import sys

#: network and cluster file system types (any ``fuse.*`` type counts too, but not ``fuseblk``).
NETWORK = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ncpfs",
        "afs",
        "9p",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "ocfs2",
        "gfs2",
        "beegfs",
        "davfs",
        "fuse",
        "virtiofs",
        "vboxsf",
        "vmhgfs",
    }
)


class SharedStorageWarning(UserWarning):
    """A lock is on shared storage where its method does not exclude other hosts."""


#: st_dev -> (fs type or None, options of the mount and super block)
_types: dict[int, tuple[str | None, str]] = {}
#: devices already warned about
_warned: set[int] = set()


def _lookup(dev: int) -> tuple[str | None, str]:
    if sys.platform != "linux":
        return None, ""
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as stream:
            for line in stream:
                fields = line.split()
                if len(fields) < 7 or fields[2] != wanted or "-" not in fields:
                    continue
                rest = fields[fields.index("-") + 1 :]
                options = fields[5] + "," + (rest[2] if len(rest) > 2 else "")
                return (rest[0] if rest else None), options
    except OSError:
        pass
    return None, ""


def fs_info(dev: int) -> tuple[str | None, str]:
    """Return (file system type, mount options) of device *dev*; (None, "") if unknown."""
    found = _types.get(dev)
    if found is None:
        found = _types[dev] = _lookup(dev)
    return found


def is_network(dev: int) -> bool:
    """True if device *dev* is a network file system or FUSE (other hosts may share it)."""
    kind = fs_info(dev)[0]
    if kind is None:
        return False
    return kind in NETWORK or (kind.startswith("fuse.") and kind != "fuse.lxcfs")


def flock_is_local(dev: int) -> bool:
    """True if flock(2) on device *dev* excludes only processes of this mount (this host)."""
    if not is_network(dev):
        return False
    kind, options = fs_info(dev)
    if kind in ("nfs", "nfs4"):
        return "local_lock=none" not in options.split(",")
    return True


def check_flock(fd: int, stacklevel: int = 3) -> None:
    """Warn once per file system if a flock on *fd* does not exclude other hosts."""
    try:
        dev = os.fstat(fd).st_dev
    except OSError:
        return
    if dev in _warned or not flock_is_local(dev):
        return
    _warned.add(dev)
    import warnings

    kind = fs_info(dev)[0]
    warnings.warn(
        f"flock(2) on this {kind} file system excludes only processes of this host: "
        "other hosts (or other mounts) sharing it can hold the same lock at once. "
        'Use lock(..., method="mkdir") (or "excl") on shared storage, with the '
        "mount options in docs/locks.md.",
        SharedStorageWarning,
        stacklevel=stacklevel,
    )


#: (device, method) pairs already warned about
_warned_methods: set[tuple[int, str]] = set()


def check_method(path: str, method: str, stacklevel: int = 3) -> None:
    """Warn once per file system if lock *method* at *path* is not safe across hosts there.

    ``rename`` (its first-use marker can race another host's release) and
    ``toplock`` (appends from two clients overwrite each other): docs/locks.md.
    """
    try:
        dev = os.stat(os.path.dirname(path) or ".").st_dev
    except OSError:
        return
    if (dev, method) in _warned_methods or not is_network(dev):
        return
    _warned_methods.add((dev, method))
    import warnings

    kind = fs_info(dev)[0]
    warnings.warn(
        f"lock method {method!r} is not safe on this {kind} file system when other hosts "
        'share it. Use lock(..., method="mkdir") (or "excl") there, with the mount options '
        "in docs/locks.md.",
        SharedStorageWarning,
        stacklevel=stacklevel,
    )
