"""Tensor storage and stride tricks as tensor-exercise collections show them: strides and
offsets of views, storages shared between a tensor and its slices, untyped storages and their
byte-wise casts (.int(), .float(), .bool(), ...), as_strided windows, unfold, and advanced
indexing with several index tensors.  Inspired by tisnik/most-popular-python-libs."""
import warnings

import torch

warnings.simplefilter("ignore")
m = torch.arange(12, dtype=torch.int16).reshape(3, 4)
print(m.stride(), m.t().stride(), m[1:, ::2].stride(), m[1:, ::2].storage_offset())
s = m.untyped_storage()
print(type(s), s.nbytes(), s.element_size(), len(s))
print(type(m.storage()), m.storage().dtype, m.storage().size())
print(m[1].untyped_storage().data_ptr() == s.data_ptr(), m[1].data_ptr() - m.data_ptr())
for cast in ("int", "float", "double", "bool", "byte", "long", "half", "short", "char"):
    c = getattr(torch.tensor([3, 256], dtype=torch.int16).untyped_storage(), cast)()
    print(cast, type(c), c.dtype, c.size(), c.tolist())
print(torch.tensor([1.5]).untyped_storage().int())
v = torch.arange(10.)
print(v.as_strided((4, 3), (2, 1)), v.unfold(0, 3, 2).stride())
x = torch.arange(24).reshape(2, 3, 4)
print(x[[0, 1], :, [3, 0]], x[:, [2, 0], [1, 1]], x[torch.tensor([[1], [0]]), torch.tensor([0, 2])].shape)
print(x.transpose(1, 2).is_contiguous(), x.transpose(1, 2).contiguous().stride())
