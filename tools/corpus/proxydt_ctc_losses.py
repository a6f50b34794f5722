import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# inputs drawn with NumPy so that the printed losses do not depend on torch's random stream
rng = np.random.default_rng(0)


def randn(*shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def randint(low, high, size, dtype=torch.long):
    return torch.from_numpy(rng.integers(low, high, size)).to(dtype)

T, C, N, S = 50, 20, 16, 30
S_min = 10
input = randn(T, N, C).log_softmax(2).detach().requires_grad_()
target = randint(low=1, high=C, size=(N, S), dtype=torch.long)
input_lengths = torch.full(size=(N,), fill_value=T, dtype=torch.long)
target_lengths = randint(low=S_min, high=S, size=(N,), dtype=torch.long)
for red in ["mean", "sum", "none"]:
    ctc_loss = nn.CTCLoss(reduction=red)
    loss = ctc_loss(input, target, input_lengths, target_lengths)
    print(red, loss.shape, loss.dtype, loss.sum().item() if red == "none" else round(loss.item(), 4))
ctc_loss = nn.CTCLoss()
loss = ctc_loss(input, target, input_lengths, target_lengths)
loss.backward()
print(input.grad.shape, input.grad.abs().sum().item())
print(ctc_loss)
print(repr(nn.CTCLoss(blank=5, reduction='sum', zero_infinity=True)))

# Target are to be un-padded
T = 50
C = 20
N = 16
input = randn(T, N, C).log_softmax(2).detach().requires_grad_()
input_lengths = torch.full(size=(N,), fill_value=T, dtype=torch.long)
target_lengths = randint(low=1, high=T, size=(N,), dtype=torch.long)
target = randint(low=1, high=C, size=(sum(target_lengths),), dtype=torch.long)
ctc_loss = nn.CTCLoss()
loss = ctc_loss(input, target, input_lengths, target_lengths)
loss.backward()
print(loss.item(), torch.isfinite(input.grad).all().item())

# unbatched
T, C = 50, 20
input = randn(T, C).log_softmax(1).detach().requires_grad_()
input_lengths = torch.tensor(T, dtype=torch.long)
target_lengths = randint(low=1, high=T, size=(), dtype=torch.long)
target = randint(low=1, high=C, size=(target_lengths,), dtype=torch.long)
loss = nn.CTCLoss()(input, target, input_lengths, target_lengths)
loss.backward()
print(loss.shape, loss.item(), input.grad.shape)

# int32 lengths and tuples
input = randn(T, 4, C).log_softmax(2)
tgt = randint(1, C, (4, 10), dtype=torch.int32)
l = F.ctc_loss(input, tgt, torch.full((4,), T, dtype=torch.int32), torch.tensor([10, 8, 5, 3], dtype=torch.int32))
print(l.item(), l.dtype)
l2 = F.ctc_loss(input, tgt, (T,) * 4, (10, 8, 5, 3), reduction='none')
print(l2)
l3 = F.ctc_loss(input, tgt, [T] * 4, [10, 8, 5, 3], reduction='sum')
print(l3)

T, N, C = 12, 2, 5
lp = randn(T, N, C).log_softmax(-1)
tg = randint(1, C, (N, 6))

def tryit(name, fn):
    try:
        r = fn()
        print(name, "ok", r)
    except Exception as e:
        print(name, type(e).__name__, str(e).split("\n")[0][:120])

tryit("too long target", lambda: F.ctc_loss(lp, randint(1, C, (N, 20)), torch.tensor([T, T]), torch.tensor([20, 20])))
tryit("inf loss", lambda: F.ctc_loss(lp, tg, torch.tensor([3, 3]), torch.tensor([6, 6]), reduction='none'))
tryit("zero_inf", lambda: F.ctc_loss(lp, tg, torch.tensor([3, 3]), torch.tensor([6, 6]), reduction='none', zero_infinity=True))
tryit("input len > T", lambda: F.ctc_loss(lp, tg, torch.tensor([T + 1, T]), torch.tensor([6, 6])))
tryit("bad blank", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T]), torch.tensor([6, 6]), blank=C))
tryit("neg blank", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T]), torch.tensor([6, 6]), blank=-1))
tryit("bad red", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T]), torch.tensor([6, 6]), reduction='avg'))
tryit("float lengths", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T], dtype=torch.float), torch.tensor([6, 6])))
tryit("wrong batch lens", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T, T]), torch.tensor([6, 6])))
tryit("float targets", lambda: F.ctc_loss(lp, tg.float(), torch.tensor([T, T]), torch.tensor([6, 6])))
tryit("2d lp batch", lambda: F.ctc_loss(lp[:, 0], tg, torch.tensor([T, T]), torch.tensor([6, 6])))
tryit("target len > S", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T]), torch.tensor([7, 6])))
tryit("neg len", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T]), torch.tensor([-1, 6])))
tryit("double", lambda: F.ctc_loss(lp.double(), tg, torch.tensor([T, T]), torch.tensor([6, 6])).dtype)
tryit("repeat target", lambda: F.ctc_loss(lp, torch.full((N, 6), 2), torch.tensor([T, T]), torch.tensor([6, 6]), reduction='none'))
tryit("repeat target tight", lambda: F.ctc_loss(lp, torch.full((N, 6), 2), torch.tensor([11, T]), torch.tensor([6, 6]), reduction='none'))
tryit("zero target len", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T]), torch.tensor([0, 6]), reduction='none'))
tryit("zero target len mean", lambda: F.ctc_loss(lp, tg, torch.tensor([T, T]), torch.tensor([0, 6])))
tryit("concatenated extra label", lambda: F.ctc_loss(lp, tg.flatten()[:9], torch.tensor([T, T]), torch.tensor([4, 4])))
tryit("unbatched extra label", lambda: F.ctc_loss(lp[:, 0], tg[0], torch.tensor(T), torch.tensor(5)))
tryit("3-d targets", lambda: F.ctc_loss(lp, tg[None], torch.tensor([T, T]), torch.tensor([6, 6])))
tryit("zero input len", lambda: F.ctc_loss(lp, tg, torch.tensor([0, T]), torch.tensor([0, 6]), reduction='none'))
# not log-softmaxed
x = randn(T, N, C).requires_grad_()
l = F.ctc_loss(x, tg, torch.tensor([T, T]), torch.tensor([6, 6]))
l.backward()
print("raw logits", round(l.item(), 4), round(x.grad.sum().item(), 4))
# zero_infinity grad
x = randn(T, N, C).requires_grad_()
l = F.ctc_loss(x.log_softmax(2), tg, torch.tensor([3, T]), torch.tensor([6, 6]), zero_infinity=True)
l.backward()
print("zinf", round(l.item(), 4), x.grad[:, 0].abs().sum().item(), round(x.grad[:, 1].abs().sum().item(), 4))
x.grad = None
l = F.ctc_loss(x.log_softmax(2), tg, torch.tensor([3, T]), torch.tensor([6, 6]))
l.backward()
print("inf", l.item(), torch.isnan(x.grad).any().item(), x.grad[:, 0].abs().sum().item())
