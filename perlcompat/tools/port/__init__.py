"""``perlcompat port SCRIPT``: a first Python port of a Perl CGI script, statement for statement.

``ppi`` runs ``perl`` on ``ppi_dump.pl`` (PPI, Perl::Critic's parser) and reads its JSON;
``tree`` holds the nodes and the script's text; ``syntax`` parses a statement's tokens
into expressions; ``exprs`` translates expressions, ``builtins`` Perl's built-in
functions and CGI.pm's methods, ``bytefuncs`` those on bytes (``substr``, ``ord``,
``pack("C")``, ``tr``), ``stmts`` statements, ``compound`` blocks, loops and subs,
``calls`` calls and the lock sub's ``lock()`` (the parts of one translator, sharing the
state declared in ``core``); ``names`` is
the one table of the perlcompat names a port emits; ``writer`` assembles the module
(imports, globals, the audit's findings as comments) and counts what stayed ``# PORT:``;
``command`` is the CLI.  What cannot be translated exactly stays as the Perl line in a
``# PORT:`` comment with a reason: a port never runs something else silently.  Imports
``tools.audit`` only.
"""
