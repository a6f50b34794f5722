"""A tour of the warnings PyTorch prints, the way "common PyTorch gotchas" notebooks show them:
each one caught with warnings.catch_warnings(record=True) and printed in full."""
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def show_warnings(title, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
        except Exception as e:      # some of them also fail
            result = f"{type(e).__name__}: {e}"
    print(f"== {title}")
    for w in caught:
        print(f"{w.category.__name__}: {w.message}")
    if isinstance(result, str):
        print("raised ->", result)
    elif isinstance(result, torch.Tensor):
        print("result shape", tuple(result.shape), result.dtype)


# 1. meshgrid without indexing
show_warnings("meshgrid", lambda: torch.meshgrid(torch.arange(3), torch.arange(2))[0])
# 2. .T on a batch of matrices
show_warnings("x.T on 3-d", lambda: torch.zeros(2, 3, 4).T)
# 3. std of a single value
show_warnings("std of one value", lambda: torch.tensor([3.0]).std())
# 4. MSE with mismatched shapes (broadcasting silently!)
pred = torch.zeros(8, 1)
target = torch.arange(8.)
show_warnings("mse_loss broadcast", lambda: F.mse_loss(pred, target))
print("broadcast loss", F.mse_loss(pred, target.unsqueeze(1)).item())
# 5. a non-writable numpy array
arr = np.arange(4.0)
arr.setflags(write=False)
show_warnings("from_numpy(read-only)", lambda: torch.from_numpy(arr))
# 6. copy-constructing a tensor
x = torch.ones(3, requires_grad=True)
show_warnings("torch.tensor(tensor)", lambda: torch.tensor(x))
# 7. reading .grad of a non-leaf
def nonleaf_grad():
    y = x * 2
    y.sum().backward()
    return y.grad
show_warnings("non-leaf .grad", nonleaf_grad)
# 8. an out= tensor of the wrong size
show_warnings("out resized", lambda: torch.add(torch.ones(3), 1, out=torch.empty(2)))
# 9. softmax without dim
show_warnings("softmax without dim", lambda: F.softmax(torch.ones(2, 3)))
# 10. complex -> real
show_warnings("complex to float", lambda: torch.tensor([1 + 2j]).float())
# 11. uint8 mask
show_warnings("uint8 mask", lambda: torch.arange(4.)[torch.tensor([1, 0, 1, 0], dtype=torch.uint8)])
# 12. old size_average argument
show_warnings("size_average", lambda: nn.MSELoss(size_average=False)(torch.ones(2), torch.zeros(2)))
# 13. legacy init name
show_warnings("nn.init.xavier_uniform", lambda: nn.init.xavier_uniform(torch.empty(2, 2)))
# 14. padding='same' with an even kernel
show_warnings("padding same", lambda: nn.Conv1d(1, 1, 4, padding="same")(torch.ones(1, 1, 8)))
# 15. float() of a tensor that requires grad
show_warnings("float(requires_grad)", lambda: float(x.sum()))
# 16. a scheduler stepped before the optimizer
def scheduler_first():
    p = nn.Parameter(torch.ones(1))
    opt = torch.optim.SGD([p], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    sched.step()
    opt.step()
    return sched.get_last_lr()
show_warnings("scheduler before optimizer", scheduler_first)
# 17. deprecated linear algebra
show_warnings("torch.qr", lambda: torch.qr(torch.eye(2))[0])
# 18. anomaly detection names the forward op that broke backward
def anomaly():
    with torch.autograd.detect_anomaly():
        a = torch.ones(3, requires_grad=True)
        b = a.exp()
        b.add_(1)
        b.sum().backward()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        anomaly()
    except RuntimeError as e:
        print("== anomaly\nRuntimeError:", e)
    for w in caught:
        lines = str(w.message).splitlines()
        print(f"{w.category.__name__}: {lines[0]} / {lines[-1].strip()}")
