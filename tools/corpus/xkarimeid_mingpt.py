"""xKarimEid/mingpt (config.py, gpt_network.py, trainer.py, prepare_data.py, generate.py,
train_script.py): a GPT-2 style model whose attention is F.scaled_dot_product_attention(is_causal=True)
(with the repo's k/q argument order), lm_head tied to the token embedding and initialised twice by
model.apply, AdamW groups split by p.dim(), the inspect.signature check for fused AdamW,
torch.compile, set_float32_matmul_precision, gradient accumulation with a warmup + cosine lr,
clip_grad_norm_, then top-k multinomial sampling with gather and cat along time.  Adapted: tiny
config, cpu, a character vocabulary from a dict instead of tiktoken, inline text instead of the
download, no torch.autocast(bfloat16) (tapegrad has no bfloat16), parameters overwritten from a
seeded numpy stream.  Added: the attention called with a key-padding mask together with
is_causal=True, which PyTorch's CPU flash kernel takes (its math kernel, for 3-D inputs, refuses).
Prints values independent of torch's random streams (sampled tokens: shapes only)."""
import os, math, time, inspect
from dataclasses import dataclass
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.distributed as dist
from torch.distributed import init_process_group

@dataclass
class GPTConfig:
    context_size: int = 16
    vocab_size: int = 40
    n_layers: int = 2
    n_heads: int = 2
    n_embed: int = 16
    head_size: int = int(n_embed/n_heads)

@dataclass
class TrainConf:
    max_lr: float = 6e-3
    min_lr: float = 0.1 * max_lr
    warmup_steps: int = 3
    max_steps: int = 8
    weight_decay: float = 0.1
    learning_rate: float = 6e-3
    total_batch_size: int = 128
    B: int = 4
    T: int = 16
    grad_accum_steps: int = total_batch_size // (B*T)
    device: str = 'cpu'
    assert total_batch_size % (B*T) == 0 , "total_batch_size has to be divisible by B*T"
    ddp: bool = int(os.environ.get('RANK', -1)) != -1
    ddp_rank: int = 0
    ddp_local_rank: int = 0
    ddp_world_size: int = 1
    master_process: bool = True
    def init_ddp(self):
        pass

class MultiHeadAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embed % config.n_heads == 0
        self.c_attn = nn.Linear(config.n_embed, config.n_embed*3)
        self.c_proj = nn.Linear(config.n_embed, config.n_embed)
        self.INIT_SCALE = 1
        self.n_heads = config.n_heads
        self.head_size = config.head_size
        self.n_embed = config.n_embed
    def forward(self, x):
        B, T, C = x.shape
        kqv = self.c_attn(x)
        k, q, v = kqv.split(self.n_embed, dim=-1)
        k = k.view(B, T, self.n_heads, self.head_size).transpose(1, 2)
        q = q.view(B, T, self.n_heads, self.head_size).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.head_size).transpose(1, 2)
        out = F.scaled_dot_product_attention(k, q, v, is_causal=True)
        out = out.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(out)

class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embed, 4*config.n_embed)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(config.n_embed*4, config.n_embed)
        self.INIT_SCALE = 1
    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embed)
        self.attn = MultiHeadAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embed)
        self.mlp = MLP(config)
    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x

class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.context_size = config.context_size
        self.transformer = nn.ModuleDict(dict(
            wte = nn.Embedding(config.vocab_size, config.n_embed),
            wpe = nn.Embedding(config.context_size, config.n_embed),
            h = nn.ModuleList([Block(config) for _ in range(config.n_layers)]),
            ln_f = nn.LayerNorm(config.n_embed),
        ))
        self.lm_head = nn.Linear(config.n_embed, config.vocab_size, bias = False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            std = 0.02
            if hasattr(module, 'INIT_SCALE'):
                std *= (2*self.config.n_layers)**-0.5
            torch.nn.init.normal_(module.weight, mean=0, std=std)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0, std=0.02)
    def forward(self, idx, targets=None):
        B, T = idx.size()
        assert T <= self.context_size
        pos = torch.arange(T, dtype=torch.long, device = idx.device)
        pe = self.transformer.wpe(pos)
        te = self.transformer.wte(idx)
        x = te + pe
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            logits = logits.view(B*T, self.config.vocab_size)
            targets = targets.view(B*T)
            loss = F.cross_entropy(logits, targets)
        return logits, loss
    def configure_optimizers(self, train_conf):
        param_dict = {pn: p for pn, p in self.named_parameters()}
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {'params': decay_params, 'weight_decay': train_conf.weight_decay},
            {'params': nodecay_params, 'weight_decay': 0.0}
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and 'cuda' in train_conf.device
        optimizer = torch.optim.AdamW(optim_groups, lr=train_conf.learning_rate, betas=(0.9, 0.95), eps=1e-8, fused=use_fused)
        if train_conf.master_process:
            print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
            print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
            print(f"using fused AdamW: {use_fused} (fused available: {fused_available})")
        return optimizer

TEXT = ("First Citizen: Before we proceed any further, hear me speak. All: Speak, speak. "
        "First Citizen: You are all resolved rather to die than to famish? All: Resolved. resolved. ") * 4
chars = sorted(set(TEXT)); stoi = {c: i for i, c in enumerate(chars)}; itos = {i: c for c, i in stoi.items()}
encode = lambda s: [stoi[c] for c in s]; decode = lambda l: ''.join(itos[i] for i in l)

class DataLoader:
    def __init__(self, train_conf):
        self.B = train_conf.B; self.T = train_conf.T
        self.ddp_rank = train_conf.ddp_rank; self.ddp_world_size = train_conf.ddp_world_size
        self.current_start = self.B * self.T * self.ddp_rank
        self.data = torch.tensor(encode(TEXT))
        if train_conf.master_process:
            print(f"I am gpu: {train_conf.ddp_rank}")
            print(f"Number of tokens: {len(self.data)}")
            print(f"1 epoch: {len(self.data)//(self.B*self.T*self.ddp_world_size)}")
    def next_batch(self):
        buffer = self.data[self.current_start: 1+ self.current_start + (self.B*self.T)]
        xb = buffer[:-1].view(self.B, self.T)
        yb = buffer[1:].view(self.B, self.T)
        self.current_start += self.B * self.T * self.ddp_world_size
        if self.current_start + self.B*self.T* self.ddp_world_size + 1 > len(self.data):
            self.current_start = self.B * self.T * self.ddp_rank
        return xb, yb

class Trainer:
    def __init__(self, model, train_conf):
        self.train_conf = train_conf
        self.dataloader = DataLoader(self.train_conf)
        self.optim = model.configure_optimizers(train_conf)
        self.model = model
    def _get_lr(self, it):
        warmup_steps = self.train_conf.warmup_steps; max_lr = self.train_conf.max_lr
        max_steps = self.train_conf.max_steps; min_lr = self.train_conf.min_lr
        if it < warmup_steps:
            return max_lr * (it + 1) / warmup_steps
        if it > max_steps:
            return 0.1 * max_lr
        decay_ratio = (it - warmup_steps) / (max_steps - warmup_steps)
        assert 0 <= decay_ratio <= 1
        coeff = 0.5 * (1 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (max_lr - min_lr)
    def train_model(self):
        max_steps = self.train_conf.max_steps; B = self.train_conf.B; T = self.train_conf.T
        grad_accum_steps = self.train_conf.grad_accum_steps; device = self.train_conf.device
        torch.set_float32_matmul_precision('high')
        print(torch.get_float32_matmul_precision())
        for step in range(max_steps):
            loss_accum = 0.0
            self.optim.zero_grad()
            for micro_step in range(grad_accum_steps):
                xb, yb = self.dataloader.next_batch()
                xb, yb = xb.to(device), yb.to(device)
                logits, loss = self.model(xb, yb)
                loss = loss/grad_accum_steps
                loss_accum += loss.detach()
                loss.backward()
            lr = self._get_lr(step)
            for param_group in self.optim.param_groups:
                param_group['lr'] = lr
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optim.step()
            print(f"step: {step}, loss: {loss_accum:.2f}, norm: {norm:.2f}, lr: {lr:.4f}", type(loss_accum).__name__, loss_accum.dtype, norm.dtype)

rng = np.random.RandomState(1337)
torch.manual_seed(1337)
model_conf = GPTConfig(vocab_size=len(chars)); train_conf = TrainConf()
train_conf.init_ddp()
model = GPT(model_conf)
print(model.lm_head.weight is model.transformer.wte.weight, len(list(model.parameters())), len(model.state_dict()))
with torch.no_grad():
    for n, p in model.named_parameters():
        p.copy_(torch.from_numpy((rng.randn(*p.shape) * 0.1).astype(np.float32)))
model.to(train_conf.device)
cmodel = torch.compile(model)
print(type(cmodel).__name__, cmodel._orig_mod is model)
trainer = Trainer(cmodel, train_conf=train_conf)
trainer.train_model()

# generate.py
model.eval()
tokens = encode("First Citizen")
num_samples = 3
idx = torch.tensor(tokens, dtype=torch.long)
idx = idx.unsqueeze(0).repeat(num_samples, 1)
torch.manual_seed(42)
while idx.size(1) < 16:
    with torch.no_grad():
        logits, loss = model(idx)
        logits = logits[:, -1, :]
        probs = F.softmax(logits, dim=-1)
        topk_probs, topk_idx = torch.topk(probs, 5, dim=-1)
        ix = torch.multinomial(topk_probs, 1)
        xcol = torch.gather(topk_idx, -1, ix)
        idx = torch.cat((idx, xcol), dim=-1)
print(idx.shape, idx.dtype, topk_probs.shape, ix.dtype, xcol.shape)
for token in idx.tolist():
    print(len(decode(token)))

# padding mask with is_causal (the flash kernel's case) and the 3-D call that PyTorch refuses
att = model.transformer.h[0].attn
x = model.transformer.wte(torch.tensor([encode("First"), encode("hear ")])) + model.transformer.wpe(torch.arange(5))
B, T, C = x.shape
k, q, v = att.c_attn(x).split(att.n_embed, dim=-1)
k, q, v = (t.view(B, T, att.n_heads, att.head_size).transpose(1, 2) for t in (k, q, v))
pad = torch.tensor([[True, True, True, False, False], [True] * 5]).view(B, 1, 1, T)
with torch.no_grad():
    both = F.scaled_dot_product_attention(q, k, v, attn_mask=pad, is_causal=True)
    combined = F.scaled_dot_product_attention(q, k, v, attn_mask=pad & torch.ones(T, T, dtype=torch.bool).tril())
print('padded causal', both.shape, round(both.abs().sum().item(), 3), torch.allclose(both, combined, atol=1e-6))
try:
    F.scaled_dot_product_attention(q[0], k[0], v[0], attn_mask=pad[0], is_causal=True)
except RuntimeError as e:
    print('3-D mask with is_causal:', type(e).__name__, str(e)[:60])
