"""The rules of ``perlcompat audit``, one module each (``read_write``: four rules, one decision).

Each module declares its rule as ``POLICY`` (a :class:`..findings.Policy`: name, default
severity, one-line description) beside the code that finds it: ``check(res, judge)`` for
a rule judged on one walked scope, ``check_program(prog, results)`` for one across files.
``unchecked_result``, ``swallowed_flock`` and ``check_then_create`` are found during the
walk (:mod:`..handlers`, :mod:`..walker`), which alone knows how a result is used; their
modules declare them.
``common`` holds what several rules share.  :mod:`..registry` lists them all.
"""
