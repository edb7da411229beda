"""``record=``/``pidfile=`` against hostile input: templates that cannot be read back, data
files a declared format half-matches, and a release that cannot read the inode generation
or runs where there is none (overlayfs, a container's usual root, reuses an inode at once)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from perlcompat import lock
from perlcompat.locks.record import Template


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


# -- templates that cannot be read back --------------------------------------------------


@pytest.mark.parametrize("text", ["{time}{pid}\n", "{host}{pid}", "{pid}{rand}", "x{any}{pid}"])
def test_adjacent_fields_are_refused(text: str) -> None:
    """``{time}{pid}`` renders ``176408700012345``, read back as pid 5: a waiter would judge
    a live holder by a stranger's pid (dead: broken at once).  Nothing tells where one
    number ends, so the template is refused, naming the two fields."""
    with pytest.raises(ValueError, match=r"adjacent"):
        Template(text)


@pytest.mark.parametrize(
    "text",
    [
        "{pid}\n",
        "{host}.{pid}\n",
        "{host} {pid} {time} {rand}\n",
        "{pid}\n{host}\n{expires}\n",
        "{localtime}\n",
        "lock{time}_{pid}_{addr}",
        "{pid} {any}\n",
    ],
)
def test_a_rendered_record_reads_back_as_this_process(text: str) -> None:
    template = Template(text)
    fields = template.match(template.render(stale=60))
    assert fields is not None
    if "{pid}" in text:
        assert fields.pid == os.getpid()


@pytest.mark.parametrize("text", ["{any}", "{any}\n", " {any} \n", "{any}\n{any}"])
def test_a_template_that_matches_any_content_is_refused(tmp_path: Path, text: str) -> None:
    """``record='{any}'`` would make every file a lock (a data file given by mistake
    removed once older than ``stale``)."""
    data = tmp_path / "data.txt"
    data.write_text("hello world\n")
    _age(data, 10**6)
    with pytest.raises(ValueError, match=r"record=.*matches any content"):
        lock(str(data), method="excl", record=text, stale=1)
    assert data.read_text() == "hello world\n"


def test_adjacent_fields_are_refused_by_lock(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"record=.*adjacent"):
        lock(str(tmp_path / "x.lock"), method="excl", record="{time}{pid}\n")
    assert os.listdir(tmp_path) == []
