import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(42)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

class SkipConnection(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module
    def forward(self, x):
        return x + self.module(x)

class Normalization(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.BatchNorm1d(d, affine=True)
    def forward(self, x):
        return self.norm(x.view(-1, x.size(-1))).view(*x.size())

class MHA(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True)
    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]

class Encoder(nn.Sequential):
    def __init__(self, d=16, heads=4, layers=2):
        mods = []
        for _ in range(layers):
            mods += [SkipConnection(MHA(d, heads)), Normalization(d),
                     SkipConnection(nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, d))),
                     Normalization(d)]
        super().__init__(*mods)

class AttentionModel(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.init_embed = nn.Linear(2, d)
        self.encoder = Encoder(d)
        self.project_node = nn.Linear(d, 3 * d, bias=False)
        self.project_ctx = nn.Linear(d, d, bias=False)
        self.project_step = nn.Linear(2 * d, d, bias=False)
        self.W_placeholder = nn.Parameter(torch.zeros(2 * d))
        self.d = d
        with torch.no_grad():
            for k, p in enumerate(self.parameters()):
                n = p.numel()
                p.copy_((torch.arange(n, dtype=torch.float32) * 0.61803 + k).sin().reshape(p.shape) * (1.0 / math.sqrt(max(p.shape[-1], 1))))

    def forward(self, loc, decode="greedy"):
        B, n, _ = loc.shape
        emb = self.encoder(self.init_embed(loc))
        graph = emb.mean(1)
        gK, gV, lK = self.project_node(emb).chunk(3, dim=-1)
        fixed_ctx = self.project_ctx(graph)[:, None, :]
        visited = torch.zeros(B, 1, n, dtype=torch.uint8)
        first = prev = None
        outputs, seq = [], []
        for i in range(n):
            if i == 0:
                step_ctx = self.W_placeholder[None, None, :].expand(B, 1, -1)
            else:
                step_ctx = torch.gather(emb, 1, torch.cat((first, prev), 1)[:, :, None].expand(B, 2, emb.size(-1))).view(B, 1, -1)
            q = fixed_ctx + self.project_step(step_ctx)
            compat = torch.matmul(q, gK.transpose(-2, -1)) / math.sqrt(self.d)
            compat[visited.bool()] = -math.inf
            glimpse = torch.matmul(torch.softmax(compat, dim=-1), gV)
            logits = torch.matmul(glimpse, lK.transpose(-2, -1)).squeeze(-2) / math.sqrt(self.d)
            logits = torch.tanh(logits) * 10.
            logits[visited.squeeze(1).bool()] = -math.inf
            log_p = torch.log_softmax(logits, dim=-1)
            if decode == "greedy":
                _, selected = log_p.exp().max(1)
            else:
                selected = log_p.exp().multinomial(1).squeeze(1)
            visited = visited.scatter(-1, selected[:, None, None], 1)
            if first is None:
                first = selected[:, None]
            prev = selected[:, None]
            outputs.append(log_p)
            seq.append(selected)
        _log_p, pi = torch.stack(outputs, 1), torch.stack(seq, 1)
        ll = _log_p.gather(2, pi.unsqueeze(-1)).squeeze(-1).sum(1)
        return pi, ll

def get_costs(dataset, pi):
    assert (torch.arange(pi.size(1), out=pi.data.new()).view(1, -1).expand_as(pi) ==
            pi.data.sort(1)[0]).all(), "Invalid tour"
    d = dataset.gather(1, pi.unsqueeze(-1).expand_as(dataset))
    return (d[:, 1:] - d[:, :-1]).norm(p=2, dim=2).sum(1) + (d[:, 0] - d[:, -1]).norm(p=2, dim=1)

n = 7
base = torch.arange(4 * n * 2, dtype=torch.float32).reshape(4, n, 2)
loc = (torch.sin(base * 1.7) + 1) / 2
model = AttentionModel().to(device)
model.eval()
with torch.no_grad():
    pi, ll = model(loc)
print("pi", pi)
print("cost", get_costs(loc, pi))
print("ll", ll)
model.train()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
bl = None
for step in range(3):
    pi, ll = model(loc)
    cost = get_costs(loc, pi)
    bl = cost.mean().detach() if bl is None else 0.8 * bl + 0.2 * cost.mean().detach()
    reinforce = ((cost - bl) * ll).mean()
    opt.zero_grad()
    reinforce.backward()
    norms = [torch.nn.utils.clip_grad_norm_(g["params"], 1.0, norm_type=2) for g in opt.param_groups]
    opt.step()
    print(step, "cost", round(cost.mean().item(), 4), "grad norm", round(norms[0].item(), 4))
pi, _ = model(loc, decode="sample")
print(pi.shape, get_costs(loc, pi).shape)
print(sum(p.numel() for p in model.parameters() if p.requires_grad))
