import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, vmap, grad

class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 5)
        self.fc2 = nn.Linear(5, 3)
    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))

model = Small()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel()).float() * 0.9 + i).reshape(p.shape) * 0.6)

X = torch.cos(torch.arange(32.).view(8, 4) / 3)
Y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}

def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    return F.cross_entropy(predictions, targets)

ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
per_sample_grads = ft_compute_sample_grad(params, buffers, X, Y)
for k, g in per_sample_grads.items():
    print(k, g.shape)

# check against loop
for i in [0, 5]:
    model.zero_grad()
    F.cross_entropy(model(X[i:i+1]), Y[i:i+1]).backward()
    print(torch.allclose(model.fc1.weight.grad, per_sample_grads["fc1.weight"][i], atol=1e-6))

def flatten_grads(g):
    return torch.cat([v.flatten(1) for v in g.values()], dim=1)
G = flatten_grads(per_sample_grads)
print(G.shape)
test_x = X[:2] * 0.5
test_y = Y[:2]
Gt = flatten_grads(ft_compute_sample_grad(params, buffers, test_x, test_y))
lr = 0.1
tracin = lr * Gt @ G.T
print(tracin.shape)
print(tracin.round(decimals=4))
print("self influence", (G * G).sum(1))
proponents = tracin.topk(3, dim=1).indices
opponents = tracin.topk(3, dim=1, largest=False).indices
print(proponents, opponents)
# cosine similarity based influence
cos = F.cosine_similarity(Gt.unsqueeze(1), G.unsqueeze(0), dim=-1)
print(cos.shape, cos.max().item() <= 1.0 + 1e-6)
# functional_call with a single dict and strict kwarg
out = functional_call(model, params, (X,))
print(out.shape, torch.allclose(out, model(X)))
out2 = functional_call(model, {**params, "fc2.bias": torch.zeros(3)}, X)
print(out2[0])
# vmap over jacrev of output
jac = vmap(torch.func.jacrev(lambda p, x: functional_call(model, p, (x,))), in_dims=(None, 0))(params, X[:3])
print({k: tuple(v.shape) for k, v in jac.items()})
# max-logit confidence per sample, and its input saliency through the vmapped model
Xs = X[:4].clone().requires_grad_()
conf = vmap(lambda x: functional_call(model, params, (x,)).max())(Xs)
print(conf)
conf.sum().backward()
print(Xs.grad)
