"""Distogram and pLDDT heads as in AlphaFold2 / OpenFold reimplementations: bucketized pair
distances, masked cross-entropy over pairs, lDDT-based binning, expected values over bins."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import numpy as np
_rs = np.random.RandomState(0)
def rnd(*s, dtype=None):
    return torch.tensor(_rs.standard_normal(s), dtype=dtype or torch.float32)
def reinit(m):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(rnd(*p.shape) * 0.3)

def distogram_loss(logits, pseudo_beta, pseudo_beta_mask, min_bin=2.3125, max_bin=21.6875, no_bins=64, eps=1e-6):
    boundaries = torch.linspace(min_bin, max_bin, no_bins - 1, device=logits.device)
    boundaries = boundaries ** 2
    dists = torch.sum((pseudo_beta[..., None, :] - pseudo_beta[..., None, :, :]) ** 2, dim=-1, keepdims=True)
    true_bins = torch.sum(dists > boundaries, dim=-1)
    errors = -torch.sum(F.one_hot(true_bins, no_bins) * F.log_softmax(logits, dim=-1), dim=-1)
    square_mask = pseudo_beta_mask[..., None] * pseudo_beta_mask[..., None, :]
    denom = eps + torch.sum(square_mask, dim=(-1, -2))
    mean = errors * square_mask
    mean = torch.sum(mean, dim=-1)
    mean = mean / denom[..., None]
    mean = torch.sum(mean, dim=-1)
    return mean, true_bins

B, N, NB = 2, 7, 64
coords = rnd(B, N, 3) * 6
mask = torch.ones(B, N)
mask[1, 5:] = 0
logits = rnd(B, N, N, NB).requires_grad_()
loss, true_bins = distogram_loss(logits, coords, mask)
print(loss.shape, loss.round(decimals=4), true_bins.dtype, true_bins.shape)
loss.mean().backward()
print(round(logits.grad.abs().sum().item(), 5))
# bucketize version
d = torch.cdist(coords, coords)
print(d.shape, d.dtype, torch.diagonal(d, dim1=-2, dim2=-1).abs().max() < 1e-3)
bins = torch.linspace(2, 22, 63)
tb = torch.bucketize(d, bins)
print(torch.equal(tb, true_bins), tb.dtype, tb.max().item(), tb.min().item())
tb2 = torch.bucketize(d, bins, right=True)
print((tb2 != tb).sum().item())
print(torch.searchsorted(bins, d.reshape(-1)).reshape(d.shape).equal(tb))
# cross_entropy with [B, C, N, N] and ignore_index for masked pairs
target = tb.clone()
pair_mask = mask[:, :, None] * mask[:, None, :]
target[pair_mask == 0] = -100
ce = F.cross_entropy(logits.permute(0, 3, 1, 2), target)
ce_none = F.cross_entropy(logits.permute(0, 3, 1, 2), target, reduction='none')
print(round(ce.item(), 4), ce_none.shape, ce_none[1, 6, 6].item(), round(ce_none.sum().item() / (target != -100).sum().item(), 4))
ce_ls = F.cross_entropy(logits.permute(0, 3, 1, 2), target, label_smoothing=0.1)
print(round(ce_ls.item(), 4))
nll = F.nll_loss(F.log_softmax(logits, -1).reshape(-1, NB), target.reshape(-1), ignore_index=-100)
print(round(nll.item(), 4))
# distance from pairwise differences
diff = coords[:, :, None, :] - coords[:, None, :, :]
d2 = torch.sqrt((diff ** 2).sum(-1) + 1e-8)
print(torch.allclose(d, d2, atol=1e-3))
contact = (d < 8.0).float()
print(contact.sum(dim=(-1, -2)), contact.dtype)
# cdist grads
c = coords.double().requires_grad_()
dd = torch.cdist(c, c + 0.5)
dd.sum().backward()
print(round(c.grad.sum().item(), 6), c.grad.shape)
def compute_plddt(logits):
    num_bins = logits.shape[-1]
    bin_width = 1.0 / num_bins
    bounds = torch.arange(start=0.5 * bin_width, end=1.0, step=bin_width, device=logits.device)
    probs = torch.nn.functional.softmax(logits, dim=-1)
    pred_lddt_ca = torch.sum(probs * bounds.view(*((1,) * len(probs.shape[:-1])), *bounds.shape), dim=-1)
    return pred_lddt_ca * 100

def lddt(all_atom_pred_pos, all_atom_positions, all_atom_mask, cutoff=15.0, eps=1e-10):
    n = all_atom_mask.shape[-2]
    dmat_true = torch.sqrt(eps + torch.sum((all_atom_positions[..., None, :] - all_atom_positions[..., None, :, :]) ** 2, dim=-1))
    dmat_pred = torch.sqrt(eps + torch.sum((all_atom_pred_pos[..., None, :] - all_atom_pred_pos[..., None, :, :]) ** 2, dim=-1))
    dists_to_score = (dmat_true < cutoff) * all_atom_mask * torch.transpose(all_atom_mask, -1, -2) * (1.0 - torch.eye(n, device=all_atom_mask.device))
    dist_l1 = torch.abs(dmat_true - dmat_pred)
    score = ((dist_l1 < 0.5).type(dist_l1.dtype) + (dist_l1 < 1.0).type(dist_l1.dtype) + (dist_l1 < 2.0).type(dist_l1.dtype) + (dist_l1 < 4.0).type(dist_l1.dtype))
    score = score * 0.25
    norm = 1.0 / (eps + torch.sum(dists_to_score, dim=-1))
    score = norm * (eps + torch.sum(dists_to_score * score, dim=-1))
    return score

N = 12
true = rnd(N, 3) * 5
pred = true + rnd(N, 3) * 1.2
m = torch.ones(N, 1)
m[-2:] = 0
s = lddt(pred, true, m)
print(s.shape, s.round(decimals=4))
bin_index = torch.floor(s * 50).long()
bin_index = torch.clamp(bin_index, max=49)
print(bin_index)
head = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 50)); reinit(head)
print(head)
feat = rnd(N, 16)
logits = head(feat)
lddt_ca_one_hot = F.one_hot(bin_index, num_classes=50)
errors = -torch.sum(lddt_ca_one_hot * F.log_softmax(logits, dim=-1), dim=-1)
loss = torch.sum(errors * m.squeeze(-1)) / (1e-10 + torch.sum(m))
print("plddt loss", round(loss.item(), 4))
loss.backward()
print(head[1].weight.grad.shape, round(head[-1].bias.grad.abs().sum().item(), 5))
plddt = compute_plddt(logits.detach())
print(plddt.shape, plddt.dtype, plddt.round(decimals=2)[:4])
print(torch.arange(0.01, 1.0, 0.02).shape, torch.arange(start=0.5 / 64, end=1.0, step=1.0 / 64).shape)
print(f"mean pLDDT: {plddt.mean():.2f}, min {plddt.min().item():.1f}")
# ptm-ish expected value with bin centres
breaks = torch.linspace(0.0, 31.0, 63)
step = breaks[1] - breaks[0]
centers = breaks + step / 2
centers = torch.cat([centers, (centers[-1] + step).unsqueeze(-1)], dim=0)
pae_logits = rnd(N, N, 64)
pae = (F.softmax(pae_logits, -1) @ centers)
print(centers.shape, pae.shape, round(pae.mean().item(), 4), round(pae.max().item(), 3))
print(torch.sum(F.softmax(pae_logits, dim=-1) * centers, dim=-1).allclose(pae, atol=1e-5))
# half-precision evaluation of the distogram head (as with model.half() at inference)
lh = pae_logits.half()
print("half lse", torch.logsumexp(lh, dim=-1)[0, :4], lh.dtype)
tgt = torch.bucketize(torch.cdist(true, true), torch.linspace(0.0, 31.0, 63))
ce_half = F.cross_entropy(lh.reshape(-1, 64), tgt.reshape(-1))
print("half ce", ce_half, F.cross_entropy(lh.reshape(-1, 64), tgt.reshape(-1), reduction="sum"))
