"""Locks between processes: ``lock()``/``unlock()``, ``Lock``, the lock methods and their machinery.

Modules:

* ``api``: ``Lock``: patience, ownership, cleanup, for every method;
* ``threadsafe``: one ``Lock`` object shared by threads (one holder, the others wait) and
  re-entered from a signal handler (never waits for itself); the ``auto_refresh`` thread;
* ``compat``: ``Lock`` in the Python lock libraries' shapes: ``is_singleton=True``,
  ``thread_local=False`` (filelock), ``stale`` settable, ``expiration``, ``details`` (flufl.lock);
* ``state``: ``LockState`` (``Lock.state``, flufl.lock's) and whether a hold is still the
  lock on disk (``reentrant=False``, ``is_locked`` of a hold past ``stale``); loaded on use;
* ``acquired``: what ``Lock.acquire()`` returns (a context manager that releases once);
* ``functions``: ``lock()`` and ``unlock()``, the mkdir lock sub's shape over ``Lock``;
* ``options``: the arguments of ``Lock``, ``lock()``/``unlock()`` and ``Semaphore``, checked once;
* ``contract``: the ``Backend`` contract every method implements, the method registry, ``detect()``;
* ``errors``: ``LockError`` and its subclasses (``LockTimeout``, ``ExpiredLockError`` ...);
* ``methods/``: one module per lock method (mkdir, symlink, rename, excl, link, flock,
  toplock, redis);
* ``retry``: the one retry loop of the waits (``lock()``, ``Semaphore``): jittered backoff;
* ``stale``: the hook protocol of the file methods (``StaleBackend``): release, refresh, describe;
* ``remover``: race-free removal of stale locks, locally and on shared storage (``Remover``);
* ``files``: the file primitives of the file methods (looks, ``remove_same``, refusals);
* ``guards``: the remover guards (one remover at a time): the interface and the local flock;
* ``netfs``: stale-lock removal on storage other hosts share (NFS, SMB, sshfs);
* ``owner``: who holds a lock (pid, host, start time) and whether that holder still runs;
* ``record``: the Perl side's lock format (``record=``/``target=`` templates): render, match;
* ``cleanup``: the one registry of held locks, released at exit and on a stopping signal;
* ``fork``: Perl's ``fork()``, handing this thread's locks to the child;
* ``osapi``: the platform seam: the OS operations the lock code needs, picked at import
  from ``osposix`` (POSIX: ``kill(pid, 0)``, /proc, ``pread``, directory flocks) or
  ``oswindows`` (Windows: delete-sharing opens through kernel32, busy retries, no
  process table); the one place in ``locks/`` that asks which platform this is;
* ``log``: the ``perlcompat`` logger, imported only when there is something to log;
* ``safedir``: a lock directory opened without following others' symlinks, held by its descriptor;
* ``semaphore``: counting semaphores (*n* flock slot files);
* ``lockedfile``: ``LockedFile``, a data file flocked and handed over as its open handle;
* ``replace``: atomic whole-file replace under a lock file.

Modules here import the standard library, ``perlcompat.perl`` and this
package only; never ``perlcompat.tools``.  A ``lock()`` imports its own method's
module and no other.
"""
