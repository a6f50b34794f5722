"""Autoformer / Time-Series-Library pieces as thuml writes them: series decomposition by a moving
average over replicate-padded ends (AvgPool1d on a cat of repeated first / last steps, checked
against F.pad(mode="replicate") + avg_pool1d), the multi-kernel decomposition weighted by a
softmax, AutoCorrelation (rfft of queries and keys, conj product, irfft, top-k delays aggregated
with torch.roll in training and torch.gather in inference), its gradient, the seasonal LayerNorm,
and TimesNet-style period detection from rfft amplitudes."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class moving_avg(nn.Module):
    def __init__(self, kernel_size, stride):
        super(moving_avg, self).__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=0)

    def forward(self, x):
        front = x[:, 0:1, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        end = x[:, -1:, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        x = torch.cat([front, x, end], dim=1)
        x = self.avg(x.permute(0, 2, 1))
        x = x.permute(0, 2, 1)
        return x

class series_decomp(nn.Module):
    def __init__(self, kernel_size):
        super(series_decomp, self).__init__()
        self.moving_avg = moving_avg(kernel_size, stride=1)

    def forward(self, x):
        moving_mean = self.moving_avg(x)
        res = x - moving_mean
        return res, moving_mean

class series_decomp_multi(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.moving_avg = [moving_avg(kernel, stride=1) for kernel in kernel_size]
        self.layer = torch.nn.Linear(1, len(kernel_size))

    def forward(self, x):
        moving_mean = []
        for func in self.moving_avg:
            moving_avg_ = func(x)
            moving_mean.append(moving_avg_.unsqueeze(-1))
        moving_mean = torch.cat(moving_mean, dim=-1)
        moving_mean = torch.sum(moving_mean * nn.Softmax(-1)(self.layer(x.unsqueeze(-1))), dim=-1)
        res = x - moving_mean
        return res, moving_mean

class AutoCorrelation(nn.Module):
    def __init__(self, mask_flag=True, factor=1, scale=None, attention_dropout=0.1, output_attention=False):
        super(AutoCorrelation, self).__init__()
        self.factor = factor
        self.scale = scale
        self.mask_flag = mask_flag
        self.output_attention = output_attention
        self.dropout = nn.Dropout(attention_dropout)

    def time_delay_agg_training(self, values, corr):
        head = values.shape[1]
        channel = values.shape[2]
        length = values.shape[3]
        top_k = int(self.factor * math.log(length))
        mean_value = torch.mean(torch.mean(corr, dim=1), dim=1)
        index = torch.topk(torch.mean(mean_value, dim=0), top_k, dim=-1)[1]
        weights = torch.stack([mean_value[:, index[i]] for i in range(top_k)], dim=-1)
        tmp_corr = torch.softmax(weights, dim=-1)
        tmp_values = values
        delays_agg = torch.zeros_like(values).float()
        for i in range(top_k):
            pattern = torch.roll(tmp_values, -int(index[i]), -1)
            delays_agg = delays_agg + pattern * \
                (tmp_corr[:, i].unsqueeze(1).unsqueeze(1).unsqueeze(1).repeat(1, head, channel, length))
        return delays_agg

    def time_delay_agg_inference(self, values, corr):
        batch = values.shape[0]
        head = values.shape[1]
        channel = values.shape[2]
        length = values.shape[3]
        init_index = torch.arange(length).unsqueeze(0).unsqueeze(0).unsqueeze(0).repeat(batch, head, channel, 1).to(values.device)
        top_k = int(self.factor * math.log(length))
        mean_value = torch.mean(torch.mean(corr, dim=1), dim=1)
        weights, delay = torch.topk(mean_value, top_k, dim=-1)
        tmp_corr = torch.softmax(weights, dim=-1)
        tmp_values = values.repeat(1, 1, 1, 2)
        delays_agg = torch.zeros_like(values).float()
        for i in range(top_k):
            tmp_delay = init_index + delay[:, i].unsqueeze(1).unsqueeze(1).unsqueeze(1).repeat(1, head, channel, length)
            pattern = torch.gather(tmp_values, dim=-1, index=tmp_delay)
            delays_agg = delays_agg + pattern * \
                (tmp_corr[:, i].unsqueeze(1).unsqueeze(1).unsqueeze(1).repeat(1, head, channel, length))
        return delays_agg

    def forward(self, queries, keys, values, attn_mask):
        B, L, H, E = queries.shape
        _, S, _, D = values.shape
        if L > S:
            zeros = torch.zeros_like(queries[:, :(L - S), :]).float()
            values = torch.cat([values, zeros], dim=1)
            keys = torch.cat([keys, zeros], dim=1)
        else:
            values = values[:, :L, :, :]
            keys = keys[:, :L, :, :]
        q_fft = torch.fft.rfft(queries.permute(0, 2, 3, 1).contiguous(), dim=-1)
        k_fft = torch.fft.rfft(keys.permute(0, 2, 3, 1).contiguous(), dim=-1)
        res = q_fft * torch.conj(k_fft)
        corr = torch.fft.irfft(res, n=L, dim=-1)
        if self.training:
            V = self.time_delay_agg_training(values.permute(0, 2, 3, 1).contiguous(), corr).permute(0, 3, 1, 2)
        else:
            V = self.time_delay_agg_inference(values.permute(0, 2, 3, 1).contiguous(), corr).permute(0, 3, 1, 2)
        if self.output_attention:
            return (V.contiguous(), corr.permute(0, 3, 1, 2))
        else:
            return (V.contiguous(), None)

class my_Layernorm(nn.Module):
    def __init__(self, channels):
        super(my_Layernorm, self).__init__()
        self.layernorm = nn.LayerNorm(channels)

    def forward(self, x):
        x_hat = self.layernorm(x)
        bias = torch.mean(x_hat, dim=1).unsqueeze(1).repeat(1, x.shape[1], 1)
        return x_hat - bias

B, L, C = 2, 16, 3
t = torch.arange(L, dtype=torch.float32)
x = torch.stack([torch.stack([torch.sin(2 * math.pi * t / 5) + 0.1 * t * (c + 1) + b for c in range(C)], -1) for b in range(B)])
decomp = series_decomp(5)
seasonal, trend = decomp(x)
print(seasonal.shape, trend.shape)
print(trend[0, :4, 0], seasonal[0, :4, 0])
print(torch.allclose(seasonal + trend, x))
# replicate padding with F.pad gives the same trend
xp = F.pad(x.permute(0, 2, 1), (2, 2), mode='replicate')
trend2 = F.avg_pool1d(xp, kernel_size=5, stride=1).permute(0, 2, 1)
print(torch.allclose(trend, trend2, atol=1e-6))
dm = series_decomp_multi([3, 5])
with torch.no_grad():
    dm.layer.weight.copy_(torch.tensor([[0.5], [-0.5]])); dm.layer.bias.zero_()
r, m = dm(x)
print(r.shape, m[1, 5])
H, E = 2, 4
q = torch.sin(torch.arange(B * L * H * E, dtype=torch.float32).reshape(B, L, H, E) * 0.3)
k = torch.cos(torch.arange(B * L * H * E, dtype=torch.float32).reshape(B, L, H, E) * 0.2)
v = q * 0.5 + k
ac = AutoCorrelation(factor=1, output_attention=True)
ac.train()
V, corr = ac(q, k, v, None)
print(V.shape, corr.shape)
print(V[0, :3, 0, 0], corr[0, :3, 0, 0])
ac.eval()
V2, _ = ac(q, k, v, None)
print(V2[0, :3, 0, 0])
qg = q.clone().requires_grad_()
Vg, _ = ac(qg, k, v, None)
Vg.sum().backward()
print(qg.grad.shape, qg.grad[0, 0, 0])
ln = my_Layernorm(C)
print(ln(x).mean(1).abs().max() < 1e-5)
sig = torch.sin(2 * math.pi * torch.arange(32.) / 8)
spec = torch.fft.rfft(sig)
print(spec.shape, spec.dtype, spec.abs().argmax().item())
print(torch.fft.irfft(spec, n=32).sub(sig).abs().max() < 1e-5)
xf = torch.fft.rfft(x, dim=1)
frequency_list = abs(xf).mean(0).mean(-1)
frequency_list[0] = 0
_, top_list = torch.topk(frequency_list, 2)
top_list = top_list.detach().cpu().numpy()
period = x.shape[1] // top_list
print(top_list, period, abs(xf).mean(-1)[:, top_list].shape)
print(torch.fft.fftfreq(8), torch.fft.rfftfreq(8, d=0.5))
