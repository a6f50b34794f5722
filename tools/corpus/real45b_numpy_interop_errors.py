"""A tutorial cell that mixes numpy and tensors: numpy's elementwise functions and conversions
work on a tensor, numpy's reductions do not (they call Tensor.mean(axis=..., out=...), which
PyTorch's parser refuses: the type is what a notebook can rely on, its wording follows the
parser's choice of signature), and the notebook converts first."""
import numpy as np
import torch

scores = torch.tensor([[0.5, 1.5, 2.5], [3.0, 4.0, 5.0]])
print("np.exp:", np.round(np.exp(scores), 3))
print("np.asarray dtype:", np.asarray(scores).dtype, "shape:", np.asarray(scores).shape)
print("np.argmax:", np.argmax(scores), "np.where:", np.where(scores > 2))

for name in ("mean", "sum", "prod"):
    try:
        getattr(np, name)(scores)
    except TypeError as err:
        print(f"np.{name}(tensor) -> TypeError,", "object at 0x" in str(err))
    print(f"np.{name}(tensor.numpy()) =", round(float(getattr(np, name)(scores.numpy())), 4))

# The same reductions spelled the PyTorch way, with numpy's keyword names too.
print("mean(axis=0):", scores.mean(axis=0))
print("sum(1, keepdims=True):", scores.sum(1, keepdims=True))
print("prod(dim=1):", scores.prod(dim=1))

for label, call in (("mean(bogus=1)", lambda: scores.mean(bogus=1)),
                    ("torch.sum(x, bogus=1)", lambda: torch.sum(scores, bogus=1)),
                    ("tensor_split(bogus=1)", lambda: scores.tensor_split(bogus=1)),
                    ("sum(0, keepdim=1)", lambda: scores.sum(0, keepdim=1))):
    try:
        call()
    except TypeError as err:
        print(label, "->", str(err).strip().replace("\n", " | "))
