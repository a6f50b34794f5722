import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

def init_det(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i).reshape(p.shape) * 0.5)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)
    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))

model = Net()
init_det(model)
model.eval()

def integrated_gradients(model, inputs, baseline=None, target=0, steps=50, method="riemann_trapezoid"):
    if baseline is None:
        baseline = torch.zeros_like(inputs)
    alphas = torch.linspace(0, 1, steps + 1)
    scaled = baseline + alphas.view(-1, 1) * (inputs - baseline)
    scaled.requires_grad_(True)
    out = model(scaled)
    probs = F.softmax(out, dim=-1)[:, target]
    grads = torch.autograd.grad(probs.sum(), scaled)[0]
    if method == "riemann_trapezoid":
        avg = (grads[:-1] + grads[1:]) / 2.0
        avg_grads = avg.mean(dim=0)
    elif method == "riemann_left":
        avg_grads = grads[:-1].mean(0)
    else:
        avg_grads = grads[1:].mean(0)
    return (inputs - baseline) * avg_grads, probs

x = torch.linspace(-1, 1, 6)
for method in ["riemann_trapezoid", "riemann_left", "riemann_right"]:
    attr, probs = integrated_gradients(model, x, target=1, steps=64, method=method)
    delta = attr.sum() - (probs[-1] - probs[0])
    print(method, attr.detach().numpy().round(4))
    print("completeness delta:", round(abs(delta.item()), 4))

# convergence in number of steps
for n in [4, 16, 64, 256]:
    attr, probs = integrated_gradients(model, x, target=2, steps=n)
    print(n, f"{attr.sum().item():.5f}", f"{(probs[-1]-probs[0]).item():.5f}")

attr, _ = integrated_gradients(model, x, baseline=torch.full((6,), 0.5), target=0)
print(attr)
print(attr.dtype, attr.shape, attr.requires_grad)
top = torch.topk(attr.abs(), k=3)
print(top.indices.tolist(), top.values)
print(torch.argsort(attr, descending=True))
