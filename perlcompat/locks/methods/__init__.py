"""The lock methods: one module per method, each defining and registering one ``Backend``.

* ``mkdir``: a directory held while it exists (the mkdir lock sub; the default);
* ``symlink``: a symlink to the holder's pid (the Perl locking article);
* ``rename``: a marker file renamed to ``<name>.locked`` while held;
* ``excl``: a file created with ``O_EXCL`` (the ``(set -C)`` exclusive create);
* ``link``: a temp file hard-linked to the lock name (NFS-safe: File::NFSLock, UnixNFSSafe);
* ``flock``: ``flock(LOCK_EX)`` on a lock file (the recommended one);
* ``toplock``: TOP?LOCK, held while our ``id<>time<>`` line is the file's first (Sajiro DATABASE);
* ``redis``: a lease on a key of one Redis server (``url=``; needs redis-py; a package).

To add a method: write ``methods/NAME.py`` with a ``locks.contract.Backend``
subclass (a file lock usually builds on ``locks.stale.StaleBackend``: its hooks) that sets
``method = "NAME"``, implements ``try_acquire``, ``release``, ``break_stale`` and
``describe``, declares what else it can do (``supports_extend``,
``waits_for_release``, ``forget``, ``why_busy``), recognises its own locks on disk
(``detect``, and ``part_of``/``parts`` for the files beside a lock), and is
decorated with ``@register``; then add ``"NAME": "NAME"`` to
``locks.contract.METHODS`` (and NAME to ``OFF_DISK`` if its locks are not files).
``tests/test_lock_contract.py`` checks the new method against the contract.
"""
