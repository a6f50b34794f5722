"""Neel Nanda's grokking notebook structure: HookPoint modules, a one-layer transformer for (a + b) mod p,
high-precision cross entropy, AdamW with warm-up, and forward/backward activation caches."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

class HookPoint(nn.Module):
    def __init__(self):
        super().__init__()
        self.fwd_hooks = []
        self.bwd_hooks = []
    def give_name(self, name):
        self.name = name
    def add_hook(self, hook, dir="fwd"):
        def full_hook(module, module_input, module_output):
            return hook(module_output, name=self.name)
        if dir == "fwd":
            handle = self.register_forward_hook(full_hook)
            self.fwd_hooks.append(handle)
        elif dir == "bwd":
            handle = self.register_backward_hook(full_hook)
            self.bwd_hooks.append(handle)
        else:
            raise ValueError(f"Invalid direction {dir}")
    def remove_hooks(self, dir="fwd"):
        if dir in ("fwd", "both"):
            for hook in self.fwd_hooks:
                hook.remove()
            self.fwd_hooks = []
        if dir in ("bwd", "both"):
            for hook in self.bwd_hooks:
                hook.remove()
            self.bwd_hooks = []
    def forward(self, x):
        return x

def det_init(shape, seed):
    return torch.tensor(np.random.RandomState(seed).randn(*shape) / np.sqrt(shape[-1]), dtype=torch.float32)

class Embed(nn.Module):
    def __init__(self, d_vocab, d_model):
        super().__init__()
        self.W_E = nn.Parameter(det_init((d_model, d_vocab), 1))
    def forward(self, x):
        return torch.einsum("dbp -> bpd", self.W_E[:, x])

class Unembed(nn.Module):
    def __init__(self, d_vocab, d_model):
        super().__init__()
        self.W_U = nn.Parameter(det_init((d_model, d_vocab), 2))
    def forward(self, x):
        return x @ self.W_U

class PosEmbed(nn.Module):
    def __init__(self, max_ctx, d_model):
        super().__init__()
        self.W_pos = nn.Parameter(det_init((max_ctx, d_model), 3))
    def forward(self, x):
        return x + self.W_pos[: x.shape[-2]]

class Attention(nn.Module):
    def __init__(self, d_model, num_heads, d_head, n_ctx):
        super().__init__()
        self.W_K = nn.Parameter(det_init((num_heads, d_head, d_model), 4))
        self.W_Q = nn.Parameter(det_init((num_heads, d_head, d_model), 5))
        self.W_V = nn.Parameter(det_init((num_heads, d_head, d_model), 6))
        self.W_O = nn.Parameter(det_init((d_model, d_head * num_heads), 7))
        self.register_buffer("mask", torch.tril(torch.ones((n_ctx, n_ctx))))
        self.d_head = d_head
        self.hook_k, self.hook_q, self.hook_v = HookPoint(), HookPoint(), HookPoint()
        self.hook_z, self.hook_attn, self.hook_attn_pre = HookPoint(), HookPoint(), HookPoint()
    def forward(self, x):
        k = self.hook_k(torch.einsum("ihd,bpd->biph", self.W_K, x))
        q = self.hook_q(torch.einsum("ihd,bpd->biph", self.W_Q, x))
        v = self.hook_v(torch.einsum("ihd,bpd->biph", self.W_V, x))
        attn_scores_pre = torch.einsum("biph,biqh->biqp", k, q)
        attn_scores_masked = torch.tril(attn_scores_pre) - 1e10 * (1 - self.mask[: x.shape[-2], : x.shape[-2]])
        attn_matrix = self.hook_attn(F.softmax(self.hook_attn_pre(attn_scores_masked / np.sqrt(self.d_head)), dim=-1))
        z = self.hook_z(torch.einsum("biph,biqp->biqh", v, attn_matrix))
        z_flat = torch.reshape(torch.transpose(z, 1, 2), (x.shape[0], x.shape[1], -1))
        return torch.einsum("df,bqf->bqd", self.W_O, z_flat)

class MLP(nn.Module):
    def __init__(self, d_model, d_mlp):
        super().__init__()
        self.W_in = nn.Parameter(det_init((d_mlp, d_model), 8))
        self.b_in = nn.Parameter(torch.zeros(d_mlp))
        self.W_out = nn.Parameter(det_init((d_model, d_mlp), 9))
        self.b_out = nn.Parameter(torch.zeros(d_model))
        self.hook_pre, self.hook_post = HookPoint(), HookPoint()
    def forward(self, x):
        x = self.hook_pre(torch.einsum("md,bpd->bpm", self.W_in, x) + self.b_in)
        x = self.hook_post(F.relu(x))
        return torch.einsum("dm,bpm->bpd", self.W_out, x) + self.b_out

class TransformerBlock(nn.Module):
    def __init__(self, d_model, d_mlp, d_head, num_heads, n_ctx):
        super().__init__()
        self.attn = Attention(d_model, num_heads, d_head, n_ctx)
        self.mlp = MLP(d_model, d_mlp)
        self.hook_attn_out, self.hook_mlp_out = HookPoint(), HookPoint()
        self.hook_resid_pre, self.hook_resid_mid, self.hook_resid_post = HookPoint(), HookPoint(), HookPoint()
    def forward(self, x):
        x = self.hook_resid_mid(x + self.hook_attn_out(self.attn(self.hook_resid_pre(x))))
        x = self.hook_resid_post(x + self.hook_mlp_out(self.mlp(x)))
        return x

class Transformer(nn.Module):
    def __init__(self, num_layers, d_vocab, d_model, d_mlp, d_head, num_heads, n_ctx):
        super().__init__()
        self.cache = {}
        self.embed = Embed(d_vocab, d_model)
        self.pos_embed = PosEmbed(n_ctx, d_model)
        self.blocks = nn.ModuleList([TransformerBlock(d_model, d_mlp, d_head, num_heads, n_ctx) for i in range(num_layers)])
        self.unembed = Unembed(d_vocab, d_model)
        for name, module in self.named_modules():
            if type(module) == HookPoint:
                module.give_name(name)
    def forward(self, x):
        x = self.embed(x)
        x = self.pos_embed(x)
        for block in self.blocks:
            x = block(x)
        return self.unembed(x)
    def hook_points(self):
        return [module for name, module in self.named_modules() if "hook" in name]
    def remove_all_hooks(self):
        for hp in self.hook_points():
            hp.remove_hooks("fwd")
            hp.remove_hooks("bwd")
    def cache_all(self, cache, incl_bwd=False):
        def save_hook(tensor, name):
            cache[name] = tensor.detach()
        def save_hook_back(tensor, name):
            cache[name + "_grad"] = tensor[0].detach()
        for hp in self.hook_points():
            hp.add_hook(save_hook, "fwd")
            if incl_bwd:
                hp.add_hook(save_hook_back, "bwd")

def cross_entropy_high_precision(logits, labels):
    logprobs = F.log_softmax(logits.to(torch.float64), dim=-1)
    prediction_logprobs = torch.gather(logprobs, index=labels[:, None], dim=-1)
    return -torch.mean(prediction_logprobs)

p = 17
pairs = [(i, j, p) for i in range(p) for j in range(p)]
rng = np.random.RandomState(598)
order = rng.permutation(len(pairs))
train = [pairs[i] for i in order[: int(0.3 * len(pairs))]]
test = [pairs[i] for i in order[int(0.3 * len(pairs)):]]
print(len(train), len(test), train[:3])

model = Transformer(num_layers=1, d_vocab=p + 1, d_model=32, d_mlp=64, d_head=8, num_heads=4, n_ctx=3)
print(sum(p_.numel() for p_ in model.parameters()), len(model.hook_points()))
print([hp.name for hp in model.hook_points()][:5])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1.0, betas=(0.9, 0.98))
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(step / 10, 1))
train_t = torch.tensor(train)
test_t = torch.tensor(test)
labels_tr = (train_t[:, 0] + train_t[:, 1]) % p
labels_te = (test_t[:, 0] + test_t[:, 1]) % p
for epoch in range(40):
    train_loss = cross_entropy_high_precision(model(train_t)[:, -1], labels_tr)
    with torch.no_grad():
        test_loss = cross_entropy_high_precision(model(test_t)[:, -1], labels_te)
    if epoch % 10 == 0:
        print(f"{epoch}_{np.log(train_loss.item()):.4f}_{np.log(test_loss.item()):.4f}")
    train_loss.backward()
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
print(train_loss.dtype, scheduler.get_last_lr())

cache = {}
model.remove_all_hooks()
model.cache_all(cache, incl_bwd=True)
logits = model(train_t[:8])
cross_entropy_high_precision(logits[:, -1], labels_tr[:8]).backward()
model.remove_all_hooks()
print(len(cache))
for k in ["blocks.0.attn.hook_attn", "blocks.0.mlp.hook_post", "blocks.0.hook_resid_post_grad", "blocks.0.attn.hook_z_grad"]:
    print(k, tuple(cache[k].shape), round(cache[k].norm().item(), 4))
print(cache["blocks.0.attn.hook_attn"][0, 0])
neuron_acts = cache["blocks.0.mlp.hook_post"][:, -1]
print("frac neurons firing", (neuron_acts > 0).float().mean().item())
print(torch.norm(model.embed.W_E, dim=0)[:4])
