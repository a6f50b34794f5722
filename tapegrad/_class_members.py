"""Whether a class already has a member: the test the op families' register() functions make
before attaching a method to Tensor ("existing names win").

`name in dir(cls)` gives the same answer, but dir() lists and sorts all ~600 of Tensor's members
on every call; the families made ~330 such calls at import, a third of `import tapegrad`'s own
time.  This looks the name up in each class's own namespace along the MRO, which is what dir()
lists for a class.
"""


def has_member(cls: type, name: str) -> bool:
    """`name in dir(cls)`, without building the listing."""
    return any(name in vars(klass) for klass in cls.__mro__)
