"""Aliasing, masking and device/dtype questions from a "PyTorch basics" snippet collection
(inspired by makeesyai/makeesy-deep-learning pytoch_basics): which results share memory after
view/reshape/t/contiguous/clone, strides and is_contiguous, masked_fill with broadcast row and
column masks, in-place writes through views, index_put_/masked_scatter, triu masks, einsum
recipes, type_as and dtype promotion, and the errors a wrong mask, index or device string gives
(printed with their messages)."""
import torch

t = torch.arange(12).view(4, 3)
views = {"view": t.view(3, 4), "reshape": t.reshape(2, 6), "t": t.t(), "contig_t": t.t().contiguous(),
         "clone": t.clone(), "slice": t[1:, ::2], "flatten_t": t.t().flatten()}
for name, v in views.items():
    print(f"{name:10s} shares={v.data_ptr() == t.data_ptr() or v.storage_offset() > 0 and v.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()} "
          f"contiguous={v.is_contiguous()} stride={v.stride()} offset={v.storage_offset()}")
t[0, 0] = 100
print({name: v.flatten()[0].item() for name, v in views.items()})
views["slice"].mul_(-1)
print(t)

# masked_fill with row / column broadcasting
x = torch.arange(1., 21.).view(4, 5)
print(x.masked_fill(torch.tensor([[True, True, False, True, True]]), -1))
print(x.masked_fill(torch.tensor([[True], [False], [True], [False]]), 0.5))
print(torch.masked_fill(x, x.remainder(3) == 0, float("-inf")).softmax(dim=-1))
print(torch.triu(torch.ones(4, 4), diagonal=1).bool())
att = torch.arange(16.).view(4, 4).masked_fill(torch.triu(torch.ones(4, 4), 1).bool(), float("-inf"))
print(att.softmax(-1))

# writes
y = torch.zeros(3, 4)
y.index_put_((torch.tensor([0, 2, 0]), torch.tensor([1, 3, 1])), torch.tensor([1., 2., 3.]), accumulate=True)
y[y == 0] = torch.arange(10.)
print(y, y.masked_scatter(y > 5, torch.full((12,), -7.)))
y[:, torch.tensor([True, False, True, False])] = torch.tensor([10., 20.])
print(y, y.nonzero(as_tuple=True))

# einsum and dtypes
A, B = torch.arange(6.).view(2, 3), torch.arange(12.).view(3, 4)
print(torch.einsum("ij,jk->ik", A, B), torch.einsum("ij->j", A), torch.einsum("ii", B[:, :3]))
print(torch.einsum("i,j->ij", A[0], A[1]), torch.einsum("bij,bjk->bik", A[None], B[None]).shape)
h = torch.tensor([1, 2, 2], dtype=torch.float16)
print(h.type_as(A), torch.tensor([1, 2]).type_as(h), (h + torch.tensor([1])).dtype, (h * 2.5).dtype)
print(torch.tensor([1, 2], dtype=torch.int32) / 2, torch.tensor([True]) + 1, torch.tensor([3]) // 2.0)

for label, fn in [
        ("mask_rows", lambda: x.masked_fill(torch.tensor([True, False]), 0)),
        ("set_mask", lambda: x.__setitem__(torch.tensor([True, False]), 0.0)),
        ("set_mask_col", lambda: x.__setitem__((slice(None), torch.tensor([True, False, True])), 1.0)),
        ("index_broadcast", lambda: y.index_put_((torch.tensor([0, 1]), torch.tensor([0, 1, 2])), torch.tensor(1.))),
        ("set_index_broadcast", lambda: y.__setitem__(([0, 1], [0, 1, 2]), 1.0)),
        ("masked_scatter", lambda: x.masked_scatter(torch.tensor([True, False]), torch.ones(20))),
        ("view", lambda: t.t().view(-1)),
        ("device_dtype", lambda: x.to("float32")),
        ("device_unknown", lambda: torch.device("gpu:0")),
        ("device_empty", lambda: torch.device(""))]:
    try:
        fn()
        print(label, "ok")
    except Exception as e:
        print(label, type(e).__name__, e)
