"""Interpretability and distillation pieces of a small CNN trained a few steps on random images:
Grad-CAM through a forward hook plus the legacy register_backward_hook and through
register_full_backward_hook (grad_output[0]), guided backprop by clamping ReLU grad_input,
a teacher/student distillation loss (KLDivLoss batchmean on log_softmax / softmax with a
temperature, times T**2), the model moved to channels_last with Module.to(memory_format=...),
and the reflect-padding error a too-small image raises.

Inspired by Iversy/Deep (lab5/grad.py, a GradCAM class with module hooks); the code is our own.
Everything random comes from numpy, so the output does not depend on torch's generator.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(3)


def init_(model, scale):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return model


def make_cnn(width):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1, padding_mode="reflect"), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, 5))


class GradCAM:
    def __init__(self, model, layer, legacy):
        self.model, self.acts, self.grads = model, None, None
        self.handles = [layer.register_forward_hook(self._save_act)]
        register = layer.register_backward_hook if legacy else layer.register_full_backward_hook
        self.handles.append(register(self._save_grad))

    def _save_act(self, module, inputs, output):
        self.acts = output.detach()

    def _save_grad(self, module, grad_input, grad_output):
        self.grads = grad_output[0].detach()

    def __call__(self, x, cls=None):
        out = self.model(x)
        cls = out.argmax(dim=1) if cls is None else cls
        self.model.zero_grad()
        out.gather(1, cls.view(-1, 1)).sum().backward()
        weights = self.grads.mean(dim=(2, 3), keepdim=True)
        cam = F.relu((weights * self.acts).sum(dim=1, keepdim=True))
        cam = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)
        flat = cam.flatten(1)
        lo, hi = flat.min(1, keepdim=True)[0], flat.max(1, keepdim=True)[0]
        return ((flat - lo) / (hi - lo + 1e-8)).view_as(cam), cls

    def remove(self):
        for h in self.handles:
            h.remove()


images = torch.from_numpy(rs.normal(0, 1, (4, 3, 12, 12)).astype(np.float32))
labels = torch.tensor([0, 3, 1, 4])
teacher = init_(make_cnn(8), 0.3)
student = init_(make_cnn(4), 0.3)

opt = torch.optim.SGD(teacher.parameters(), lr=0.05, momentum=0.9)
for step in range(3):
    loss = F.cross_entropy(teacher(images), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("teacher", step, round(loss.item(), 5))
teacher.eval()

for legacy in (True, False):
    model = init_(make_cnn(8), 0.3).eval()
    cam = GradCAM(model, model[3], legacy)
    heat, cls = cam(images)
    print("cam", "legacy" if legacy else "full", heat.shape, cls.tolist(), cam.grads.shape,
          [round(v, 4) for v in heat.flatten(1).mean(1).tolist()])
    cam.remove()

guided = init_(make_cnn(4), 0.3).eval()
hooks = [m.register_full_backward_hook(lambda m, gi, go: (gi[0].clamp(min=0),))
         for m in guided.modules() if isinstance(m, nn.ReLU)]
x = images[:1].clone().requires_grad_(True)
guided(x)[0, 2].backward()
print("guided", round(x.grad.abs().sum().item(), 5), bool((x.grad != 0).any()))
for h in hooks:
    h.remove()


def distill_loss(s_logits, t_logits, y, T=4.0, alpha=0.7):
    kd = nn.KLDivLoss(reduction="batchmean")(F.log_softmax(s_logits / T, dim=1),
                                             F.softmax(t_logits / T, dim=1)) * T * T
    return alpha * kd + (1 - alpha) * F.cross_entropy(s_logits, y), kd


opt = torch.optim.Adam(student.parameters(), lr=1e-2)
for step in range(3):
    with torch.no_grad():
        t_logits = teacher(images)
    loss, kd = distill_loss(student(images), t_logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("student", step, round(loss.item(), 5), round(kd.item(), 5))
print("kl log_target", round(F.kl_div(F.log_softmax(student(images), 1), F.log_softmax(t_logits, 1),
                                      reduction="batchmean", log_target=True).item(), 5))

weight = student[0].weight
student.to(memory_format=torch.channels_last)
print("channels_last", student[0].weight is weight, student[0].weight.stride(),
      student[0].weight.is_contiguous(memory_format=torch.channels_last), student[-1].weight.stride())
out_cl = student(images.to(memory_format=torch.channels_last))
student.to(memory_format=torch.contiguous_format)
print("same output", torch.allclose(out_cl, student(images), atol=1e-6), student[0].weight.stride())
try:
    student(torch.zeros(1, 3, 1, 1))
except RuntimeError as e:
    print("RuntimeError", str(e).split(":")[0])
try:
    nn.Conv3d(2, 2, 1).to(memory_format=torch.channels_last)
except RuntimeError as e:
    print("RuntimeError", e)
