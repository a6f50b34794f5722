# A whole training step under torch.compile, as the PyTorch 2 tutorials and many training
# scripts write it: zero_grad, forward, loss, backward, gradient clipping, the optimizer's and
# the scheduler's step, all in one compiled function, called over a few batches.  A small CNN
# with Adam (amsgrad) + clipping + StepLR, an LSTM with SGD (momentum, nesterov), an MLP that
# accumulates gradients (no zero_grad inside) and zeroes them outside with set_to_none=False.
# backend="eager" (dynamo's tracing without inductor's code generation): the default backend
# takes PyTorch two minutes to compile these three steps on a loaded CPU, the corpus's timeout.
import torch
import torch.nn as nn
import torch.nn.functional as F



def init(model):
    """Deterministic weights (the two libraries' random streams differ)."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            n = p.numel()
            p.copy_((0.4 * torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + i)).reshape(p.shape))
    return model


def wave(*shape, k=1.3, dtype=torch.float32):
    n = 1
    for d in shape:
        n *= d
    return torch.sin(torch.arange(n, dtype=torch.float64) * k).reshape(shape).to(dtype)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 2 * 2, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


cnn = init(SmallCNN())
opt = torch.optim.Adam(cnn.parameters(), lr=0.01, amsgrad=True, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)


@torch.compile(backend="eager")
def cnn_step(x, y):
    opt.zero_grad()
    loss = F.cross_entropy(cnn(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(cnn.parameters(), 1.0)
    opt.step()
    sched.step()
    return loss


xs = wave(6, 8, 1, 8, 8)
ys = torch.arange(48).reshape(6, 8) * 7 % 3
for i in range(6):
    loss = cnn_step(xs[i], ys[i])
    print(f"cnn step {i}: loss {loss.item():.5f} lr {opt.param_groups[0]['lr']:.5f} "
          f"conv1 {cnn.conv1.weight.sum().item():.5f} exp_avg_sq "
          f"{opt.state[cnn.fc.weight]['max_exp_avg_sq'].sum().item():.6e}")


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.out = nn.Linear(8, 4)

    def forward(self, t):
        h, _ = self.lstm(self.emb(t))
        return self.out(h)


tagger = init(Tagger())
sgd = torch.optim.SGD(tagger.parameters(), lr=0.1, momentum=0.9, nesterov=True)


@torch.compile(backend="eager")
def tagger_step(t, y):
    sgd.zero_grad(set_to_none=True)
    logits = tagger(t)
    loss = F.cross_entropy(logits.reshape(-1, 4), y.reshape(-1))
    loss.backward()
    sgd.step()
    return loss


tokens = torch.arange(60).reshape(4, 3, 5) * 7 % 10
tags = torch.arange(60).reshape(4, 3, 5) * 5 % 4
for i in range(4):
    loss = tagger_step(tokens[i], tags[i])
    buf = sgd.state[tagger.out.weight]["momentum_buffer"]
    print(f"lstm step {i}: loss {loss.item():.5f} out.weight {tagger.out.weight.abs().sum().item():.5f} "
          f"momentum {buf.abs().sum().item():.5f}")

mlp = init(nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1)).double())
rms = torch.optim.RMSprop(mlp.parameters(), lr=0.01, centered=True)


@torch.compile(backend="eager")
def accumulate(x, y):
    loss = F.mse_loss(mlp(x), y) / 2
    loss.backward()
    return loss


data = wave(8, 4, 5, dtype=torch.float64)
target = wave(8, 4, 1, k=0.37, dtype=torch.float64)
for i in range(0, 8, 2):
    total = accumulate(data[i], target[i]) + accumulate(data[i + 1], target[i + 1])
    grad_norm = sum(p.grad.norm() ** 2 for p in mlp.parameters()) ** 0.5
    rms.step()
    rms.zero_grad(set_to_none=False)
    print(f"accumulated {i // 2}: loss {total.item():.8f} grad norm {grad_norm.item():.8f} "
          f"grads zeroed {all(p.grad is not None and p.grad.abs().sum().item() == 0 for p in mlp.parameters())}")
