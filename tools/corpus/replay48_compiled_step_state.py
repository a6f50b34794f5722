# State a compiled training step changes or reads, as scripts write it under torch.compile:
# the AMP recipe's GradScaler (scale, step, update inside the compiled step, on the CPU), a
# hand-written zero_grad (`p.grad = None`), a dropout rate and a LeakyReLU slope changed between
# epochs (a schedule on the layers' attributes), an evaluation function that switches the model
# to eval() inside, and the last batch's logits kept in a global.  Each is printed after every
# call: a compiled function must leave the same state as eager.
# backend="eager": dynamo's tracing without inductor's code generation (the corpus's timeout).
import torch
import torch.nn as nn


def init(model):
    """Deterministic weights (the two libraries' random streams differ)."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            n = p.numel()
            p.copy_((0.4 * torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + i))
                    .reshape(p.shape))
    return model


def wave(*shape, k=1.3):
    n = 1
    for d in shape:
        n *= d
    return torch.sin(torch.arange(n, dtype=torch.float64) * k).reshape(shape).float()


model = init(nn.Sequential(nn.Linear(6, 16), nn.LeakyReLU(0.1), nn.Dropout(0.0),
                           nn.Linear(16, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=2)
loss_fn = nn.CrossEntropyLoss()
last_logits = None


@torch.compile(backend="eager")
def train_step(x, y):
    global last_logits
    for p in model.parameters():
        p.grad = None
    logits = model(x)
    last_logits = logits.detach()
    loss = loss_fn(logits, y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return loss


@torch.compile(backend="eager")
def evaluate(x, y):
    model.eval()
    with torch.no_grad():
        logits = model(x)
    return (logits.argmax(1) == y).float().mean()


xs = [wave(8, 6, k=0.3 + 0.2 * i) for i in range(4)]
ys = [torch.tensor([(3 * j + i) % 3 for j in range(8)]) for i in range(4)]
for epoch in range(3):
    model[1].negative_slope = 0.1 * (epoch + 1)     # a schedule on the layers' attributes
    model.train()
    for x, y in zip(xs, ys):
        loss = train_step(x, y)
        print(f"epoch {epoch} loss {loss.item():.4f} scale {scaler.get_scale():.0f} "
              f"last logits sum {last_logits.sum().item():.4f}")
    acc = evaluate(xs[0], ys[0])
    print(f"epoch {epoch} accuracy {acc.item():.3f} training {model.training} "
          f"dropout training {model[2].training}")
print("weight sum", round(model[0].weight.sum().item(), 4),
      "grad is None", model[0].weight.grad is None)
