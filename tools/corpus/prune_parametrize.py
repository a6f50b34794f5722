"""The pruning tutorial and the parametrizations tutorial, on deterministic weights:
prune.l1_unstructured / ln_structured / global_unstructured / remove and a custom method;
parametrize.register_parametrization with Symmetric and SkewSymmetric, right_inverse, cached(),
remove_parametrizations; parametrizations.orthogonal / weight_norm / spectral_norm."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
import torch.nn.utils.prune as prune

torch.manual_seed(0)


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def fixed_weights(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float32)
            p.copy_((0.3 * torch.sin(1.37 * k + i)).reshape(p.shape))


model = LeNet()
fixed_weights(model)
module = model.conv1
print([name for name, _ in module.named_parameters()])
prune.l1_unstructured(module, name="weight", amount=0.3)
print([name for name, _ in module.named_parameters()])
print([name for name, _ in module.named_buffers()])
print(module.weight_mask.sum(), module.weight.shape)
print(len(module._forward_pre_hooks))
prune.l1_unstructured(module, name="bias", amount=3)
print(module.bias_mask)
print(module.bias)
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
print(module.weight_mask.sum(dim=(1, 2, 3)))
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":
        break
print(type(hook).__name__, [type(m).__name__ for m in hook])
print(model.state_dict().keys())
prune.remove(module, "weight")
print([name for name, _ in module.named_parameters()])
print([name for name, _ in module.named_buffers()])

new_model = LeNet()
fixed_weights(new_model)
for name, module in new_model.named_modules():
    if isinstance(module, torch.nn.Conv2d):
        prune.l1_unstructured(module, name="weight", amount=0.2)
    elif isinstance(module, torch.nn.Linear):
        prune.l1_unstructured(module, name="weight", amount=0.4)
print(dict(new_model.named_buffers()).keys())

model = LeNet()
fixed_weights(model)
parameters_to_prune = ((model.conv1, "weight"), (model.conv2, "weight"), (model.fc1, "weight"),
                       (model.fc2, "weight"), (model.fc3, "weight"))
prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
total_zero, total = 0, 0
for m, n in parameters_to_prune:
    w = getattr(m, n)
    zeros = float(torch.sum(w == 0))
    total_zero += zeros
    total += w.nelement()
    print("Sparsity in {}: {:.2f}%".format(n, 100.0 * zeros / float(w.nelement())))
print("Global sparsity: {:.2f}%".format(100.0 * total_zero / total))
x = torch.linspace(-1, 1, 2 * 28 * 28).reshape(2, 1, 28, 28)
out = model(x)
print(out)
out.pow(2).sum().backward()
print(model.fc3.weight_orig.grad[0, :6])
print(float((model.fc3.weight_orig.grad == 0).sum()), float((model.fc3.weight_mask == 0).sum()))


class FooBarPruningMethod(prune.BasePruningMethod):
    """Prune every other entry in a tensor"""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def foobar_unstructured(module, name):
    FooBarPruningMethod.apply(module, name)
    return module


model = LeNet()
fixed_weights(model)
foobar_unstructured(model.fc3, name="bias")
print(model.fc3.bias_mask)
print(prune.is_pruned(model))


# -- parametrizations tutorial ----------------------------------------------------------------
class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Skew(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return A - A.transpose(-1, -2)


class MatrixExponential(nn.Module):
    def forward(self, X):
        return torch.matrix_exp(X)


layer = nn.Linear(3, 3)
fixed_weights(layer)
parametrize.register_parametrization(layer, "weight", Symmetric())
A = layer.weight
assert torch.allclose(A, A.T)
print(A)
print(layer)
print(layer.parametrizations.weight.original)
print(list(layer.state_dict().keys()))
layer_orthogonal = nn.Linear(3, 3)
fixed_weights(layer_orthogonal)
parametrize.register_parametrization(layer_orthogonal, "weight", Skew())
parametrize.register_parametrization(layer_orthogonal, "weight", MatrixExponential())
X = layer_orthogonal.weight
print(torch.dist(X.T @ X, torch.eye(3)) < 1e-5)
print(layer_orthogonal.parametrizations.weight)
with parametrize.cached():
    print(layer_orthogonal.weight is layer_orthogonal.weight)
layer.weight = torch.arange(9.0).reshape(3, 3)
print(layer.parametrizations.weight.original)
print(layer.weight)
y = layer(torch.ones(2, 3))
y.sum().backward()
print(layer.parametrizations.weight.original.grad)
parametrize.remove_parametrizations(layer, "weight")
print(layer)
print(type(layer.weight).__name__, list(layer.state_dict().keys()))

from torch.nn.utils import parametrizations  # noqa: E402

wn = parametrizations.weight_norm(nn.Linear(4, 3))
fixed_weights(wn)
print(wn.parametrizations.weight.original0.shape, wn.parametrizations.weight.original1.shape)
print(wn.weight)
orth = parametrizations.orthogonal(nn.Linear(4, 4))
Q = orth.weight
print(torch.dist(Q.T @ Q, torch.eye(4)) < 1e-5)
print(orth)
sn = parametrizations.spectral_norm(nn.Linear(5, 4))
for _ in range(20):
    W = sn.weight
print(torch.linalg.matrix_norm(W.detach(), 2).round(decimals=3))
print(list(sn.state_dict().keys()))
