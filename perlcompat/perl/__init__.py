"""The Perl built-ins a port calls, with Perl's arguments, return values and ``$!``.

One module a group of perlfunc entries (the public names are exported lazily by
``perlcompat``):

* ``errno``: ``$!`` as ``OS_ERROR``/``ERRNO``, and the ``fail`` helpers every
  built-in returns through.
* ``die``: ``die`` and ``warn`` (``Die``; an uncaught one exits as Perl does).
* ``consts``: Fcntl's ``LOCK_SH/EX/NB/UN`` and ``SEEK_SET/CUR/END``, defined here only.
* ``osflags``: the ``os.open`` flags (``O_NOFOLLOW``, ``O_CLOEXEC`` ...), 0 where absent.
* ``handle``: Perl's functions on handles: ``open_``, ``close``, ``print_``, ``printf``,
  ``readline``, ``seek``, ``tell``, ``truncate``, ``binmode``, ``eof``; every open handle
  flushed and closed at exit (``close_all``).
* ``perlio``: ``PerlFile``, the handle ``open_`` returns (PerlIO's buffers; the Python file
  methods and Perl's functions share its one implementation of each operation).
* ``layers``: the I/O layers (``:raw``, ``:crlf``, ``:encoding(NAME)``) and the PERLQQ fallback.
* ``openfiles``: the registry of open handles (exit, fork); ``LostLockWarning``, ``PerlWarning``.
* ``stdio``: ``STDIN``, ``STDOUT``, ``STDERR`` as handles (made at first use) and
  ``read(FH, buf, length)`` filling a ``Scalar``.
* ``flock``: ``flock`` on a handle, file object or fd (``PerlFile.flushed_fileno()``).
* ``fcntllock``: File::FcntlLock's ``FcntlLock`` (fcntl(2) record locks, ``F_SETLKW``).
* ``flock_windows``: ``flock``'s ``LockFileEx`` over Perl's byte range (portalocker).
* ``fs``: ``mkdir``, ``rmdir``, ``rename``, ``unlink``, ``symlink``, ``readlink``, ``stat``,
  ``lstat``, the file tests, ``utime``, ``chmod``, ``chown``, ``sleep``, ``BASETIME``.
* ``fsinfo``: which file system a path is on; ``SharedStorageWarning``.
* ``process``: piped ``open_``'s ``PipeFile``, ``qx``/``qx_lines`` (backticks), ``system``,
  ``$?`` as ``CHILD_ERROR`` (``subprocess`` loads with it, on first use).
* ``bytestr``: Perl's byte answers on text: ``length``, ``substr``, ``tr``, ``as_bytes``,
  ``from_bytes``.
* ``alarm``: ``alarm``, ``%SIG`` as ``SIG`` (and its ``__DIE__``/``__WARN__`` hooks),
  ``local $SIG{...}`` as ``local_sig``.
* ``clock``: the one place waits sleep and read a pending alarm.
* ``sysopen``: ``sysopen`` and Fcntl's ``O_*`` flags.
* ``require``: ``require "./lib.pl"`` for a ported library, run in the script's globals.
* ``text``: ``split``, a string's number (``num``), a value's truth (``truth``),
  ``chomp``, ``chop`` and Perl's magic ``++`` (``inc``).
* ``undef``: Perl's undef as a value (``undef``: "" in a string, 0, false), ``defined``.
* ``lists``: arrays and hashes read as Perl reads them: ``elem``, ``PerlList``,
  ``PerlHash``, ``hval``, ``pop``, ``shift``, ``push``, ``unshift``.
* ``time``: ``time``, ``localtime``, ``gmtime`` and their scalar forms; POSIX's ``strftime``.
* ``crypt``: ``crypt`` through the C library.
* ``jexact``: the ``sjis-exact`` and ``euc-jp-exact`` codecs (byte round trips).

Imports: the standard library and ``perl/`` only (``fs`` reads ``$^T`` from the
top package); never ``perlcompat.locks`` or ``perlcompat.tools``, which build on
this part.  Heavy modules load on first use, so importing a built-in stays cheap.
This file imports nothing.
"""
