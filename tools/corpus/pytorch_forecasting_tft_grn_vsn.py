"""Temporal Fusion Transformer pieces as pytorch-forecasting writes them: GatedLinearUnit (F.glu),
AddNorm with a trainable sigmoid gate, GateAddNorm, GatedResidualNetwork with a context vector
and a resampling Linear, a VariableSelectionNetwork over a dict of inputs (ModuleDict of GRNs,
softmax selection weights), the multi-quantile pinball loss written with torch.max, its gradient
into the GRNs, nn.GLU / F.glu along other dims and the odd-size error."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from typing import Dict, List, Tuple

class GatedLinearUnit(nn.Module):
    def __init__(self, input_size: int, hidden_size: int = None, dropout: float = None):
        super().__init__()
        if dropout is not None:
            self.dropout = nn.Dropout(dropout)
        else:
            self.dropout = dropout
        self.hidden_size = hidden_size or input_size
        self.fc = nn.Linear(input_size, self.hidden_size * 2)

    def forward(self, x):
        if self.dropout is not None:
            x = self.dropout(x)
        x = self.fc(x)
        x = F.glu(x, dim=-1)
        return x

class AddNorm(nn.Module):
    def __init__(self, input_size: int, skip_size: int = None, trainable_add: bool = True):
        super().__init__()
        self.input_size = input_size
        self.trainable_add = trainable_add
        self.skip_size = skip_size or input_size
        if self.input_size != self.skip_size:
            self.resample = nn.Linear(self.skip_size, self.input_size)
        if self.trainable_add:
            self.mask = nn.Parameter(torch.zeros(self.input_size, dtype=torch.float))
            self.gate = nn.Sigmoid()
        self.norm = nn.LayerNorm(self.input_size)

    def forward(self, x, skip):
        if self.input_size != self.skip_size:
            skip = self.resample(skip)
        if self.trainable_add:
            skip = skip * self.gate(self.mask) * 2.0
        return self.norm(x + skip)

class GateAddNorm(nn.Module):
    def __init__(self, input_size, hidden_size=None, skip_size=None, trainable_add=False, dropout=None):
        super().__init__()
        self.hidden_size = hidden_size or input_size
        self.skip_size = skip_size or self.hidden_size
        self.glu = GatedLinearUnit(input_size, hidden_size=self.hidden_size, dropout=dropout)
        self.add_norm = AddNorm(self.hidden_size, skip_size=self.skip_size, trainable_add=trainable_add)

    def forward(self, x, skip):
        return self.add_norm(self.glu(x), skip)

class GatedResidualNetwork(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, dropout=0.1, context_size=None, residual=False):
        super().__init__()
        self.input_size = input_size
        self.output_size = output_size
        self.hidden_size = hidden_size
        self.residual = residual
        if self.input_size != self.output_size and not self.residual:
            residual_size = self.input_size
        else:
            residual_size = self.output_size
        if self.output_size != residual_size:
            self.resample_norm = nn.Linear(residual_size, self.output_size)
        self.fc1 = nn.Linear(self.input_size, self.hidden_size)
        self.elu = nn.ELU()
        if context_size is not None:
            self.context = nn.Linear(context_size, self.hidden_size, bias=False)
        self.fc2 = nn.Linear(self.hidden_size, self.hidden_size)
        self.gate_norm = GateAddNorm(self.hidden_size, skip_size=self.output_size, hidden_size=self.output_size, dropout=dropout, trainable_add=False)

    def forward(self, x, context=None, residual=None):
        if residual is None:
            residual = x
        if self.input_size != self.output_size and not self.residual:
            residual = self.resample_norm(residual)
        x = self.fc1(x)
        if context is not None:
            context = self.context(context)
            x = x + context
        x = self.elu(x)
        x = self.fc2(x)
        x = self.gate_norm(x, residual)
        return x

class VariableSelectionNetwork(nn.Module):
    def __init__(self, input_sizes: Dict[str, int], hidden_size: int, dropout: float = 0.1, context_size: int = None):
        super().__init__()
        self.hidden_size = hidden_size
        self.input_sizes = input_sizes
        self.flattened_grn = GatedResidualNetwork(self.input_size_total, min(self.hidden_size, self.num_inputs),
                                                  self.num_inputs, dropout, context_size, residual=False)
        self.single_variable_grns = nn.ModuleDict()
        for name, input_size in self.input_sizes.items():
            self.single_variable_grns[name] = GatedResidualNetwork(input_size, min(input_size, self.hidden_size),
                                                                   output_size=self.hidden_size, dropout=dropout)
        self.softmax = nn.Softmax(dim=-1)

    @property
    def input_size_total(self):
        return sum(self.input_sizes.values())

    @property
    def num_inputs(self):
        return len(self.input_sizes)

    def forward(self, x: Dict[str, torch.Tensor], context: torch.Tensor = None):
        var_outputs = []
        weight_inputs = []
        for name in self.input_sizes.keys():
            variable_embedding = x[name]
            weight_inputs.append(variable_embedding)
            var_outputs.append(self.single_variable_grns[name](variable_embedding))
        var_outputs = torch.stack(var_outputs, dim=-1)
        flat_embedding = torch.cat(weight_inputs, dim=-1)
        sparse_weights = self.flattened_grn(flat_embedding, context)
        sparse_weights = self.softmax(sparse_weights).unsqueeze(-2)
        outputs = var_outputs * sparse_weights
        outputs = outputs.sum(dim=-1)
        return outputs, sparse_weights

class QuantileLoss(nn.Module):
    def __init__(self, quantiles: List[float] = [0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.98]):
        super().__init__()
        self.quantiles = quantiles

    def loss(self, y_pred, target):
        losses = []
        for i, q in enumerate(self.quantiles):
            errors = target - y_pred[..., i]
            losses.append(torch.max((q - 1) * errors, q * errors).unsqueeze(-1))
        losses = 2 * torch.cat(losses, dim=2)
        return losses

def fill(m):
    with torch.no_grad():
        for i, (n, p) in enumerate(m.named_parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (0.21 + 0.07 * i) + i).reshape(p.shape) * 0.3)
    return m

vsn = fill(VariableSelectionNetwork({"price": 1, "volume": 2, "dow": 3}, hidden_size=8, dropout=0.0, context_size=4))
vsn.eval()
print(sum(p.numel() for p in vsn.parameters()))
print(list(vsn.single_variable_grns.keys()))
B, T = 2, 5
tt = torch.arange(B * T, dtype=torch.float32).reshape(B, T, 1) / 10
x = {"price": torch.sin(tt), "volume": torch.cat([tt, tt ** 2], -1), "dow": F.one_hot(torch.arange(B * T).reshape(B, T) % 3, 3).float()}
ctx = torch.ones(B, T, 4) * 0.1
out, w = vsn(x, ctx)
print(out.shape, w.shape)
print(w[0, 0])
print(w.sum(-1).squeeze())
ql = QuantileLoss([0.1, 0.5, 0.9])
pred = torch.stack([out[..., 0] - 0.1, out[..., 0], out[..., 0] + 0.1], -1)
target = torch.zeros(B, T)
losses = ql.loss(pred, target)
print(losses.shape, losses.mean())
losses.mean().backward()
print(vsn.flattened_grn.fc1.weight.grad.shape, vsn.single_variable_grns["price"].gate_norm.glu.fc.bias.grad)
glu = nn.GLU()
print(glu(torch.arange(8.).view(2, 4)))
print(F.glu(torch.arange(6.).view(3, 2), 0) if False else F.glu(torch.arange(8.).view(2, 4), dim=0))
try:
    F.glu(torch.arange(6.).view(2, 3))
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
print(nn.ELU(alpha=0.5)(torch.tensor([-1.0, 1.0])))
