"""Sparsely-gated mixture of experts (noisy top-k gating in the style of the Shazeer et al.
re-implementations): softplus noise scale, top-(k+1) values for the load estimate through the
normal CDF, cv^2 balancing losses, a SparseDispatcher built from nonzero().sort(0), gather, split
and index_add.  The gating noise is passed in, so the run is deterministic."""
import torch
import torch.nn as nn
from torch.distributions.normal import Normal

def det_(module, scale=0.3, off=0):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(scale * torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i + off).view_as(p))

class SparseDispatcher(object):
    def __init__(self, num_experts, gates):
        self._gates = gates
        self._num_experts = num_experts
        sorted_experts, index_sorted_experts = torch.nonzero(gates).sort(0)
        _, self._expert_index = sorted_experts.split(1, dim=1)
        self._batch_index = torch.nonzero(gates)[index_sorted_experts[:, 1], 0]
        self._part_sizes = (gates > 0).sum(0).tolist()
        gates_exp = gates[self._batch_index.flatten()]
        self._nonzero_gates = torch.gather(gates_exp, 1, self._expert_index)
    def dispatch(self, inp):
        inp_exp = inp[self._batch_index].squeeze(1)
        return torch.split(inp_exp, self._part_sizes, dim=0)
    def combine(self, expert_out, multiply_by_gates=True):
        stitched = torch.cat(expert_out, 0)
        if multiply_by_gates:
            stitched = stitched.mul(self._nonzero_gates)
        zeros = torch.zeros(self._gates.size(0), expert_out[-1].size(1), requires_grad=True, device=stitched.device)
        combined = zeros.index_add(0, self._batch_index, stitched.float())
        return combined
    def expert_to_gates(self):
        return torch.split(self._nonzero_gates, self._part_sizes, dim=0)

class MLP(nn.Module):
    def __init__(self, input_size, output_size, hidden_size):
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, output_size)
        self.relu = nn.ReLU()
        self.soft = nn.Softmax(1)
    def forward(self, x):
        return self.soft(self.fc2(self.relu(self.fc1(x))))

class MoE(nn.Module):
    def __init__(self, input_size, output_size, num_experts, hidden_size, noisy_gating=True, k=2):
        super().__init__()
        self.noisy_gating = noisy_gating
        self.num_experts = num_experts
        self.output_size = output_size
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.k = k
        self.experts = nn.ModuleList([MLP(self.input_size, self.output_size, self.hidden_size) for i in range(self.num_experts)])
        self.w_gate = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)
        self.w_noise = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)
        self.softplus = nn.Softplus()
        self.softmax = nn.Softmax(1)
        self.register_buffer("mean", torch.tensor([0.0]))
        self.register_buffer("std", torch.tensor([1.0]))
        assert (self.k <= self.num_experts)
    def cv_squared(self, x):
        eps = 1e-10
        if x.shape[0] == 1:
            return torch.tensor([0], device=x.device, dtype=x.dtype)
        return x.float().var() / (x.float().mean() ** 2 + eps)
    def _gates_to_load(self, gates):
        return (gates > 0).sum(0)
    def _prob_in_top_k(self, clean_values, noisy_values, noise_stddev, noisy_top_values):
        batch = clean_values.size(0)
        m = noisy_top_values.size(1)
        top_values_flat = noisy_top_values.flatten()
        threshold_positions_if_in = torch.arange(batch, device=clean_values.device) * m + self.k
        threshold_if_in = torch.unsqueeze(torch.gather(top_values_flat, 0, threshold_positions_if_in), 1)
        is_in = torch.gt(noisy_values, threshold_if_in)
        threshold_positions_if_out = threshold_positions_if_in - 1
        threshold_if_out = torch.unsqueeze(torch.gather(top_values_flat, 0, threshold_positions_if_out), 1)
        normal = Normal(self.mean, self.std)
        prob_if_in = normal.cdf((clean_values - threshold_if_in) / noise_stddev)
        prob_if_out = normal.cdf((clean_values - threshold_if_out) / noise_stddev)
        prob = torch.where(is_in, prob_if_in, prob_if_out)
        return prob
    def noisy_top_k_gating(self, x, train, noise_epsilon=1e-2, noise=None):
        clean_logits = x @ self.w_gate
        if self.noisy_gating and train:
            raw_noise_stddev = x @ self.w_noise
            noise_stddev = ((self.softplus(raw_noise_stddev) + noise_epsilon))
            noisy_logits = clean_logits + (noise * noise_stddev)
            logits = noisy_logits
        else:
            logits = clean_logits
        logits = self.softmax(logits)
        top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
        top_k_logits = top_logits[:, :self.k]
        top_k_indices = top_indices[:, :self.k]
        top_k_gates = top_k_logits / (top_k_logits.sum(1, keepdim=True) + 1e-6)
        zeros = torch.zeros_like(logits, requires_grad=True)
        gates = zeros.scatter(1, top_k_indices, top_k_gates)
        if self.noisy_gating and self.k < self.num_experts and train:
            load = (self._prob_in_top_k(clean_logits, noisy_logits, noise_stddev, top_logits)).sum(0)
        else:
            load = self._gates_to_load(gates)
        return gates, load
    def forward(self, x, loss_coef=1e-2, noise=None):
        gates, load = self.noisy_top_k_gating(x, self.training, noise=noise)
        importance = gates.sum(0)
        loss = self.cv_squared(importance) + self.cv_squared(load)
        loss *= loss_coef
        dispatcher = SparseDispatcher(self.num_experts, gates)
        expert_inputs = dispatcher.dispatch(x)
        gates = dispatcher.expert_to_gates()
        expert_outputs = [self.experts[i](expert_inputs[i]) for i in range(self.num_experts)]
        y = dispatcher.combine(expert_outputs)
        return y, loss

moe = MoE(5, 3, 4, 6, k=2)
det_(moe)
print([b for b in moe.buffers()])
x = torch.linspace(-1, 1, 40).view(8, 5)
noise = torch.cos(torch.arange(32.)).view(8, 4)
y, aux = moe(x, noise=noise)
print(y.shape, round(y.sum().item(), 5), aux, aux.shape)
target = torch.arange(8) % 3
loss = nn.functional.nll_loss(torch.log(y + 1e-9), target) + aux
loss.backward()
print(round(loss.item(), 5), moe.w_gate.grad.abs().sum().item() > 0, round(moe.w_noise.grad.abs().sum().item(), 6))
moe.eval()
y2, aux2 = moe(x)
print(y2.shape, aux2, aux2.dtype)
d = SparseDispatcher(4, torch.tensor([[0.0, 0.7, 0.3, 0.0], [0.5, 0.0, 0.0, 0.5], [0.0, 0.0, 1.0, 0.0]]))
print(d._batch_index, d._expert_index.flatten(), d._part_sizes, d._nonzero_gates.flatten())
parts = d.dispatch(torch.arange(6.).view(3, 2))
print([p.tolist() for p in parts])
print(d.combine([torch.ones(s, 2) for s in d._part_sizes]))
print(torch.nonzero(torch.tensor([[0, 1], [1, 0]])).sort(0))
print(torch.nonzero(torch.tensor([0., 2, 0, 3]), as_tuple=True))
