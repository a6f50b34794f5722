"""Autograd and checkpoint errors a Q&A answer walks through: the in-place version error, backward
twice, non-scalar backward, .numpy() of a tensor that needs grad, leaf updates outside no_grad,
and load_state_dict's missing / unexpected / size-mismatched keys."""
import torch
import torch.nn as nn

torch.manual_seed(0)


def attempt(title, fn):
    try:
        out = fn()
    except Exception as e:
        print(f"--- {title}\n{type(e).__name__}: {e}")
    else:
        print(f"--- {title}\nok: {out}")


def version_error():
    w = torch.ones(3, requires_grad=True)
    h = torch.sigmoid(w)
    out = h * 2
    h.mul_(3)           # sigmoid saved its output: now modified
    out.sum().backward()
attempt("in-place on a saved output", version_error)


def version_error_exp():
    w = torch.ones(2, 2, requires_grad=True)
    e = w.exp()
    e += 1
    e.sum().backward()
attempt("in-place += on exp's result", version_error_exp)


def twice():
    w = torch.ones(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()
attempt("backward twice", twice)


def twice_retained():
    w = torch.ones(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return w.grad.tolist()
attempt("backward twice with retain_graph", twice_retained)

attempt("non-scalar backward", lambda: (torch.ones(3, requires_grad=True) * 2).backward())
attempt("backward without grad", lambda: (torch.ones(3) * 2).sum().backward())
attempt(".numpy() needing grad", lambda: torch.ones(3, requires_grad=True).numpy())
attempt(".detach().numpy()", lambda: torch.ones(3, requires_grad=True).detach().numpy().tolist())


def leaf_update():
    w = torch.ones(3, requires_grad=True)
    w -= 0.1
attempt("in-place update of a leaf", leaf_update)


def leaf_update_no_grad():
    w = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        w -= 0.1
    return (w.requires_grad, w.is_leaf, round(w.sum().item(), 4))
attempt("leaf update under no_grad", leaf_update_no_grad)

attempt("optimizer of a non-leaf",
        lambda: torch.optim.SGD([torch.ones(2, requires_grad=True) * 2], lr=0.1))
attempt("optimizer of a tensor", lambda: torch.optim.SGD(torch.ones(2, requires_grad=True), lr=0.1))


class Net(nn.Module):
    def __init__(self, hidden=4):
        super().__init__()
        self.encoder = nn.Linear(3, hidden)
        self.head = nn.Linear(hidden, 2)

    def forward(self, x):
        return self.head(self.encoder(x).relu())


model = Net()
attempt("checkpoint of another width", lambda: model.load_state_dict(Net(hidden=6).state_dict()))
state = Net().state_dict()
state["classifier.weight"] = state.pop("head.weight")
attempt("renamed layer", lambda: model.load_state_dict(state))
print("strict=False ->", model.load_state_dict(state, strict=False))
wrapped = {"module." + k: v for k, v in Net().state_dict().items()}
attempt("DataParallel prefix", lambda: model.load_state_dict(wrapped))
print("stripped ->", model.load_state_dict({k.removeprefix("module."): v
                                             for k, v in wrapped.items()}))
attempt("forward with two inputs", lambda: model(torch.ones(1, 3), torch.ones(1, 3)))
attempt("forward without input", lambda: model())
