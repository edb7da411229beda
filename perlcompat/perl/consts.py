"""Perl's ``Fcntl`` constants: ``:flock`` (LOCK_SH/EX/NB/UN) and ``:seek`` (SEEK_SET/CUR/END).

The one place they are defined: ``perlcompat`` exports them, ``perl.flock``,
``perl.flock_windows``, ``perl.handle`` and the lock methods take them from
here.  The numbers are Perl's on every platform (and flock(2)'s and lseek(2)'s
on POSIX); the Windows ``flock`` translates them.  This module imports nothing.
"""

LOCK_SH = 1
LOCK_EX = 2
LOCK_NB = 4
LOCK_UN = 8

SEEK_SET = 0
SEEK_CUR = 1
SEEK_END = 2
