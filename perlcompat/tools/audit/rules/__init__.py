"""The rules of ``perlcompat audit``, one module each (``read_write``: four rules, one decision).

Each module declares its rule as ``POLICY`` (a :class:`..findings.Policy`: name, default
severity, one-line description) beside the code that finds it: ``check(res, judge)`` for
a rule judged on one walked scope, ``check_program(prog, results)`` for one across files.
Every rule reads the events of the walk (:mod:`..walker`, :mod:`..handlers`), which finds
none itself: how a result is used is recorded on its event (``Ev.result``).
``common`` holds what several rules share.  :mod:`..registry` lists them all.
"""
