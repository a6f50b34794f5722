"""Attribution maps on a small CNN with deterministic weights: Grad-CAM from a forward hook (the
activation, retain_grad) and register_full_backward_hook (the gradient at the layer's output),
the deprecated register_backward_hook with a one-hot output.backward(gradient=...), gradient x
input, SmoothGrad over fixed noise, integrated gradients (batched path, completeness check), an
LRP-epsilon rule as a custom autograd.Function, guided backprop through a backward hook on ReLU
modules, and double backprop (an input-gradient penalty with create_graph=True, whose printed
gradients show PyTorch's grad_fn names)."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.simplefilter("ignore", FutureWarning)   # register_backward_hook's deprecation notice
torch.set_printoptions(precision=4)


def fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            n = p.numel()
            p.copy_(torch.sin(torch.arange(n, dtype=torch.float32) * 0.7 + i).view_as(p) * scale)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(),
            nn.Conv2d(4, 6, 3, padding=1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(self.pool(self.features(x)).flatten(1))


model = SmallCNN()
fill_(model, 0.4)
model.eval()
image = (torch.cos(torch.arange(2 * 6 * 6, dtype=torch.float32) * 0.31).view(1, 2, 6, 6) + 1) / 2

# -- Grad-CAM with a forward hook and a full backward hook on the last conv layer ----------------
store = {}


def save_activation(module, inputs, output):
    output.retain_grad()
    store["act"] = output


def save_gradient(module, grad_input, grad_output):
    store["grad"] = grad_output[0]
    store["n_grad_input"] = len(grad_input)


target_layer = model.features[2]
h1 = target_layer.register_forward_hook(save_activation)
h2 = target_layer.register_full_backward_hook(save_gradient)
logits = model(image)
cls = logits.argmax(dim=1).item()
print("logits", logits.detach(), "class", cls)
model.zero_grad()
logits[0, cls].backward()
act, grad = store["act"].detach(), store["grad"]
print("hooked grad equals retained grad:", torch.allclose(grad, store["act"].grad))
print("grad_input entries:", store["n_grad_input"], "activation", tuple(act.shape))
weights = grad.mean(dim=(2, 3), keepdim=True)
cam = F.relu((weights * act).sum(dim=1, keepdim=True))
cam = F.interpolate(cam, size=(12, 12), mode="bilinear", align_corners=False)
cam = (cam - cam.min()) / (cam.max() - cam.min() + 1e-8)
print("cam", tuple(cam.shape), round(cam.mean().item(), 4), cam[0, 0, ::4, ::4])
h1.remove()
h2.remove()
print("hooks left:", len(target_layer._forward_hooks), len(target_layer._backward_hooks))

# -- the deprecated module backward hook with a one-hot gradient --------------------------------
seen = []
h = model.features[0].register_backward_hook(lambda m, gi, go: seen.append(tuple(go[0].shape)))
out = model(image)
one_hot = torch.zeros(1, out.size(-1))
one_hot[0][cls] = 1
model.zero_grad()
out.backward(gradient=one_hot, retain_graph=True)
h.remove()
print("old-style hook saw", seen, "fc.weight.grad sum", round(model.fc.weight.grad.sum().item(), 5))

# -- gradient x input, SmoothGrad, integrated gradients ------------------------------------------
x = image.clone().requires_grad_(True)
score = model(x)[0, cls]
grad_x, = torch.autograd.grad(score, x)
gxi = (grad_x * x).detach()
print("saliency max", round(grad_x.abs().amax().item(), 5), "grad*input sum", round(gxi.sum().item(), 5))

noise = torch.sin(torch.arange(8 * 2 * 6 * 6, dtype=torch.float32) * 1.7).view(8, 2, 6, 6) * 0.1
noisy = (image + noise).requires_grad_(True)
model(noisy)[:, cls].sum().backward()
smooth = noisy.grad.mean(dim=0).abs().amax(dim=0)
print("smoothgrad", tuple(smooth.shape), round(smooth.sum().item(), 5))

steps = 16
alphas = torch.linspace(0, 1, steps + 1).view(-1, 1, 1, 1)
baseline = torch.zeros_like(image)
path = (baseline + alphas * (image - baseline)).requires_grad_(True)
probs = F.softmax(model(path), dim=1)[:, cls]
path_grads, = torch.autograd.grad(probs.sum(), path)
avg = torch.trapezoid(path_grads, dx=1.0 / steps, dim=0)
ig = (image - baseline)[0] * avg
print("IG sum", round(ig.sum().item(), 4), "f(x)-f(0)", round((probs[-1] - probs[0]).item(), 4))


# -- LRP epsilon rule for the classifier layer as a custom Function ------------------------------
class LinearEpsilon(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, weight, bias):
        ctx.save_for_backward(inp, weight, bias)
        return F.linear(inp, weight, bias)

    @staticmethod
    def backward(ctx, relevance):
        inp, weight, bias = ctx.saved_tensors
        z = F.linear(inp, weight, bias)
        z = z + 0.01 * torch.where(z >= 0, torch.ones_like(z), -torch.ones_like(z))
        return (relevance / z) @ weight * inp, None, None


feats = model.pool(model.features(image)).flatten(1).detach().requires_grad_(True)
out = LinearEpsilon.apply(feats, model.fc.weight, model.fc.bias)
sel = torch.zeros_like(out)
sel[0, cls] = out[0, cls].detach()
out.backward(sel)
print("LRP relevance", feats.grad, "sum", round(feats.grad.sum().item(), 4))

# -- guided backprop: ReLU modules clamp the gradient they pass on -------------------------------
guided = SmallCNN()
fill_(guided, 0.4)
guided.eval()
for m in guided.modules():
    if isinstance(m, nn.ReLU):
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0].clamp(min=0.0),))
xg = image.clone().requires_grad_(True)
guided(xg)[0, cls].backward()
print("guided positive fraction", round((xg.grad > 0).float().mean().item(), 4))

# -- double backprop: the input-gradient norm as a penalty ---------------------------------------
clf = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
fill_(clf, 0.5)
inputs = torch.linspace(-1, 1, 12).view(3, 4).requires_grad_(True)
targets = torch.tensor([0, 1, 1])
loss = F.cross_entropy(clf(inputs), targets)
g_in, = torch.autograd.grad(loss, inputs, create_graph=True)
penalty = g_in.pow(2).sum()
param_grads = torch.autograd.grad(loss, list(clf.parameters()), create_graph=True)
print("first-layer weight gradient", param_grads[0])
print("grad_fns", [g.grad_fn.name() for g in param_grads], g_in.grad_fn.name())
(loss + 0.1 * penalty).backward()
print("penalty", round(penalty.item(), 6), "weight grad norm", round(clf[0].weight.grad.norm().item(), 6))
row = inputs[0].detach().requires_grad_(True)
g_row, = torch.autograd.grad(clf(row.unsqueeze(0)).squeeze(0)[1], row, create_graph=True)
print("row gradient", g_row)
