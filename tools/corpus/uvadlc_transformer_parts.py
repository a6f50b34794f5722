"""phlippe/uvadlc_notebooks tutorial 6 (Transformers and multi-head attention): the hand-written
scaled dot-product attention, MultiheadAttention, EncoderBlock, PositionalEncoding and the cosine
warm-up scheduler, on fixed inputs and with weights set deterministically instead of drawn."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    attn_logits = torch.matmul(q, k.transpose(-2, -1))
    attn_logits = attn_logits / math.sqrt(d_k)
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention


seq_len, d_k = 3, 2
q = torch.linspace(-1, 1, seq_len * d_k).view(seq_len, d_k)
k = torch.cos(torch.arange(seq_len * d_k, dtype=torch.float32)).view(seq_len, d_k)
v = torch.sin(torch.arange(seq_len * d_k, dtype=torch.float32)).view(seq_len, d_k)
values, attention = scaled_dot_product(q, k, v)
print("Q\n", q)
print("K\n", k)
print("V\n", v)
print("Values\n", values)
print("Attention\n", attention)


def expand_mask(mask):
    assert mask.ndim >= 2, "Mask must be at least 2-dimensional with seq_length x seq_length"
    if mask.ndim == 3:
        mask = mask.unsqueeze(1)
    while mask.ndim < 4:
        mask = mask.unsqueeze(0)
    return mask


class MultiheadAttention(nn.Module):

    def __init__(self, input_dim, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0, "Embedding dimension must be 0 modulo number of heads."
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv_proj = nn.Linear(input_dim, 3*embed_dim)
        self.o_proj = nn.Linear(embed_dim, input_dim)
        self._reset_parameters()

    def _reset_parameters(self):
        nn.init.xavier_uniform_(self.qkv_proj.weight)
        self.qkv_proj.bias.data.fill_(0)
        nn.init.xavier_uniform_(self.o_proj.weight)
        self.o_proj.bias.data.fill_(0)

    def forward(self, x, mask=None, return_attention=False):
        batch_size, seq_length, _ = x.size()
        if mask is not None:
            mask = expand_mask(mask)
        qkv = self.qkv_proj(x)
        qkv = qkv.reshape(batch_size, seq_length, self.num_heads, 3*self.head_dim)
        qkv = qkv.permute(0, 2, 1, 3)
        q, k, v = qkv.chunk(3, dim=-1)
        values, attention = scaled_dot_product(q, k, v, mask=mask)
        values = values.permute(0, 2, 1, 3)
        values = values.reshape(batch_size, seq_length, self.embed_dim)
        o = self.o_proj(values)
        if return_attention:
            return o, attention
        else:
            return o


class EncoderBlock(nn.Module):

    def __init__(self, input_dim, num_heads, dim_feedforward, dropout=0.0):
        super().__init__()
        self.self_attn = MultiheadAttention(input_dim, input_dim, num_heads)
        self.linear_net = nn.Sequential(
            nn.Linear(input_dim, dim_feedforward),
            nn.Dropout(dropout),
            nn.ReLU(inplace=True),
            nn.Linear(dim_feedforward, input_dim)
        )
        self.norm1 = nn.LayerNorm(input_dim)
        self.norm2 = nn.LayerNorm(input_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        attn_out = self.self_attn(x, mask=mask)
        x = x + self.dropout(attn_out)
        x = self.norm1(x)
        linear_out = self.linear_net(x)
        x = x + self.dropout(linear_out)
        x = self.norm2(x)
        return x


class TransformerEncoder(nn.Module):

    def __init__(self, num_layers, **block_args):
        super().__init__()
        self.layers = nn.ModuleList([EncoderBlock(**block_args) for _ in range(num_layers)])

    def forward(self, x, mask=None):
        for l in self.layers:
            x = l(x, mask=mask)
        return x

    def get_attention_maps(self, x, mask=None):
        attention_maps = []
        for l in self.layers:
            _, attn_map = l.self_attn(x, mask=mask, return_attention=True)
            attention_maps.append(attn_map)
            x = l(x)
        return attention_maps


class PositionalEncoding(nn.Module):

    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.register_buffer('pe', pe, persistent=False)

    def forward(self, x):
        x = x + self.pe[:, :x.size(1)]
        return x


encod_block = PositionalEncoding(d_model=48, max_len=96)
pe = encod_block.pe.squeeze().T.cpu().numpy()
print(pe.shape, np.round(pe[:4, :6], 4))
print(list(encod_block.state_dict().keys()), [n for n, _ in encod_block.named_buffers()])


class CosineWarmupScheduler(optim.lr_scheduler._LRScheduler):

    def __init__(self, optimizer, warmup, max_iters):
        self.warmup = warmup
        self.max_num_iters = max_iters
        super().__init__(optimizer)

    def get_lr(self):
        lr_factor = self.get_lr_factor(epoch=self.last_epoch)
        return [base_lr * lr_factor for base_lr in self.base_lrs]

    def get_lr_factor(self, epoch):
        lr_factor = 0.5 * (1 + np.cos(np.pi * epoch / self.max_num_iters))
        if epoch <= self.warmup:
            lr_factor *= epoch * 1.0 / self.warmup
        return lr_factor


p = nn.Parameter(torch.empty(4, 4))
optimizer = optim.Adam([p], lr=1e-3)
lr_scheduler = CosineWarmupScheduler(optimizer=optimizer, warmup=100, max_iters=2000)
print([round(float(lr_scheduler.get_lr_factor(e)), 6) for e in (0, 1, 50, 100, 101, 1000, 1999)])

# The reverse task's model, with every weight set from a fixed formula (the notebook draws them).
torch.manual_seed(0)
num_classes, model_dim, seq = 5, 8, 6
embed = nn.Linear(num_classes, model_dim)
encoder = TransformerEncoder(num_layers=2, input_dim=model_dim, dim_feedforward=2*model_dim,
                             num_heads=2, dropout=0.0)
out_net = nn.Sequential(nn.Linear(model_dim, model_dim), nn.LayerNorm(model_dim), nn.ReLU(inplace=True),
                        nn.Linear(model_dim, num_classes))
modules = nn.ModuleList([embed, encoder, out_net])
for i, (name, param) in enumerate(modules.named_parameters()):
    param.data.copy_(0.3 * torch.sin(torch.arange(param.numel(), dtype=torch.float32) * 0.37 + i).view_as(param))
print(sum(p.numel() for p in modules.parameters()), [n for n, _ in modules.named_parameters()][:6])

inp_data = torch.tensor([[0, 1, 2, 3, 4, 0], [4, 4, 3, 1, 0, 2]])
labels = inp_data.flip(dims=(1,))
opt = optim.Adam(modules.parameters(), lr=5e-3)
sched = CosineWarmupScheduler(opt, warmup=2, max_iters=10)
posenc = PositionalEncoding(d_model=model_dim)
for step in range(4):
    x = F.one_hot(inp_data, num_classes=num_classes).float()
    x = posenc(embed(x))
    x = encoder(x, mask=None)
    preds = out_net(x)
    loss = F.cross_entropy(preds.view(-1, preds.size(-1)), labels.view(-1))
    acc = (preds.argmax(dim=-1) == labels).float().mean()
    opt.zero_grad()
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(modules.parameters(), max_norm=5.0)
    opt.step()
    sched.step()
    print(f"step {step} loss {loss.item():.5f} acc {acc.item():.3f} grad norm {gnorm.item():.5f} "
          f"lr {sched.get_last_lr()[0]:.6f}")

mask = torch.tril(torch.ones(seq, seq))
x = posenc(embed(F.one_hot(inp_data, num_classes=num_classes).float()))
attention_maps = encoder.get_attention_maps(x, mask=mask)
print(len(attention_maps), attention_maps[0].shape)
print(attention_maps[-1][0, 1].detach())
