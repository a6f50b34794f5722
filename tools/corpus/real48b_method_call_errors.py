"""Lecture-notebook cell that shows beginners' call mistakes on tensor methods and prints each
error, as a 'common pitfalls' section does: in-place activations called with arguments, reductions
given dim=None, and the corrected calls."""
import torch

torch.manual_seed(0)
h = torch.linspace(-2.0, 2.0, 6).reshape(2, 3)

pitfalls = [
    ("h.relu_(0.1)", lambda: h.clone().relu_(0.1)),
    ("h.sigmoid_(inplace=True)", lambda: h.clone().sigmoid_(inplace=True)),
    ("h.exp_(2)", lambda: h.clone().exp_(2)),
    ("h.tanh_(h)", lambda: h.clone().tanh_(h)),
    ("h.neg_(out=None)", lambda: h.clone().neg_(out=None)),
    ("h.exp(2)", lambda: h.exp(2)),
    ("h.max(dim=None)", lambda: h.max(dim=None)),
    ("h.min(None, True)", lambda: h.min(None, True)),
    ("h.median(dim=None)", lambda: h.median(dim=None)),
    ("torch.softmax(h, dim=None)", lambda: torch.softmax(h, dim=None)),
]
for label, call in pitfalls:
    try:
        call()
        print(f"{label}: no error")
    except TypeError as err:
        print(f"{label}: {type(err).__name__}: {str(err).splitlines()[0]}")

fixed = h.clone()
fixed.relu_()
print("relu_:", fixed)
print("exp_:", h.clone().exp_())
print("max over all:", h.max(), "max over dim 1:", h.max(dim=1).values)
print("median over dim 0:", h.median(dim=0))
print("softmax rows:", torch.softmax(h, dim=1))
