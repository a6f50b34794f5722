"""Inspired by FunctionLab/selene's DeepSEA/DanQ models and its NonStrandSpecific wrapper:
DNA strings turned into tensors (bytes through a 256-entry lookup table, index_select of an
identity, F.one_hot), the reverse complement by flipping both axes, a dilated Conv1d motif
scanner with MaxPool1d / AdaptiveMaxPool1d, a BiLSTM over the pooled positions, weight
renorm_ before each forward as DeepSEA does, BCEWithLogitsLoss with pos_weight (and its
sigmoid + BCELoss twin), a few SGD steps and evaluation with strand averaging.  Weights and
data are deterministic (sin/numpy), so the printed losses do not depend on the random stream."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

# ---- sequences to tensors ---------------------------------------------------------------------
seqs = ["ACGTTGCAACGTAGGCTTACGATCGATCGGATCCAGT", "TTTTACGTGCAAGGCTAGCTAGCTTAGGCATCGATCCA",
        "GGGCCCAATTACGTGCAGTCAGTCAGTACGTTGCAAGT", "ACGTNNACGTACGTTTGCAACGTGCACGTGCATGCAAT"]
L = min(len(s) for s in seqs)
seqs = [s[:L] for s in seqs]
table = torch.full((256,), 4, dtype=torch.long)              # N and anything else -> 4
table[torch.tensor(list(b"ACGT"))] = torch.arange(4)
codes = table[torch.tensor([list(s.encode()) for s in seqs])]  # (B, L) int64
print("codes", codes.shape, codes.dtype, codes[3, :8].tolist())
eye5 = torch.cat([torch.eye(4), torch.full((1, 4), 0.25)])    # N -> uniform
x_lookup = torch.index_select(eye5, 0, codes.flatten()).view(len(seqs), L, 4).transpose(1, 2)
x_onehot = F.one_hot(codes.clamp(max=3), num_classes=4).permute(0, 2, 1).float()
print("one-hot agree except N:", (x_lookup != x_onehot).any(1).sum().item())
x = x_lookup.contiguous()
rc = torch.flip(x, dims=[1, 2])                               # reverse complement (ACGT order)
comp = {"A": "T", "C": "G", "G": "C", "T": "A", "N": "N"}
rc_str = "".join(comp[c] for c in reversed(seqs[0]))
print("rc ok:", torch.equal(rc[0].argmax(0), table[torch.tensor(list(rc_str.encode()))].clamp(max=3)))


def det_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float32).view(p.shape)
            p.copy_(torch.sin(k * 0.37 + i) * scale)
    return module


class MotifNet(nn.Module):
    def __init__(self, n_targets=3, hidden=6):
        super().__init__()
        self.scan = nn.Sequential(
            nn.Conv1d(4, 8, kernel_size=5, dilation=2, padding=4), nn.ReLU(inplace=True),
            nn.MaxPool1d(kernel_size=3, stride=3), nn.BatchNorm1d(8))
        self.lstm = nn.LSTM(8, hidden, batch_first=True, bidirectional=True)
        self.glob = nn.AdaptiveMaxPool1d(1)
        self.head = nn.Linear(2 * hidden + 8, n_targets)

    def forward(self, x):
        for layer in self.modules():
            if isinstance(layer, (nn.Conv1d, nn.Linear)):
                layer.weight.data.renorm_(2, 0, 0.9)
        h = self.scan(x)                                       # (B, 8, L')
        seq_out, _ = self.lstm(h.transpose(1, 2))              # (B, L', 2H)
        motif = self.glob(h).squeeze(-1)                       # (B, 8)
        return self.head(torch.cat([seq_out[:, -1], motif], 1))


class NonStrandSpecific(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return (self.model(x) + self.model(torch.flip(x, dims=[1, 2]))) / 2


net = NonStrandSpecific(det_(MotifNet(), 0.4))
y = torch.tensor([[1., 0., 0.], [0., 1., 0.], [1., 1., 0.], [0., 0., 1.]])
pos_weight = (y.shape[0] - y.sum(0)) / y.sum(0)
print("pos_weight", pos_weight)
crit = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-6)
for step in range(4):
    opt.zero_grad()
    logits = net(x)
    loss = crit(logits, y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f} conv-grad {net.model.scan[0].weight.grad.norm():.5f}")
w = net.model.scan[0].weight.detach()
print("renormed rows <= 0.9:", bool((w.flatten(1).norm(dim=1) <= 0.9 + 1e-6).all()))

net.eval()
with torch.no_grad():
    logits = net(x)
    probs = torch.sigmoid(logits)
    print("probs", probs)
    print("bce pair:", F.binary_cross_entropy_with_logits(logits, y).item(),
          F.binary_cross_entropy(probs, y).item())
    per = F.binary_cross_entropy_with_logits(logits, y, pos_weight=pos_weight, reduction="none")
    print("per-target", per.mean(0))
    pooled, where = F.adaptive_max_pool1d(net.model.scan(x), 1, return_indices=True)
    print("motif hits at", where.squeeze(-1)[0].tolist())
    print("rc symmetric:", torch.allclose(net(x), net(rc), atol=1e-6))
try:
    F.max_pool1d(x, 3, padding=2)
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    F.adaptive_max_pool1d(x, None)
except TypeError as e:
    print("TypeError:", e)
