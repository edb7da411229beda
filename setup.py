"""Build shim: the metadata lives in setup.cfg; this only fixes up the long description.

README.md links to docs/ and examples/ by relative paths, which work in the
repository but break on a package index page: there they become plain paths.
"""

import re
from pathlib import Path

from setuptools import setup

_LINK = re.compile(r"\[([^\]]+)\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)")


def long_description() -> str:
    """Return README.md with relative links turned into paths in the source distribution."""
    text = Path(__file__).with_name("README.md").read_text(encoding="utf-8")
    return _LINK.sub(lambda m: f"{m.group(1)} (`{m.group(2)}` in the source distribution)", text)


setup(long_description=long_description(), long_description_content_type="text/markdown")
