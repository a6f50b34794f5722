"""Pruning with torch.nn.utils.prune on a small conv net with deterministic weights: l1 / ln
(n=1, 2, inf, 'fro', dims 0, 1, -1) / identity pruning with float and int amounts, a custom
BasePruningMethod (structured, by row norm, applied through .apply), iterative pruning that
builds a PruningContainer, importance_scores, global_unstructured (L1 and with per-parameter
importance scores), custom_from_mask, a lottery-ticket rewind of weight_orig, training through
the mask (weight_orig.grad), prune.remove, state_dict keys of pruned models, load_state_dict
strict=False into an unpruned model (missing / unexpected keys), and the errors for a bad
amount or a missing parameter."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune


def fill(module, phase=0.0, scale=0.4):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float64)
            p.copy_((torch.sin(k * 1.3 + i + phase) * scale).reshape(p.shape))
    return module


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3)
        self.conv2 = nn.Conv2d(4, 6, 3)
        self.fc1 = nn.Linear(6 * 2 * 2, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class RowNormPruning(prune.BasePruningMethod):
    """Zeroes the `amount` fraction of rows (dim 0 slices) with the smallest L2 norm."""
    PRUNING_TYPE = "structured"
    dim = 0

    def __init__(self, amount):
        self.amount = amount

    def compute_mask(self, t, default_mask):
        norms = t.flatten(1).norm(dim=1)
        k = round(self.amount * norms.numel())
        mask = default_mask.clone()
        if k:
            mask[torch.topk(norms, k, largest=False).indices] = 0
        return mask


def sparsity(t):
    return round(100.0 * float((t == 0).sum()) / t.numel(), 2)


x = torch.linspace(-1, 1, 2 * 2 * 6 * 6).reshape(2, 2, 6, 6)
target = torch.tensor([0, 2])
net = fill(Small())
init_state = copy.deepcopy(net.state_dict())
print("dense out", net(x))

prune.l1_unstructured(net.conv1, "weight", amount=0.3)
prune.l1_unstructured(net.conv2, name="weight", amount=20)
print("params of conv1", [n for n, _ in net.conv1.named_parameters()])
print("buffers", [n for n, _ in net.named_buffers()])
print("sparsity", sparsity(net.conv1.weight), sparsity(net.conv2.weight))
print("is_pruned", prune.is_pruned(net), prune.is_pruned(net.fc2))

RowNormPruning.apply(net.fc1, "weight", amount=0.25)
print("fc1 rows kept", net.fc1.weight_mask.sum(1))
prune.ln_structured(net.conv2, "weight", amount=0.5, n=2, dim=0)
hook = next(h for h in net.conv2._forward_pre_hooks.values() if h._tensor_name == "weight")
print(type(hook).__name__, [type(h).__name__ for h in hook])
print("conv2 filters kept", net.conv2.weight_mask.sum(dim=(1, 2, 3)))
print("state_dict keys", list(net.state_dict().keys()))
print("pruned out", net(x))

for n, dim in ((1, 1), (float("inf"), 0), (2, -1), (float("-inf"), 1)):
    c = fill(nn.Conv2d(3, 4, 2))
    prune.ln_structured(c, "weight", amount=0.34, n=n, dim=dim)
    other = tuple(d for d in range(4) if d != dim % 4)
    print("ln", n, dim, c.weight_mask.sum(dim=other))

scored = fill(nn.Linear(4, 3))
prune.l1_unstructured(scored, "weight", amount=5,
                      importance_scores=torch.arange(12.0).flip(0).reshape(3, 4))
print("importance mask", scored.weight_mask)
prune.identity(scored, "bias")
print("identity mask", scored.bias_mask)
fro = fill(nn.Linear(5, 4))
prune.ln_structured(fro, "weight", amount=2, n="fro", dim=1)
print("fro columns kept", fro.weight_mask.sum(0))

net2 = fill(Small(), phase=0.5)
params = [(net2.conv1, "weight"), (net2.conv2, "weight"), (net2.fc1, "weight"), (net2.fc2, "weight")]
prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=0.4)
for m, name in params:
    print("global", type(m).__name__, sparsity(getattr(m, name)))
total = sum(int((m.weight == 0).sum()) for m, _ in params)
print("global total zeros", total, "of", sum(m.weight.numel() for m, _ in params))
a, b = fill(nn.Linear(4, 3)), fill(nn.Linear(3, 2), phase=1.0)
scores = {(a, "weight"): a.weight.detach().abs() * 3, (b, "weight"): b.weight.detach().abs()}
prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured,
                          importance_scores=scores, amount=7)
print("scored global", a.weight_mask.sum(), b.weight_mask.sum())

masks = {n: buf.clone() for n, buf in net.named_buffers() if n.endswith("weight_mask")}
for name, m in net.named_modules():
    if hasattr(m, "weight_orig"):
        m.weight_orig.data.copy_(init_state[name + ".weight"])
rewound = fill(Small())
for name, m in rewound.named_modules():
    if name + ".weight_mask" in masks:
        prune.custom_from_mask(m, "weight", masks[name + ".weight_mask"])
print("rewind equal", torch.allclose(rewound(x), net(x)))

opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), target)
    loss.backward()
    opt.step()
    print("step", step, round(loss.item(), 6), sparsity(net.conv1.weight),
          float(net.conv1.weight_orig.grad.abs().sum()))
print("grad kept only where unmasked",
      bool(((net.fc1.weight_orig.grad != 0) <= net.fc1.weight_mask.bool()).all()))

for m in (net.conv1, net.conv2, net.fc1):
    prune.remove(m, "weight")
print("after remove", list(net.state_dict().keys()))
print("weight is Parameter", isinstance(net.conv2.weight, nn.Parameter), sparsity(net.conv2.weight))

plain = Small()
result = plain.load_state_dict(rewound.state_dict(), strict=False)
print("missing", result.missing_keys)
print("unexpected", result.unexpected_keys)
for bad in (1.5, -2, 1000):
    try:
        prune.l1_unstructured(fill(nn.Linear(3, 3)), "weight", amount=bad)
    except ValueError as e:
        print("ValueError", e)
try:
    prune.random_unstructured(nn.Linear(2, 2), "kernel", amount=0.5)
except AttributeError as e:
    print("AttributeError", e)
try:
    prune.remove(nn.Linear(2, 2), "weight")
except ValueError as e:
    print("ValueError", e)
