"""Harry24k/adversarial-attacks-pytorch: the forward passes of torchattacks' FGSM, BIM and PGD
(random_start=False) and DeepFool-style gradient steps, verbatim in shape, on a small CIFAR-shaped
CNN.  Adapted for the corpus: the weights and images come from numpy (both libraries start
equal), 4 images of 3x32x32, and the attack classes are reduced to their forward functions."""
import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 15 * 15, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def fgsm(model, images, labels, eps=8 / 255):
    images = images.clone().detach()
    labels = labels.clone().detach()
    loss = nn.CrossEntropyLoss()
    images.requires_grad = True
    outputs = model(images)
    cost = loss(outputs, labels)
    grad = torch.autograd.grad(cost, images, retain_graph=False, create_graph=False)[0]
    adv_images = images + eps * grad.sign()
    adv_images = torch.clamp(adv_images, min=0, max=1).detach()
    return adv_images


def bim(model, images, labels, eps=8 / 255, alpha=2 / 255, steps=10):
    images = images.clone().detach()
    labels = labels.clone().detach()
    loss = nn.CrossEntropyLoss()
    ori_images = images.clone().detach()
    for _ in range(steps):
        images.requires_grad = True
        outputs = model(images)
        cost = loss(outputs, labels)
        grad = torch.autograd.grad(cost, images, retain_graph=False, create_graph=False)[0]
        adv_images = images + alpha * grad.sign()
        a = torch.clamp(ori_images - eps, min=0)
        b = (adv_images >= a).float() * adv_images + (adv_images < a).float() * a
        c = (b > ori_images + eps).float() * (ori_images + eps) + (b <= ori_images + eps).float() * b
        images = torch.clamp(c, max=1).detach()
    return images


def pgd(model, images, labels, eps=8 / 255, alpha=2 / 255, steps=10, targeted=False,
        target_labels=None):
    images = images.clone().detach()
    labels = labels.clone().detach()
    loss = nn.CrossEntropyLoss()
    adv_images = images.clone().detach()
    for _ in range(steps):
        adv_images.requires_grad = True
        outputs = model(adv_images)
        if targeted:
            cost = -loss(outputs, target_labels)
        else:
            cost = loss(outputs, labels)
        grad = torch.autograd.grad(cost, adv_images, retain_graph=False, create_graph=False)[0]
        adv_images = adv_images.detach() + alpha * grad.sign()
        delta = torch.clamp(adv_images - images, min=-eps, max=eps)
        adv_images = torch.clamp(images + delta, min=0, max=1).detach()
    return adv_images


def report(name, model, images, labels, adv):
    delta = (adv - images).flatten(1)
    print(name)
    print("  clean acc", (model(images).argmax(1) == labels).float().mean().item())
    print("  robust acc", (model(adv).argmax(1) == labels).float().mean().item())
    print("  linf", [round(v, 4) for v in delta.abs().max(1)[0].tolist()])
    print("  l2", [round(v, 3) for v in delta.norm(dim=1).tolist()])
    print("  changed pixels", (delta != 0).sum(1).tolist())
    print("  ", adv.dtype, tuple(adv.shape), adv.requires_grad, adv.min().item() >= 0,
          adv.max().item() <= 1)


rng = np.random.RandomState(0)
model = Net()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.1, p.shape).astype(np.float32)))
model.eval()
images = torch.from_numpy(rng.uniform(0, 1, (4, 3, 32, 32)).astype(np.float32))
labels = model(images).argmax(1)
labels[::2] = (labels[::2] + 1) % 10       # half misclassified already
print("labels", labels.tolist(), labels.dtype)

report("FGSM", model, images, labels, fgsm(model, images, labels))
report("BIM", model, images, labels, bim(model, images, labels))
report("PGD", model, images, labels, pgd(model, images, labels))
target = (labels + 3) % 10
report("PGD targeted", model, images, labels,
       pgd(model, images, labels, targeted=True, target_labels=target))
