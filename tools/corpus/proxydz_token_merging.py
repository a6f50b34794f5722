"""Token merging / pruning for ViTs: ToMe bipartite soft matching (argsort, gather, scatter_reduce
with every reduce mode, unmerge by scatter_), size-weighted merging, scatter_reduce gradients with
and without include_self, EViT top-k token keeping by cls attention, DynamicViT batch_index_select."""
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(0)
def t(*shape):
    return torch.from_numpy(rs.randn(*shape).astype(np.float32))

def do_nothing(x, mode=None):
    return x

def bipartite_soft_matching(metric, r, class_token=False, distill_token=False):
    protected = 0
    if class_token:
        protected += 1
    if distill_token:
        protected += 1
    t_ = metric.shape[1]
    r = min(r, (t_ - protected) // 2)
    if r <= 0:
        return do_nothing, do_nothing
    with torch.no_grad():
        metric = metric / metric.norm(dim=-1, keepdim=True)
        a, b = metric[..., ::2, :], metric[..., 1::2, :]
        scores = a @ b.transpose(-1, -2)
        if class_token:
            scores[..., 0, :] = -math.inf
        if distill_token:
            scores[..., :, 0] = -math.inf
        node_max, node_idx = scores.max(dim=-1)
        edge_idx = node_max.argsort(dim=-1, descending=True)[..., None]
        unm_idx = edge_idx[..., r:, :]
        src_idx = edge_idx[..., :r, :]
        dst_idx = node_idx[..., None].gather(dim=-2, index=src_idx)
        if class_token:
            unm_idx = unm_idx.sort(dim=1)[0]

    def merge(x, mode="mean"):
        src, dst = x[..., ::2, :], x[..., 1::2, :]
        n, t1, c = src.shape
        unm = src.gather(dim=-2, index=unm_idx.expand(n, t1 - r, c))
        src = src.gather(dim=-2, index=src_idx.expand(n, r, c))
        dst = dst.scatter_reduce(-2, dst_idx.expand(n, r, c), src, reduce=mode)
        if distill_token:
            return torch.cat([unm[:, :1], dst[:, :1], unm[:, 1:], dst[:, 1:]], dim=1)
        else:
            return torch.cat([unm, dst], dim=1)

    def unmerge(x):
        unm_len = unm_idx.shape[1]
        unm, dst = x[..., :unm_len, :], x[..., unm_len:, :]
        n, _, c = unm.shape
        src = dst.gather(dim=-2, index=dst_idx.expand(n, r, c))
        out = torch.zeros(n, metric.shape[1], c, device=x.device, dtype=x.dtype)
        out[..., 1::2, :] = dst
        out.scatter_(dim=-2, index=(2 * unm_idx).expand(n, unm_len, c), src=unm)
        out.scatter_(dim=-2, index=(2 * src_idx).expand(n, r, c), src=src)
        return out
    return merge, unmerge

def merge_wavg(merge, x, size=None):
    if size is None:
        size = torch.ones_like(x[..., 0, None])
    x = merge(x * size, mode="sum")
    size = merge(size, mode="sum")
    x = x / size
    return x, size

x = t(2, 11, 6).requires_grad_()
k = t(2, 11, 6)
merge, unmerge = bipartite_soft_matching(k, 3, class_token=True)
xm, size = merge_wavg(merge, x)
print(xm.shape, size.squeeze(-1))
print(np.round(xm[0, :, 0].detach().numpy(), 4))
xm.sum().backward()
print(np.round(x.grad[0, :, 0].numpy(), 4))
for mode in ["sum", "mean", "amax", "amin", "prod"]:
    y = merge(x, mode=mode)
    print(mode, np.round(y[1, -3:, 0].detach().numpy(), 4))
u = unmerge(merge(x))
print(u.shape, np.round(u[0, :, 1].detach().numpy(), 4))
# include_self variants + grad through scatter_reduce
src = t(4, 3).requires_grad_()
base = t(3, 3).requires_grad_()
idx = torch.tensor([[0, 1, 2], [0, 0, 0], [2, 1, 0], [0, 1, 1]])
for mode in ["sum", "mean", "amax", "amin", "prod"]:
    for inc in (True, False):
        out = base.scatter_reduce(0, idx, src, reduce=mode, include_self=inc)
        g_src, g_base = torch.autograd.grad(out.pow(2).sum(), [src, base])
        print(mode, inc, np.round(out.detach().numpy().ravel()[:5], 4), np.round(g_src.numpy().ravel()[:5], 4), np.round(g_base.numpy().ravel()[:5], 4))

# EViT / DynamicViT token pruning: keep top-k tokens by cls attention
attn = t(2, 4, 11, 11).softmax(-1)
cls_attn = attn[:, :, 0, 1:].mean(dim=1)
keep = 6
_, idx = torch.topk(cls_attn, keep, dim=1, largest=True, sorted=True)
index = idx.unsqueeze(-1).expand(-1, -1, 6)
tokens = x[:, 1:]
kept = torch.gather(tokens, dim=1, index=index)
non_topk = torch.gather(tokens, 1, torch.topk(cls_attn, 10 - keep, dim=1, largest=False).indices.unsqueeze(-1).expand(-1, -1, 6))
non_topk_attn = torch.gather(cls_attn, dim=1, index=torch.topk(cls_attn, 10 - keep, dim=1, largest=False).indices)
extra = torch.sum(non_topk * non_topk_attn.unsqueeze(-1), dim=1, keepdim=True)
newx = torch.cat([x[:, 0:1], kept, extra], dim=1)
print(newx.shape, idx)
def batch_index_select(x, idx):
    B, N, C = x.size()
    N_new = idx.size(1)
    offset = torch.arange(B, dtype=torch.long, device=x.device).view(B, 1) * N
    idx = idx + offset
    out = x.reshape(B * N, C)[idx.reshape(-1)].reshape(B, N_new, C)
    return out
print(torch.equal(batch_index_select(tokens, idx), kept))
# gumbel-softmax hard decision
torch.manual_seed(0)
logits = t(2, 10, 2)
hard = F.gumbel_softmax(logits, hard=True)[:, :, 0:1]
print(hard.shape, hard.sum().item() <= 20, set(hard.unique().tolist()) <= {0.0, 1.0})
