"""Gradient hooks on slices of an activation that is then edited in place (a clamp of one head's
logits, a masked fill of another's), the pattern of per-head gradient logging in attention code:
a hook registered before the in-place edit of its slice never fires (so its g * 10 changes
nothing), one registered after does, and a hook on the whole activation sees every head's
gradient."""
import torch

W = (torch.arange(24.0).reshape(4, 6).sin() * 0.7).requires_grad_()
x = torch.arange(12.0).reshape(3, 4).cos()
seen = []

logits = x @ W                      # (3, 6): two heads of three logits
head0, head1 = logits[:, :3], logits[:, 3:]
head0.register_hook(lambda g: seen.append(("head0 before clamp_", g.sum().item())) or g * 10)
head0.clamp_(-1.0, 1.0)
head1.masked_fill_(head1.detach() < 0, 0.0)
head1.register_hook(lambda g: seen.append(("head1 after masked_fill_", g.sum().item())))
logits.register_hook(lambda g: seen.append(("logits", round(g.abs().sum().item(), 4))))
loss = (logits.softmax(dim=1) * torch.arange(6.0)).sum() + (head1 ** 2).sum()
loss.backward()
for name, value in seen:
    print(name, round(value, 4))
print(W.grad)

# retain_grad on a slice follows the slice to its new value
y = torch.linspace(-1.0, 1.5, 5, requires_grad=True) * 1
part = y[1:4]
part.retain_grad()
part.mul_(3)
(part ** 2).sum().backward()
print(part.grad)

# an integer tensor filled out of place with a value that requires grad: PyTorch refuses
v = torch.tensor(2.0, requires_grad=True)
try:
    torch.arange(4).masked_fill(torch.tensor([True, False, True, False]), v)
except RuntimeError as e:
    print("RuntimeError:", e)
print(torch.arange(4).masked_fill(torch.tensor([True, False, True, False]), v.detach()))
