"""``perlcompat port SCRIPT``: a first Python port of a Perl CGI script, statement for statement.

``ppi.py`` runs ``perl`` on ``ppi_dump.pl`` (PPI, Perl::Critic's parser) and reads its JSON;
``tree.py`` holds the nodes and the script's text; ``syntax.py`` parses a statement's tokens
into expressions; ``exprs.py`` translates expressions, ``builtins.py`` Perl's built-in
functions, ``stmts.py`` statements, blocks and subs; ``names.py`` is the one table of the
perlcompat names the port emits; ``writer.py`` assembles the module (imports, globals, the
audit's findings as comments) and counts what stayed ``# PORT:``; ``command.py`` is the CLI.
What cannot be translated exactly stays as the Perl line in a ``# PORT:`` comment with a
reason: the port never runs something else silently.  Imports ``tools.audit`` only.
"""
