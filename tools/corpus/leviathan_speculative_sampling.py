"""Inspired by Leviathan et al. / Chen et al. speculative sampling as public implementations write it: draft and target softmax, acceptance ratio min(1, p/q), first rejection by cumprod, residual max(0, p - q) renormalised, a batched version with where / relu; uniforms fixed so the result does not depend on the stream."""
import torch
import torch.nn.functional as F

V, K = 8, 4
torch.manual_seed(0)
draft_logits = torch.sin(torch.arange(K * V, dtype=torch.float32).view(K, V) * 0.9) * 2
target_logits = torch.cos(torch.arange((K + 1) * V, dtype=torch.float32).view(K + 1, V) * 0.7) * 2
q = F.softmax(draft_logits, dim=-1)
p = F.softmax(target_logits, dim=-1)
draft_tokens = q.argmax(dim=-1)
print("draft", draft_tokens.tolist())

p_tok = p[:-1].gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)
q_tok = q.gather(-1, draft_tokens[:, None])[:, 0]
ratio = torch.clamp(p_tok / q_tok, max=1.0)
print("ratio", ratio)
r = torch.tensor([0.05, 0.3, 0.9, 0.2])
accepted = r < ratio
print(accepted, accepted.dtype)
n_acc = int(torch.cumprod(accepted.int(), dim=0).sum())
print("n accepted", n_acc)
first_reject = (~accepted).int().argmax().item() if not accepted.all() else K
print(first_reject)
if n_acc < K:
    residual = torch.clamp(p[n_acc] - q[n_acc], min=0)
    residual = residual / residual.sum()
    print("residual", residual)
    nxt = residual.argmax()
else:
    nxt = p[-1].argmax()
out = torch.cat([draft_tokens[:n_acc], nxt.view(1)])
print(out, out.dtype)

# batched version with F.relu and where
B = 3
qb = q.unsqueeze(0).expand(B, -1, -1)
pb = p[:-1].unsqueeze(0).expand(B, -1, -1)
rb = torch.tensor([[0.01, 0.01, 0.01, 0.01], [0.5, 0.99, 0.1, 0.2], [0.99, 0.0, 0.0, 0.0]])
tok = draft_tokens.expand(B, -1)
acc_prob = torch.minimum(torch.ones(()), pb.gather(2, tok[..., None]).squeeze(2) / qb.gather(2, tok[..., None]).squeeze(2))
acc = rb <= acc_prob
n = torch.where(acc.all(1), torch.tensor(K), (~acc).float().argmax(1))
print(n, n.dtype)
res = F.relu(pb - qb)
res = res / res.sum(-1, keepdim=True).clamp_min(1e-9)
pick = res[torch.arange(B), n.clamp(max=K - 1)]
print(pick.argmax(-1))
print(torch.distributions.Categorical(probs=p[0]).entropy(), torch.special.entr(p[0]).sum())
print(F.kl_div(q.log(), p[:-1], reduction="batchmean"), (p[:-1] * (p[:-1] / q).log()).sum(-1).mean())
torch.manual_seed(1)
u = torch.rand(K)
print(u.shape, bool(((u >= 0) & (u < 1)).all()))
