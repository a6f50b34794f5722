"""Attributes set on a class for a while, then put back as they were: the class's own value,
or none (the attribute was inherited).  The function modes (overrides.py) and vmap's guard on
in-place methods (_vmap_plain_writes.py) replace Tensor's attributes this way."""
from __future__ import annotations

_ABSENT = object()


class TemporaryAttributes:
    """The attributes set on `cls` since the last restore(), and what it held before."""

    __slots__ = ("cls", "before")

    def __init__(self, cls):
        self.cls = cls
        self.before: dict = {}      # name -> the class's own value before, or _ABSENT

    def set(self, name: str, value) -> None:
        if name not in self.before:
            self.before[name] = vars(self.cls).get(name, _ABSENT)
        setattr(self.cls, name, value)

    def replaced(self, name: str):
        """The class's own value of `name` before set() replaced it (None if none)."""
        before = self.before.get(name)
        return None if before is _ABSENT else before

    def replaced_items(self):
        """(name, the class's own value before) for each attribute set that had one."""
        return [(name, before) for name, before in self.before.items() if before is not _ABSENT]

    def restore(self) -> None:
        for name, before in self.before.items():
            if before is _ABSENT:
                delattr(self.cls, name)
            else:
                setattr(self.cls, name, before)
        self.before.clear()
