"""``perlcompat audit``: find the unsafe locking idioms in Perl CGI scripts.

A file goes source -> lexer -> parser -> program -> walker -> rules; ``run`` drives it.
Each module imports only modules listed above it (no circles, lazy imports included):

- ``source``: which files are Perl (``iter_files``) and their text (``read_source``).
- ``lexer``: Perl text to tokens (``lex``), deciding ``/``, ``<IN>``, ``%h`` as Perl does.
- ``parser``: tokens to statements and blocks (``parse``); ``parse_checked`` for a file.
- ``findings``: ``Finding``, ``Problem`` (a file not followed), ``Policy`` (one rule).
- ``model``: the program model: ``Program`` (files, subs, ``visible``: which sub a call
  runs), ``Source``, and what a walk records (``Result``, ``Ev``, ``Inst``, ``Open``).
- ``items``: helpers over a statement's tokens and blocks (call arguments, handles).
- ``facts``: what tokens say without a walk: retry loops, age tests, ``my`` names.
- ``suggest``: the Python line each finding suggests, in the script's own terms.
- ``rules/``: one module per rule (its ``POLICY``: name, severity, description, and its
  check); ``read_write`` holds the four rules of one decision; ``common``: shared helpers.
- ``handlers``: what each Perl built-in (``open``, ``flock``, ``rename``...) does to the walk:
  the events it records (including how a result is used); it finds no rule.
- ``walker``: walks each scope statement by statement, recording events (``Walker``).
- ``program``: what each file defines, read before the walk (subs, constants, requires).
- ``registry``: every rule in one table (``POLICIES``, ``RULES``) and ``judge``.
- ``run``: ``audit(sources)``, the entry point: parse, learn, walk, judge.
- ``command``: the ``perlcompat audit`` command line: text or ``--json``, exit status.
"""
