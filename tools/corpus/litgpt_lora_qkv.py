"""lit-gpt's LoRAQKVLinear (one fused qkv projection, LoRA on a chosen subset of q/k/v, with
grouped-query attention): kaiming_uniform_/zeros init, the grouped conv1d that applies B per
enabled projection, zero_pad with index_copy into the fused output, mark_only_lora_as_trainable,
trainable/frozen parameter counts, merge() into the frozen weight, and the lora_filter state dict.
Weights are overwritten deterministically, so the output does not depend on the random stream."""
import math
from dataclasses import dataclass
from typing import Tuple, Any

import torch
import torch.nn as nn
from torch.nn import functional as F


class LoRALayer(nn.Module):
    def __init__(self, r: int, lora_alpha: int, lora_dropout: float):
        super().__init__()
        assert r >= 0
        self.r = r
        self.lora_alpha = lora_alpha
        if lora_dropout > 0.0:
            self.lora_dropout = nn.Dropout(p=lora_dropout)
        else:
            self.lora_dropout = lambda x: x
        self.merged = False


class LoRAQKVLinear(LoRALayer):
    def __init__(self, in_features, out_features, head_size, n_head, n_query_groups, r=0, lora_alpha=1,
                 lora_dropout=0.0, enable_lora=False, **kwargs):
        super().__init__(r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout)
        self.linear = torch.nn.Linear(in_features, out_features, **kwargs)
        self.head_size = head_size
        self.n_head = n_head
        self.in_features = in_features
        self.out_features = out_features
        self.n_query_groups = n_query_groups
        if isinstance(enable_lora, bool):
            enable_lora = [enable_lora] * 3
        assert len(enable_lora) == 3
        self.enable_lora = enable_lora
        if r > 0 and any(enable_lora):
            self.lora_A = nn.Parameter(torch.empty((r * sum(enable_lora), in_features)))
            enable_q, enable_k, enable_v = enable_lora
            self.kv_embd_size = self.linear.in_features // (n_head // n_query_groups)
            shape = self.linear.in_features * enable_q + self.kv_embd_size * enable_k + self.kv_embd_size * enable_v
            self.lora_B = nn.Parameter(torch.empty(shape, r))
            self.scaling = self.lora_alpha / self.r
            q_per_kv = self.n_head // self.n_query_groups
            total_qkv = q_per_kv + 2
            head_size = out_features // (self.n_query_groups * total_qkv)
            ind = range(out_features)
            self.lora_ind = []
            if enable_q:
                q_ind = [x for x in ind if (x // head_size) % total_qkv < total_qkv - 2]
                self.lora_ind.extend(q_ind)
            if enable_k:
                k_ind = [x for x in ind if (x // head_size) % total_qkv == total_qkv - 2]
                self.lora_ind.extend(k_ind)
            if enable_v:
                v_ind = [x for x in ind if (x // head_size) % total_qkv == total_qkv - 1]
                self.lora_ind.extend(v_ind)
            self.reset_parameters()

    def reset_parameters(self):
        if hasattr(self, "lora_A"):
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B)

    def zero_pad(self, x):
        # LoRA may be enabled for only some of q, k, v: scatter its output into the fused width.
        if all(self.enable_lora):
            return x
        if not hasattr(self, "_lora_ind_tensor"):
            self._lora_ind_tensor = torch.tensor(self.lora_ind, device=x.device)
        result = x.new_zeros(*x.shape[:-1], self.linear.out_features)
        return result.index_copy_(dim=-1, index=self._lora_ind_tensor, source=x)

    @property
    def qkv_shapes(self):
        enable_q, enable_k, enable_v = self.enable_lora
        return [s for s in (self.linear.in_features * enable_q, self.kv_embd_size * enable_k,
                            self.kv_embd_size * enable_v) if s]

    def conv1d(self, input, weight):
        if self.n_head == self.n_query_groups:
            return F.conv1d(input, weight, groups=sum(self.enable_lora))
        input_splitted = input.chunk(sum(self.enable_lora), dim=1)
        weight_splitted = weight.split(self.qkv_shapes)
        return torch.cat([F.conv1d(a, b) for a, b in zip(input_splitted, weight_splitted)], dim=1)

    def get_lora_AB(self):
        lora = self.conv1d(self.lora_A.data.unsqueeze(0), self.lora_B.data.unsqueeze(-1)).squeeze(0)
        return self.zero_pad(lora.T * self.scaling).T

    def merge(self):
        if self.r > 0 and any(self.enable_lora) and not self.merged:
            self.linear.weight.data += self.get_lora_AB()
            self.merged = True

    def forward(self, x):
        pretrained = self.linear(x)
        if self.r == 0 or not any(self.enable_lora) or self.merged:
            return pretrained
        after_A = F.linear(self.lora_dropout(x), self.lora_A)
        after_B = self.conv1d(after_A.transpose(-2, -1), self.lora_B.unsqueeze(-1)).transpose(-2, -1)
        lora = self.zero_pad(after_B) * self.scaling
        return pretrained + lora


def mark_only_lora_as_trainable(model, bias="none"):
    for n, p in model.named_parameters():
        if "lora_" not in n:
            p.requires_grad = False
    if bias == "all":
        for n, p in model.named_parameters():
            if "bias" in n:
                p.requires_grad = True


def lora_filter(key: str, value: Any) -> bool:
    return "lora_" in key


def num_parameters(module: nn.Module, requires_grad=None) -> int:
    total = 0
    for p in module.parameters():
        if requires_grad is None or p.requires_grad == requires_grad:
            total += p.numel()
    return total


for n_head, n_query_groups, enable in [(4, 4, [True, False, True]), (4, 2, [True, True, True]), (4, 1, [False, True, True])]:
    head_size, n_embd = 2, 8
    out = (n_head + 2 * n_query_groups) * head_size
    layer = LoRAQKVLinear(n_embd, out, head_size, n_head, n_query_groups, r=2, lora_alpha=4, enable_lora=enable)
    with torch.no_grad():
        for i, p in enumerate(layer.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (0.4 + i)).view_as(p) * 0.3)
    mark_only_lora_as_trainable(layer)
    print(n_head, n_query_groups, enable, "trainable", num_parameters(layer, requires_grad=True), "frozen", num_parameters(layer, requires_grad=False))
    print("lora_ind", layer.lora_ind)
    x = torch.linspace(-1, 1, 2 * 3 * n_embd).view(2, 3, n_embd)
    y = layer(x)
    y.pow(2).sum().backward()
    print(y.shape, round(y.sum().item(), 5), round(layer.lora_A.grad.norm().item(), 5), round(layer.lora_B.grad.norm().item(), 5))
    print(layer.linear.weight.grad)
    with torch.no_grad():
        layer.merge()
        y2 = layer(x)
    print("merge equal", torch.allclose(y, y2, atol=1e-5))
    sd = {k: v for k, v in layer.state_dict().items() if lora_filter(k, v)}
    print(sorted(sd), [tuple(v.shape) for v in sd.values()])

x = torch.arange(2 * 6 * 4, dtype=torch.float32).view(2, 6, 4)
w = torch.ones(6, 2, 1)
print(F.conv1d(x, w, groups=3)[0, :, 0])
print(F.conv1d(x, torch.ones(3, 6, 1))[1, :, -1])
