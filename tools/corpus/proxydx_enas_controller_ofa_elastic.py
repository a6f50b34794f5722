"""ENAS-style LSTM controller (nn.LSTM over sampled decisions, Categorical log_prob and entropy,
REINFORCE with an exponential-moving-average baseline, forced architectures for determinism) and
Once-for-All elastic layers (conv filters sliced to the active channels, F.batch_norm on sliced
running statistics, channels re-sorted by importance with index_select)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

def det_(module, scale=0.3, off=0):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(scale * torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i + off).view_as(p))

class Controller(nn.Module):
    def __init__(self, num_layers=3, num_branches=4, lstm_size=8, tanh_constant=1.5, temperature=5.0):
        super().__init__()
        self.num_layers, self.num_branches, self.lstm_size = num_layers, num_branches, lstm_size
        self.tanh_constant, self.temperature = tanh_constant, temperature
        self.w_lstm = nn.LSTM(input_size=lstm_size, hidden_size=lstm_size, num_layers=2)
        self.g_emb = nn.Embedding(1, lstm_size)
        self.w_emb = nn.Embedding(num_branches, lstm_size)
        self.w_soft = nn.Linear(lstm_size, num_branches, bias=False)
        self.cell = nn.LSTMCell(lstm_size, lstm_size)
    def forward(self, forced=None):
        h0 = None
        anchors, arc_seq, entropys, log_probs = [], [], [], []
        inputs = self.g_emb.weight
        h, c = torch.zeros(1, self.lstm_size), torch.zeros(1, self.lstm_size)
        for layer_id in range(self.num_layers):
            inputs = inputs.unsqueeze(0)
            output, hn = self.w_lstm(inputs, h0)
            output = output.squeeze(0)
            h0 = hn
            logit = self.w_soft(output)
            if self.temperature is not None:
                logit /= self.temperature
            if self.tanh_constant is not None:
                logit = self.tanh_constant * torch.tanh(logit)
            branch_id_dist = torch.distributions.Categorical(logits=logit)
            branch_id = forced[layer_id].view(1) if forced is not None else branch_id_dist.sample()
            arc_seq.append(branch_id)
            log_prob = branch_id_dist.log_prob(branch_id)
            log_probs.append(log_prob.view(-1))
            entropy = branch_id_dist.entropy()
            entropys.append(entropy.view(-1))
            inputs = self.w_emb(branch_id)
            h, c = self.cell(inputs, (h, c))
        self.sample_arc = torch.cat(arc_seq)
        self.sample_entropy = torch.sum(torch.cat(entropys))
        self.sample_log_prob = torch.sum(torch.cat(log_probs))
        return h

ctrl = Controller(); det_(ctrl)
opt = torch.optim.Adam(ctrl.parameters(), lr=0.0035, betas=(0.0, 0.999), eps=1e-3)
baseline = None
forced = torch.tensor([1, 3, 0])
for step in range(4):
    h = ctrl(forced)
    reward = torch.tensor(0.5 + 0.1 * step)
    reward += 1e-4 * ctrl.sample_entropy.detach()
    if baseline is None:
        baseline = reward
    else:
        baseline -= (1 - 0.99) * (baseline - reward)
    loss = -ctrl.sample_log_prob * (reward - baseline).detach()
    opt.zero_grad()
    loss.backward()
    gn = nn.utils.clip_grad_norm_(ctrl.parameters(), 5.0)
    opt.step()
    print(step, ctrl.sample_arc.tolist(), round(ctrl.sample_log_prob.item(), 5), round(ctrl.sample_entropy.item(), 5), round(baseline.item(), 6), round(gn.item(), 6), h.shape)
h = ctrl()
print(ctrl.sample_arc.shape, ctrl.sample_arc.dtype, ctrl.sample_log_prob.grad_fn is not None)

# OFA-style elastic conv / BN
class DynamicConv2d(nn.Module):
    def __init__(self, max_in, max_out, kernel_size=3):
        super().__init__()
        self.conv = nn.Conv2d(max_in, max_out, kernel_size, padding=kernel_size // 2, bias=False)
        self.active_out_channel = max_out
    def get_active_filter(self, out_channel, in_channel):
        return self.conv.weight[:out_channel, :in_channel, :, :]
    def forward(self, x, out_channel=None):
        if out_channel is None:
            out_channel = self.active_out_channel
        in_channel = x.size(1)
        filters = self.get_active_filter(out_channel, in_channel).contiguous()
        return F.conv2d(x, filters, None, 1, 1, 1, 1)

class DynamicBatchNorm2d(nn.Module):
    SET_RUNNING_STATISTICS = False
    def __init__(self, max_feature_dim):
        super().__init__()
        self.max_feature_dim = max_feature_dim
        self.bn = nn.BatchNorm2d(self.max_feature_dim)
    @staticmethod
    def bn_forward(x, bn: nn.BatchNorm2d, feature_dim):
        if bn.num_features == feature_dim or DynamicBatchNorm2d.SET_RUNNING_STATISTICS:
            return bn(x)
        else:
            exponential_average_factor = 0.0
            if bn.training and bn.track_running_stats:
                if bn.num_batches_tracked is not None:
                    bn.num_batches_tracked += 1
                    if bn.momentum is None:
                        exponential_average_factor = 1.0 / float(bn.num_batches_tracked)
                    else:
                        exponential_average_factor = bn.momentum
            return F.batch_norm(x, bn.running_mean[:feature_dim], bn.running_var[:feature_dim], bn.weight[:feature_dim], bn.bias[:feature_dim], bn.training or not bn.track_running_stats, exponential_average_factor, bn.eps)
    def forward(self, x):
        feature_dim = x.size(1)
        return self.bn_forward(x, self.bn, feature_dim)

conv = DynamicConv2d(3, 8); det_(conv)
bn = DynamicBatchNorm2d(8)
x = torch.linspace(-1, 1, 2 * 3 * 5 * 5).view(2, 3, 5, 5)
for oc in [8, 4, 6]:
    y = bn(conv(x, oc))
    print(oc, y.shape, round(y.pow(2).mean().item(), 5))
print(bn.bn.running_mean, bn.bn.num_batches_tracked)
y.sum().backward()
print(conv.conv.weight.grad[6:].abs().sum().item(), conv.conv.weight.grad[:6].abs().sum().item() > 0)
# channel sorting by importance (re-organize)
importance = torch.sum(torch.abs(conv.conv.weight.data), dim=(1, 2, 3))
sorted_importance, sorted_idx = torch.sort(importance, dim=0, descending=True)
print(sorted_idx.tolist())
conv.conv.weight.data = torch.index_select(conv.conv.weight.data, 0, sorted_idx)
print(torch.allclose(torch.sum(torch.abs(conv.conv.weight.data), dim=(1, 2, 3)), sorted_importance))
bn.bn.running_mean.data = torch.index_select(bn.bn.running_mean.data, 0, sorted_idx)
print(bn.bn.running_mean.shape)
