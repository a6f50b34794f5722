"""LoRA adapters and quantisation-aware training on a tiny classifier, in the style of
XelfXendr/peft_unlearning's LoRALinear (merge = weight.data += B @ A) and microsoft/loralib's
Linear that merges its update in train(False) and unmerges in train(True): model.eval() must
run each adapter's own train() override.  The frozen base weights are then fake-quantised per
output channel (torch.fake_quantize_per_channel_affine, int8) and the activations per tensor
(fake_quantize_per_tensor_affine) for two QAT steps with the straight-through gradient; finally
a hand-written absmax int8 export and dequantisation.  Weights come from numpy so the printed
numbers do not depend on torch's random stream."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(7)


def fill_(t, scale=0.3):
    with torch.no_grad():
        t.copy_(torch.tensor(rng.standard_normal(tuple(t.shape)).astype("float32") * scale))


class MergingLoRALinear(nn.Linear):
    """y = x W^T + b + (x A^T B^T) * alpha / r; merged into W while in eval mode."""

    def __init__(self, d_in, d_out, r=2, alpha=4.0):
        super().__init__(d_in, d_out)
        self.lora_A = nn.Parameter(torch.zeros(r, d_in))
        self.lora_B = nn.Parameter(torch.zeros(d_out, r))
        self.scaling = alpha / r
        self.merged = False
        self.weight.requires_grad_(False)

    def delta(self):
        return (self.lora_B @ self.lora_A) * self.scaling

    def train(self, mode=True):
        super().train(mode)
        if not mode and not self.merged:
            self.weight.data += self.delta().detach()
            self.merged = True
        elif mode and self.merged:
            self.weight.data -= self.delta().detach()
            self.merged = False
        return self

    def forward(self, x):
        out = F.linear(x, self.weight, self.bias)
        if not self.merged:
            out = out + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scaling
        return out


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = MergingLoRALinear(6, 8)
        self.fc2 = MergingLoRALinear(8, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


net = Net()
for name, p in net.named_parameters():
    fill_(p, 0.1 if "lora_B" in name else 0.4)
print([(n, p.requires_grad) for n, p in net.named_parameters()])

x = torch.tensor(rng.standard_normal((10, 6)).astype("float32"))
y = torch.tensor(rng.integers(0, 3, 10))
opt = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=0.05,
                        weight_decay=0.01)
for step in range(3):
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"lora step {step} loss {loss.item():.5f}")
print("frozen weight grad:", net.fc1.weight.grad)

with torch.no_grad():
    train_out = net(x)
net.eval()
print("merged after eval():", net.fc1.merged, net.fc2.merged, net.training, net.fc1.training)
with torch.no_grad():
    eval_out = net(x)
print("merged == unmerged:", torch.allclose(train_out, eval_out, atol=1e-5))
net.train()
print("merged after train():", net.fc1.merged)
print("lora state:", sorted(k for k in net.state_dict() if "lora_" in k))

# quantisation-aware training of the merged weights
net.eval()
qat = nn.Sequential(nn.Linear(6, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 3))
with torch.no_grad():
    qat[0].weight.copy_(net.fc1.weight)
    qat[0].bias.copy_(net.fc1.bias)
    qat[2].weight.copy_(net.fc2.weight)
    qat[2].bias.copy_(net.fc2.bias)


def per_channel_qparams(w):
    scale = (w.detach().abs().amax(dim=1) / 127).float()
    return scale, torch.zeros(w.shape[0], dtype=torch.int32)


def qat_forward(model, x):
    h = x
    for layer in model:
        if isinstance(layer, nn.Linear):
            s, z = per_channel_qparams(layer.weight)
            wq = torch.fake_quantize_per_channel_affine(layer.weight, s, z, 0, -128, 127)
            h = torch.fake_quantize_per_tensor_affine(h, 0.05, 0, -128, 127)
            h = F.linear(h, wq, layer.bias)
        else:
            h = layer(h)
    return h


out = qat_forward(qat, x)
print("qat grad_fn:", type(out.grad_fn).__name__)
print("fake-quant weight grad_fn:",
      type(torch.fake_quantize_per_channel_affine(qat[0].weight, *per_channel_qparams(
          qat[0].weight), 0, -128, 127).grad_fn).__name__)
sgd = torch.optim.SGD(qat.parameters(), lr=0.1)
for step in range(2):
    loss = F.cross_entropy(qat_forward(qat, x), y)
    sgd.zero_grad()
    loss.backward()
    sgd.step()
    print(f"qat step {step} loss {loss.item():.5f} grad norm "
          f"{qat[0].weight.grad.norm().item():.5f}")

xs = torch.tensor([-1.3, 0.05, 0.15, 6.4, 7.0, float("nan")], requires_grad=True)
fq = torch.fake_quantize_per_tensor_affine(xs, 0.1, 0, -64, 63)
fq.sum().backward()
print("ties and clamping:", fq.tolist())
print("straight-through mask:", xs.grad.tolist())

# hand-written absmax int8 export
with torch.no_grad():
    w = qat[0].weight
    scale = w.abs().amax(dim=1, keepdim=True) / 127
    w_int8 = torch.clamp(torch.round(w / scale), -127, 127).to(torch.int8)
    w_deq = w_int8.float() * scale
print("int8:", w_int8.dtype, w_int8[0].tolist())
print("max dequant error <= scale/2:", bool(((w - w_deq).abs() <= scale / 2 + 1e-7).all()))
with torch.no_grad():
    print("int8 model agrees:", (F.linear(x, w_deq, qat[0].bias) - qat[0](x)).abs().max().item() < 0.05)

try:
    torch.fake_quantize_per_channel_affine(w, scale.squeeze(1).double(),
                                           torch.zeros(8, dtype=torch.int32), 0, -128, 127)
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.fake_quantize_per_tensor_affine(w, 0.1, 0, 10, -10)
except RuntimeError as e:
    print("RuntimeError:", " ".join(str(e).split()))
