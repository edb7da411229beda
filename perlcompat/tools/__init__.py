"""The tools behind the ``perlcompat`` command; the runtime a port imports never loads them.

- ``cli``: the ``perlcompat`` command: ``--version``, ``--help`` and the subcommand table.
- ``demo``: ``perlcompat demo``: concurrent writers for every idiom, and what each lost;
  its Perl writers are ``demo_perl/*.pl`` (package data).
- ``locks_cli``: ``perlcompat locks DIR``: list the locks in a directory, break stale ones.
- ``redis_cli``: ``perlcompat redis-lift URL``: lift a Redis lock server's hold-off.
- ``serve``: ``perlcompat serve``: ported CGI scripts over FastCGI, a forked child per
  request; ``server`` is its event loop, with ``request`` (a request's state),
  ``cgienv`` (the CGI variables a request may set), ``scripts`` (which scripts may
  run, compiled once), ``response`` (the header checks, the error answers) and
  ``listen`` (the socket; who gets a connection); ``forker`` forks the
  children, ``runner`` is the child that runs one script as ``__main__`` (``reuse``:
  the next request in the same child, under ``--reuse``), ``fastcgi`` the wire format
  (POSIX only: ``server``, ``forker``, ``listen``, ``runner``, ``reuse``).
- ``audit/``: ``perlcompat audit PATH...``: the unsafe locking idioms in Perl scripts.
- ``quoting``: names and Perl text quoted for a terminal as GNU ``ls`` quotes them.

Imports: a tool may import anything (the stdlib, ``perl/``, ``locks/``, other tools);
nothing in ``perl/`` or ``locks/`` (nor ``import perlcompat``) imports ``tools``.
argparse and each subcommand's module load only when that subcommand runs.
"""
