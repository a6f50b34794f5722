"""What pre-1.0 tutorials hit today: each old idiom raises under current PyTorch, and a script
that catches the error (or a user reading it) sees the same exception type and key words."""
import io

import torch
import torch.nn as nn


def attempt(label, fn):
    try:
        out = fn()
        print(label, "ok", out)
    except Exception as e:  # the point is which exception and what it says
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(label, type(e).__name__, "|", first[:70])


loss = (torch.ones(3, requires_grad=True) * 2).sum()
attempt("loss.data[0]", lambda: loss.data[0])
attempt("loss.item()", lambda: loss.item())
attempt("dot of 2-d", lambda: torch.dot(torch.ones(2, 2), torch.ones(2, 2)))
attempt("cuda()", lambda: torch.ones(2).cuda())
attempt("Module.cuda()", lambda: nn.Linear(2, 2).cuda())
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(4.0)), batch_size=2)
attempt("iter(loader).next()", lambda: iter(loader).next())
attempt("next(iter(loader))", lambda: next(iter(loader)))

net = nn.Sequential(nn.Linear(2, 2))
buf = io.BytesIO()
torch.save(net, buf)
buf.seek(0)
attempt("load whole model", lambda: type(torch.load(buf)).__name__)
buf.seek(0)
attempt("load weights_only=False", lambda: type(torch.load(buf, weights_only=False)).__name__)

w = torch.ones(3, 1, requires_grad=True)
h = torch.ones(2, 3) @ w
out = torch.sigmoid(h)
out.mul_(2)   # modifies sigmoid's saved output: backward must refuse
attempt("inplace after save", lambda: out.sum().backward())
attempt("volatile", lambda: torch.autograd.Variable(torch.ones(1), volatile=True).requires_grad)
attempt("float of 3 values", lambda: float(torch.ones(3)))
attempt("x.data[0] of vector", lambda: torch.arange(3.0).data[0])
