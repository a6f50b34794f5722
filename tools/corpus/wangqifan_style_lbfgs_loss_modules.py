"""Neural style transfer the way wangqifan/StyleTransfer and LoniQin/pytorch-style-transfer build
it (written for this corpus, not a copy): a feature network assembled layer by layer into a new
nn.Sequential with add_module, content and style loss modules spliced in after chosen conv layers
(each records self.loss in forward and returns its input; the style module scales its Gram matrix
in place with G.mul_(weight) and keeps a clone of its input), loss modules with their own
backward(retain_graph=True) that return the loss, the image optimised as nn.Parameter(img.data)
by LBFGS with a closure that clamps .data in place first, a normalisation module with
view(-1, 1, 1) buffers, truncation of the model after the last loss module (model[:i + 1]), a
total-variation term, a second run with Adam on a requires_grad_() clone clamped under no_grad,
and a copy.deepcopy of the feature network.  Every random draw comes from one numpy RandomState.
"""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

rng = np.random.RandomState(2024)


def gram(x):
    b, c, h, w = x.size()
    f = x.view(b * c, h * w)
    return torch.mm(f, f.t()).div(b * c * h * w)


class ContentLoss(nn.Module):
    def __init__(self, target, weight):
        super().__init__()
        self.target = target.detach() * weight
        self.weight = weight
        self.criterion = nn.MSELoss()

    def forward(self, x):
        self.loss = self.criterion(x * self.weight, self.target)
        return x

    def backward(self, retain_graph=True):
        self.loss.backward(retain_graph=retain_graph)
        return self.loss


class StyleLoss(nn.Module):
    def __init__(self, target_gram, weight):
        super().__init__()
        self.target = target_gram.detach() * weight
        self.weight = weight
        self.criterion = nn.MSELoss()

    def forward(self, x):
        self.output = x.clone()
        self.G = gram(x)
        self.G.mul_(self.weight)          # in place on mm's output: its backward must see it
        self.loss = self.criterion(self.G, self.target)
        return self.output

    def backward(self, retain_graph=True):
        self.loss.backward(retain_graph=retain_graph)
        return self.loss


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(-1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(-1, 1, 1))

    def forward(self, img):
        return (img - self.mean) / self.std


features = nn.Sequential(
    nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(inplace=True),
    nn.Conv2d(6, 6, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
    nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(inplace=True),
    nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True), nn.AvgPool2d(2),
    nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(8, 4, 1))
with torch.no_grad():
    for p in features.parameters():
        p.copy_(torch.tensor(rng.randn(*p.shape).astype(np.float32) * 0.3))
features.requires_grad_(False)
print("frozen:", all(not p.requires_grad for p in features.parameters()))

content = torch.tensor(rng.rand(1, 3, 16, 16).astype(np.float32))
style = torch.tensor(rng.rand(1, 3, 16, 16).astype(np.float32))


def build(cnn, style_img, content_img, style_weight, content_weight,
          content_layers=("conv_4",), style_layers=("conv_1", "conv_2", "conv_3", "conv_4")):
    cnn = copy.deepcopy(cnn)
    model = nn.Sequential(Normalization([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]))
    content_losses, style_losses = [], []
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = "conv_{}".format(i)
        elif isinstance(layer, nn.ReLU):
            name = "relu_{}".format(i)
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, (nn.MaxPool2d, nn.AvgPool2d)):
            name = "pool_{}".format(i)
        else:
            raise RuntimeError("Unrecognized layer: {}".format(layer.__class__.__name__))
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img).detach()
            cl = ContentLoss(target, content_weight)
            model.add_module("content_loss_{}".format(i), cl)
            content_losses.append(cl)
        if name in style_layers:
            target = model(style_img).detach()
            sl = StyleLoss(gram(target), style_weight)
            model.add_module("style_loss_{}".format(i), sl)
            style_losses.append(sl)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], (ContentLoss, StyleLoss)):
            break
    return model[:(i + 1)], style_losses, content_losses


model, style_losses, content_losses = build(features, style, content, 10, 1)
print(model)
print(type(model).__name__, len(model), [n for n, _ in model.named_children()][-3:])
print("buffers:", [n for n, _ in model.named_buffers()])


def tv_loss(img):
    return (torch.pow(img[:, :, 1:, :] - img[:, :, :-1, :], 2).sum()
            + torch.pow(img[:, :, :, 1:] - img[:, :, :, :-1], 2).sum())


input_param = nn.Parameter(content.clone().data)
optimizer = optim.LBFGS([input_param], max_iter=5)
run = [0]
while run[0] <= 14:
    def closure():
        input_param.data.clamp_(0, 1)
        optimizer.zero_grad()
        model(input_param)
        style_score = 0
        content_score = 0
        for sl in style_losses:
            style_score += sl.backward()
        for cl in content_losses:
            content_score += cl.backward()
        tv = 1e-3 * tv_loss(input_param)
        tv.backward()
        run[0] += 1
        if run[0] % 5 == 0:
            print("run {}: style {:.4f} content {:.4f} tv {:.5f}".format(
                run[0], style_score.item(), content_score.item(), tv.item()))
        return style_score + content_score + tv
    optimizer.step(closure)
input_param.data.clamp_(0, 1)
out = input_param.data
print(out.shape, out.dtype, out.requires_grad, input_param.grad.shape)
print("range {:.4f} {:.4f} mean {:.4f}".format(out.min().item(), out.max().item(), out.mean().item()))
state = optimizer.state[optimizer.param_groups[0]["params"][0]]
print("lbfgs state:", sorted(k for k in state if k in ("d", "t", "old_dirs", "func_evals", "n_iter")))

# the same losses with Adam on a plain tensor, clamped under no_grad
img = content.clone().requires_grad_()
adam = optim.Adam([img], lr=0.05)
for step in range(6):
    adam.zero_grad()
    model(img)
    loss = sum(sl.loss for sl in style_losses) + sum(cl.loss for cl in content_losses)
    loss = loss + 1e-3 * tv_loss(img)
    loss.backward()
    adam.step()
    with torch.no_grad():
        img.clamp_(0, 1)
    if step % 2 == 1:
        print("adam step", step, round(loss.item(), 4), img.is_leaf, img.grad_fn)
print("gram of result:", [round(v, 5) for v in gram(img.detach()).diagonal().tolist()])
