"""Prototype tutorials 'MaskedTensor Advanced Semantics' and 'Efficiently writing sparse
semantics for Adagrad with MaskedTensor', as a script: matching masks for binary ops, the
reductions along a dim (fully masked-out rows included), and a sparse Adagrad step written with
sparse COO masked tensors beside the hand-written sparse version."""
import warnings

import numpy as np
import torch
from torch.masked import masked_tensor

warnings.filterwarnings(action="ignore", category=UserWarning)

# NumPy's masked arrays OR their masks; MaskedTensor refuses masks that differ
data = torch.arange(6.)
mask = torch.tensor([True, False, True, True, False, True])
npm0 = np.ma.masked_array(data.numpy(), (~mask).numpy())
npm1 = np.ma.masked_array(data.numpy(), mask.numpy())
print("npm0 + npm1:", npm0 + npm1)
mt0 = masked_tensor(data, mask)
mt1 = masked_tensor(data, ~mask)
print("mt0:\n", mt0)
try:
    mt0 + mt1
except ValueError as e:
    print("mt0 + mt1 failed:", e)
t0 = mt0.to_tensor(0)
t1 = mt1.to_tensor(0)
print("explicit union:\n", masked_tensor(t0 + t1, mt0.get_mask() | mt1.get_mask()))
print("same masks add:\n", mt0 + mt0 * 2)

# reductions along dim=1 skip the masked-out entries; a fully masked-out row stays masked out
grid = torch.arange(12, dtype=torch.float).reshape(3, 4)
keep = torch.tensor([[True, False, True, True], [False, False, False, False],
                     [True, True, False, True]])
mt = masked_tensor(grid, keep)
print("mt:\n", mt)
print("torch.sum:\n", torch.sum(mt, 1))
print("torch.mean:\n", torch.mean(mt, 1))
print("torch.prod:\n", torch.prod(mt, 1))
print("torch.amin:\n", torch.amin(mt, 1))
print("torch.amax:\n", torch.amax(mt, 1))
print("argmax keepdim:\n", mt.argmax(1, keepdim=True))
print("var over dim 0:\n", mt.var(0))
print("all positive:\n", (mt > 0).all(1))
print("sum of everything:", mt.sum())

# a sparse Adagrad step: by hand with COO internals, then with masked tensors
eps = 1e-10
clr = 0.1
i = torch.tensor([[0, 1, 1], [1, 0, 3]])
v = torch.tensor([2.0, 6.0, 3.0])
grad = torch.sparse_coo_tensor(i, v, [2, 4]).coalesce()

param = torch.arange(8).reshape(2, 4).float()
state_sum = torch.full_like(param, 0.25)
gi, gv = grad._indices(), grad._values()
state_sum.add_(torch.sparse_coo_tensor(gi, gv.pow(2), grad.size()))
std = state_sum.sparse_mask(grad)
std_values = std._values().sqrt_().add_(eps)
param.add_(torch.sparse_coo_tensor(gi, gv / std_values, grad.size()), alpha=-clr)

param2 = torch.arange(8).reshape(2, 4).float()
state_sum2 = torch.full_like(param2, 0.25)
grad_mask = (grad.to_dense() != 0).to_sparse()
masked_grad = masked_tensor(grad, grad_mask)
print("masked_grad:\n", masked_grad)
state_sum2 = state_sum2 + masked_grad.pow(2).get_data()
std2 = masked_tensor(state_sum2.to_sparse(), grad_mask)
std2 = std2.sqrt().add(eps)
param2 = param2.add((masked_grad / std2).get_data(), alpha=-clr)
print("state_sum:\n", state_sum)
print("state_sum2:\n", state_sum2)
print("std:\n", std)
print("std2:\n", std2)
print("std2 layout:", std2.layout)
print("param:\n", param)
print("param2:\n", param2)
print("same update:", torch.allclose(param, param2))
