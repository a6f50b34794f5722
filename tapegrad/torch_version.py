"""tapegrad.torch_version: `TorchVersion`, the type of `tapegrad.__version__` (as torch's).

Scripts test the version they run under: `torch.__version__ >= "1.8"`, `< (2, 0)`,
`packaging.version.parse(torch.__version__)`, `torch.__version__.split(".")`.  PyTorch's
`__version__` is a str that compares as a PEP 440 version (so "2.13.0" > "2.9" and
"2.0.0a0" < "2.0"), against strings, tuples and packaging's `Version`, falling back to str
comparison for something that is not a version.  This type does the same without depending on
the `packaging` distribution: the PEP 440 ordering is written out below.
"""
from __future__ import annotations as _annotations

import re
from collections.abc import Iterable

__all__ = ["TorchVersion"]

# PEP 440's public grammar (epoch, release, pre, post, dev) and local label, case-insensitive,
# with the spellings the PEP normalises ("alpha" is "a", "-1" is ".post1", "_" is ".").  Matched
# by pattern text: `re` compiles it on the first comparison, not at tapegrad's import.
_PEP440 = (
    r"""\s*v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|rc|a|b|c)[-_.]?(?P<pre_n>\d+)?)?
    (?:-(?P<post_implicit>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n>\d+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*""")
_PEP440_FLAGS = re.VERBOSE | re.IGNORECASE
_PRE_LETTER = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "c": "rc", "pre": "rc",
               "preview": "rc", "rc": "rc"}


class _NotAVersion(ValueError):
    pass


def _sort_key(text: str) -> tuple:
    """A tuple that orders as PEP 440 orders the version `text` (trailing zeros of the release
    ignored; a dev release before its pre-releases, those before the release, that before its
    post-releases; a local label after the same version without one)."""
    m = re.fullmatch(_PEP440, text, _PEP440_FLAGS)
    if m is None:
        raise _NotAVersion(text)
    release = [int(part) for part in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    has_post = m["post_implicit"] is not None or m["post_l"] is not None
    if m["pre_l"] is not None:
        pre = (1, _PRE_LETTER[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif m["dev_l"] is not None and not has_post:
        pre = (0,)          # 1.0.dev0 sorts before 1.0a0
    else:
        pre = (2,)
    post = (1, int(m["post_implicit"] or m["post_n"] or 0)) if has_post else (0,)
    dev = (0, int(m["dev_n"] or 0)) if m["dev_l"] is not None else (1,)
    if m["local"] is None:
        local: tuple = (0,)
    else:   # numeric segments after alphanumeric ones, each kind in its own order
        local = (1, tuple((1, int(s), "") if s.isdigit() else (0, 0, s.lower())
                          for s in re.split(r"[-_.]", m["local"])))
    return int(m["epoch"] or 0), tuple(release), pre, post, dev, local


def _other_key(other) -> tuple:
    if isinstance(other, str):
        return _sort_key(other)
    if hasattr(other, "release") and hasattr(other, "local"):    # packaging's Version
        return _sort_key(str(other))
    if isinstance(other, Iterable):                              # (2, 0) is "2.0"
        return _sort_key(".".join(str(item) for item in other))
    raise _NotAVersion(other)


class TorchVersion(str):
    """A str that compares as a PEP 440 version against strings, tuples of numbers and
    packaging's `Version` objects (`TorchVersion("2.13.0") > "2.9"`, `> (1, 8)`); against
    anything that is not a version, as a str.  `!=` is str's, as in PyTorch."""

    __slots__ = ()

    def _compare(self, other, method: str):
        try:
            mine, theirs = _sort_key(self), _other_key(other)
        except _NotAVersion:
            return getattr(str, method)(self, other)
        return getattr(mine, method)(theirs)

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    __hash__ = str.__hash__
