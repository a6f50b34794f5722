"""In the style of the pytorch/tutorials intermediate tutorials visualizing_gradients_tutorial.py,
optimizer_step_in_backward_tutorial.py and custom_function_conv_bn_tutorial.py (written for this
corpus, fixed weights and data): forward hooks on every leaf module that register tensor hooks on
the outputs and collect the gradients flowing back (mean |grad| per layer, with and without
BatchNorm1d); an Adam step per parameter run from register_post_accumulate_grad_hook compared with
the ordinary step loop; a Conv2d+BatchNorm custom Function that recomputes the convolution in
backward, checked by gradcheck and trained against the unfused layers."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(module, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            n = p.numel()
            p.copy_((torch.arange(n, dtype=torch.float64).mul(0.7 + 0.1 * i).sin() * scale)
                    .reshape(p.shape).to(p.dtype))
    return module


print("-- gradient flow")
x = torch.linspace(-2, 2, 6 * 20).reshape(6, 20).sin()
y = torch.tensor([0, 1, 2, 1, 0, 2])


def make(norm):
    layers = []
    width = 20
    for _ in range(3):
        layers.append(nn.Sequential(nn.Linear(width, 16), norm(16), nn.Sigmoid()))
        width = 16
    layers.append(nn.Linear(16, 3))
    return fill(nn.Sequential(*layers))


for norm in (nn.Identity, nn.BatchNorm1d):
    model = make(norm)
    grads = []
    for name, layer in model.named_modules():
        if not any(layer.children()):
            def hook(module, args, output, name=name):
                output.register_hook(lambda g: grads.append((name, g)))
            layer.register_forward_hook(hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(4):
        grads.clear()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    print(norm.__name__, f"{loss.item():.5f}", len(grads))
    for name, g in grads:
        print(f"  {name:6s} {tuple(g.shape)} {g.abs().mean().item():.4e}")

print("-- optimizer step fused into backward")
inp = torch.linspace(0, 1, 2 * 12).reshape(2, 12)


def net():
    return fill(nn.Sequential(nn.Linear(12, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 2)))


plain = net()
opt = torch.optim.Adam(plain.parameters(), lr=0.01)
for _ in range(3):
    plain(inp).pow(2).sum().backward()
    opt.step()
    opt.zero_grad()

fused = net()
per_param = {p: torch.optim.Adam([p], lr=0.01, foreach=False) for p in fused.parameters()}
order = []


def step_now(param):
    order.append(tuple(param.shape))
    per_param[param].step()
    per_param[param].zero_grad()


handles = [p.register_post_accumulate_grad_hook(step_now) for p in fused.parameters()]
for _ in range(3):
    fused(inp).pow(2).sum().backward()
print(all(torch.allclose(a, b, atol=1e-6) for a, b in zip(plain.parameters(), fused.parameters())))
print([p.grad for p in fused.parameters()])
print(order[:6])
for h in handles:
    h.remove()
fused(inp).pow(2).sum().backward()
print([p.grad is None for p in fused.parameters()])


print("-- fused conv + batch norm")


def bn_stats(z):
    total = z.sum(dim=(0, 2, 3))
    count = z.numel() / z.size(1)
    sd = z.var(dim=(0, 2, 3), unbiased=True).sqrt()
    return total, count, sd


def expand(v):
    return v[None, :, None, None]


class ConvBN(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, weight, eps=1e-3):
        ctx.save_for_backward(inp, weight)
        z = F.conv2d(inp, weight)
        total, count, sd = bn_stats(z)
        ctx.stats = (total, count, sd, eps)
        out = z - expand(total / count)
        out /= expand(sd + eps)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        inp, weight = ctx.saved_tensors
        total, count, sd, eps = ctx.stats
        z = F.conv2d(inp, weight)            # recomputed instead of saved
        centred = z - expand(total / count)
        denom = sd + eps
        d_sd = -(centred * grad_out).sum(dim=(0, 2, 3)) / denom ** 2
        d_var = d_sd / (2 * sd)
        grad_z = grad_out / expand(denom)
        grad_z = grad_z - expand(grad_z.sum(dim=(0, 2, 3)) / count)
        grad_z = grad_z + expand(d_var) * 2 * centred / (count - 1)
        grad_in = F.conv_transpose2d(grad_z, weight)
        grad_w = F.conv2d(inp.transpose(0, 1), grad_z.transpose(0, 1)).transpose(0, 1)
        return grad_in, grad_w, None


inp64 = (torch.arange(2 * 3 * 5 * 5, dtype=torch.float64).reshape(2, 3, 5, 5) * 0.37).sin()
inp64.requires_grad_()
w64 = (torch.arange(4 * 3 * 3 * 3, dtype=torch.float64).reshape(4, 3, 3, 3) * 0.11).cos()
w64.requires_grad_()
print(torch.autograd.gradcheck(ConvBN.apply, (inp64, w64)))
out = ConvBN.apply(inp64, w64)
print(out.grad_fn.name(), out.shape, abs(out.mean().item()) < 1e-12)

imgs = (torch.arange(8 * 1 * 10 * 10, dtype=torch.float32).reshape(8, 1, 10, 10) * 0.05).sin()
labels = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])
for fused_layer in (True, False):
    conv_w = nn.Parameter(fill(nn.Conv2d(1, 6, 3, bias=False)).weight.detach().clone())
    head = fill(nn.Linear(6 * 4 * 4, 4), 0.1)
    params = [conv_w] + list(head.parameters())
    opt = torch.optim.Adadelta(params, lr=1.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    for epoch in range(3):
        opt.zero_grad()
        if fused_layer:
            h = ConvBN.apply(imgs, conv_w)
        else:
            h = F.batch_norm(F.conv2d(imgs, conv_w), None, None, training=True, eps=1e-3)
        h = F.max_pool2d(F.relu(h), 2).flatten(1)
        loss = F.nll_loss(F.log_softmax(head(h), dim=1), labels)
        loss.backward()
        opt.step()
        sched.step()
        print(fused_layer, epoch, f"{loss.item():.4f}", f"{conv_w.grad.norm().item():.4f}",
              sched.get_last_lr())
