"""Homework-style checker for reduction helpers: a student's `reduce(x, op, dim=None)` forwards
dim to the tensor method, and the grader reports which combinations PyTorch accepts, with the
error it raises for the others (an int dim given as None is refused by max/min/prod/median and
softmax, while sum/mean/std/amax/argmax read None as "every dim")."""
import torch

x = torch.tensor([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0], [1.0, 1.0, 0.0]])


def reduce(t, op, dim=None, forward_none=False):
    """The student's helper: forwards dim, or (forward_none) forwards it even when it is None."""
    if dim is None and not forward_none:
        return getattr(t, op)()
    return getattr(t, op)(dim=dim)


def grade(label, fn):
    try:
        out = fn()
    except TypeError as err:
        print(f"{label:<34} TypeError: {str(err).splitlines()[0]}")
        return
    if isinstance(out, tuple):
        print(f"{label:<34} values={out[0].tolist()} indices={out[1].tolist()}")
    else:
        print(f"{label:<34} {out.tolist()}")


for op in ["max", "min", "prod", "median", "nanmedian", "sum", "mean", "std", "amax", "argmax",
           "count_nonzero"]:
    grade(f"{op}()", lambda: reduce(x, op))
    grade(f"{op}(dim=1)", lambda: reduce(x, op, 1))
    grade(f"{op}(dim=None) forwarded", lambda: reduce(x, op, None, forward_none=True))

grade("max(None, keepdim=True)", lambda: x.max(None, keepdim=True))
grade("prod(None, dtype=float64)", lambda: x.prod(None, dtype=torch.float64))
grade("torch.median(x, None)", lambda: torch.median(x, None))
grade("torch.max(x, dim=None)", lambda: torch.max(x, dim=None))
grade("softmax(None)", lambda: x.softmax(None))
grade("torch.log_softmax(x, None)", lambda: torch.log_softmax(x, None))
grade("softmax(1)", lambda: x.softmax(1).sum(1))
grade("F.softmax(x, dim=None) (implicit)",
      lambda: torch.nn.functional.softmax(x, dim=None, _stacklevel=3).sum(1))

# the all-element reductions still differentiate
w = x.clone().requires_grad_()
(w.max() + w.prod() + w.median()).backward()
print("grad of max+prod+median:", w.grad.tolist())
