"""A GPT-style block written the way LLM-from-scratch books write it (causal mask buffer,
masked_fill_ with -inf, manual LayerNorm/GELU, numel counts, greedy and top-k sampling), with
weights set deterministically so every printed value is seed-independent."""
import math

import torch
import torch.nn as nn

CFG = {"vocab_size": 50, "context_length": 8, "emb_dim": 12, "n_heads": 3, "n_layers": 2,
       "drop_rate": 0.0, "qkv_bias": False}


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift


class GELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(cfg["emb_dim"], cfg["emb_dim"], cfg["context_length"],
                                      cfg["drop_rate"], cfg["n_heads"], cfg["qkv_bias"])
        self.ff = nn.Sequential(nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]), GELU(),
                                nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]))
        self.norm1, self.norm2 = LayerNorm(cfg["emb_dim"]), LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        shortcut = x
        x = self.drop_shortcut(self.att(self.norm1(x))) + shortcut
        shortcut = x
        return self.drop_shortcut(self.ff(self.norm2(x))) + shortcut


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx):
        batch_size, seq_len = in_idx.shape
        x = self.tok_emb(in_idx) + self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = self.trf_blocks(self.drop_emb(x))
        return self.out_head(self.final_norm(x))


model = GPTModel(CFG)
with torch.no_grad():   # a fixed, seed-free initialisation
    for i, (name, p) in enumerate(model.named_parameters()):
        p.copy_(0.3 * torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i).reshape(p.shape))

total_params = sum(p.numel() for p in model.parameters())
print(f"Total number of parameters: {total_params:,}")
print("Token embedding layer shape:", model.tok_emb.weight.shape)
print("Output layer shape:", model.out_head.weight.shape)
total_size_mb = total_params * 4 / (1024 * 1024)
print(f"Total size of the model: {total_size_mb:.2f} MB")
print(model.trf_blocks[0].att.mask)

batch = torch.stack([torch.tensor([3, 17, 42, 5]), torch.tensor([9, 1, 33, 28])], dim=0)
model.eval()
with torch.no_grad():
    logits = model(batch)
print("Output shape:", logits.shape)
print(logits[0, -1, :6])


def generate_text_simple(model, idx, max_new_tokens, context_size):
    for _ in range(max_new_tokens):
        idx_cond = idx[:, -context_size:]
        with torch.no_grad():
            logits = model(idx_cond)
        logits = logits[:, -1, :]
        probas = torch.softmax(logits, dim=-1)
        idx_next = torch.argmax(probas, dim=-1, keepdim=True)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


encoded_tensor = torch.tensor([3, 17, 42]).unsqueeze(0)
print("encoded_tensor.shape:", encoded_tensor.shape)
out = generate_text_simple(model, encoded_tensor, max_new_tokens=6, context_size=CFG["context_length"])
print("Output:", out)
print("Output length:", len(out[0]))

# top-k filtering as the books write it
next_token_logits = logits[0, -1]
top_logits, top_pos = torch.topk(next_token_logits, 3)
print("Top logits:", top_logits)
print("Top positions:", top_pos)
new_logits = torch.where(condition=next_token_logits < top_logits[-1],
                         input=torch.tensor(float("-inf")), other=next_token_logits)
print((new_logits == -math.inf).sum().item(), torch.softmax(new_logits, dim=0)[top_pos])
scaled = next_token_logits / 0.5
print(torch.argmax(torch.softmax(scaled, dim=0)).item())

# the training loss they print: cross entropy over flattened batch and positions
targets = torch.tensor([[17, 42, 5, 9], [1, 33, 28, 3]])
model.train()
logits = model(batch)
loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
print(loss)
print("perplexity:", torch.exp(loss))
loss.backward()
print(model.out_head.weight.grad.shape, model.tok_emb.weight.grad[3, :3])
