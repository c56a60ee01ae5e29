"""``python -m streams.config --write-docs``: the example TOML and the README's settings table
written from the declarations."""

import sys

from streams.config.docs import write_docs

if sys.argv[1:] != ["--write-docs"]:
    sys.exit("usage: python -m streams.config --write-docs (the example TOML, README's table)")
write_docs()
