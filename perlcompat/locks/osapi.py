"""The platform seam of ``locks/``: the OS operations the lock code needs, one module per platform.

``osposix`` (Linux, the BSDs, macOS) and ``oswindows`` implement the same functions;
this module picks one at import and is the one place in ``locks/`` that asks which
platform this is (filelock's ``_unix``/``_windows``; ``perl.flock`` and
``perl.flock_windows``).  The lock code calls them through this module
(``from . import osapi as _osapi`` ... ``_osapi.open_file(...)``), so a test patches a
function here to see how the lock code answers another platform's behaviour.  The
POSIX import path never imports ``oswindows`` nor ctypes.

Processes (``locks.owner``, ``locks.fork``):

* ``nodename()``: this host's name; ``clock_ticks()``: ticks per second of /proc start times;
* ``process_exists(pid)``: True/False, or None where a pid cannot be asked about (Windows:
  ``os.kill`` would terminate it); ``pids_known()``: False where holders are judged by
  age only;
* ``boot_and_pidns()``: the Linux boot id and pid namespace ("" elsewhere);
* ``fork_process()``: ``os.fork()``; OSError ENOSYS on Windows.

Files (``locks.files``, ``locks.replace``, the methods):

* ``open_file(path, flags, mode)``: ``os.open``; on Windows sharing delete and rename
  with others (``CreateFileW``), so a reader never blocks the holder's release;
* ``retry_busy(func, *args)``: a delete or rename, retried on Windows for
  ``BUSY_PATIENCE`` s while another process holds the file; ``busy_create(path, exc)``:
  True if a refused create met a deleted file others still hold open (Windows);
* ``while_readers(patience, func, *args)``: a rename over a file, or a read of it, retried
  on Windows while readers hold it; ``renames_open_files()``: False where an open file
  cannot be renamed (Windows); ``renames_by_handle()``: True where two renamers of one
  file can both succeed (Windows);
* ``looks_can_be_refused()``: True where a stat or read of a file another process holds
  open can fail or come back without a file id for a moment (Windows);
* ``has_symlinks()``: False where making one needs a privilege (Windows);
* ``changed_at(path, st)``: when the file last changed status (``st_ctime`` on POSIX; the
  NTFS change time on Windows, where ``st_ctime`` is the creation time);
  ``change_time(path)``: that NTFS time (None on POSIX);
* ``pread(fd, limit, offset)``, ``pwrite(fd, data, offset)``: ``os.pread``/``os.pwrite``
  themselves on POSIX (no Python frame on a lock's path), seek and read/write on Windows;
* ``HOLD_OPEN``: True where a TOP?LOCK holder keeps its lock file open until removed (Windows);
* ``append_lock(fd)``/``append_unlock(fd)``: around a TOP?LOCK append and its read, a
  byte lock on Windows (wine's appends are not atomic), nothing on POSIX;
* ``remove_directory(path)``: ``os.rmdir`` on POSIX; on Windows retried as ``retry_busy``;
  ``remove_file(path)``: ``os.unlink`` on POSIX; on Windows a rename to a unique name,
  then its delete (wine unlinks a delayed delete's successor of the same inode number);
* ``utime_open(fd, path)``: times to now through *fd* (by *path* on Windows);
  ``touch(path, st)``: ``locks.files.touch``;
* ``generation(path)``: the Linux inode generation (None elsewhere);
  ``proc_locks_device(st)``: how ``/proc/locks`` names the file (None on Windows).

Directories and temp files (``locks.guards``, ``locks.replace``):

* ``open_directory(path)``: a descriptor to flock, None where a directory cannot be
  opened (Windows) or read (mode 0733): the remover guard is then a ``.breaker`` file;
* ``fsync_directory(path)``: after a rename (nothing on Windows);
* ``hold_temp_file(fd)``: ``replace_file``'s live-writer flock on its temp file;
  ``copy_owner_and_mode(fd, old, target)``: owner, mode and POSIX ACL (nothing on Windows).
"""

from __future__ import annotations

import sys

if sys.platform == "win32":
    from . import oswindows as _platform
else:
    from . import osposix as _platform

BUSY_PATIENCE = _platform.BUSY_PATIENCE
append_lock = _platform.append_lock
append_unlock = _platform.append_unlock
HOLD_OPEN = _platform.HOLD_OPEN
boot_and_pidns = _platform.boot_and_pidns
busy_create = _platform.busy_create
change_time = _platform.change_time
changed_at = _platform.changed_at
clock_ticks = _platform.clock_ticks
copy_owner_and_mode = _platform.copy_owner_and_mode
fork_process = _platform.fork_process
fsync_directory = _platform.fsync_directory
generation = _platform.generation
has_symlinks = _platform.has_symlinks
hold_temp_file = _platform.hold_temp_file
looks_can_be_refused = _platform.looks_can_be_refused
nodename = _platform.nodename
open_directory = _platform.open_directory
open_file = _platform.open_file
pids_known = _platform.pids_known
proc_locks_device = _platform.proc_locks_device
process_exists = _platform.process_exists
pread = _platform.pread
pwrite = _platform.pwrite
renames_by_handle = _platform.renames_by_handle
renames_open_files = _platform.renames_open_files
remove_directory = _platform.remove_directory
remove_file = _platform.remove_file
retry_busy = _platform.retry_busy
touch = _platform.touch
utime_open = _platform.utime_open
while_readers = _platform.while_readers
