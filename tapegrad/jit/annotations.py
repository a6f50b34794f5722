"""tapegrad.jit.annotations: the typing names TorchScript annotations use, as torch.jit.annotations.

Old torchvision models, copied into many repositories, do `from torch.jit.annotations import
List, Tuple`; nothing here is compiled, so the names are typing's.
"""
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: F401 - re-exported


class _BroadcastingList:
    """TorchScript's BroadcastingListN[T] (a T or a list of N of them): a marker for the compiler,
    here only subscriptable."""

    def __getitem__(self, types):
        return List[types]


BroadcastingList1 = _BroadcastingList()
BroadcastingList2 = _BroadcastingList()
BroadcastingList3 = _BroadcastingList()
