"""Curve fitting the ways notebooks solve it: vander + lstsq in closed form, LBFGS with a closure,
Gaussian-basis features in an nn.Module with buffers, and a straight-through rounding Function."""
import math

import torch
import torch.nn as nn

x = torch.linspace(-math.pi, math.pi, 400)
y = torch.sin(x)

A = torch.vander(x, N=4, increasing=True)
print(A.shape, A[0], A[-1])
closed = torch.linalg.lstsq(A, y.unsqueeze(1)).solution.squeeze(1)
print('lstsq coefficients', [round(c, 4) for c in closed.tolist()])
print('lstsq mse', round(((A @ closed - y) ** 2).mean().item(), 5))
normal_eq = torch.linalg.solve(A.T @ A, A.T @ y)
print('normal equations agree', torch.allclose(normal_eq, closed, atol=1e-3))

coeffs = torch.zeros(4, requires_grad=True)
optimizer = torch.optim.LBFGS([coeffs], lr=1, max_iter=50, history_size=10, line_search_fn='strong_wolfe')


def closure():
    optimizer.zero_grad()
    loss = ((A @ coeffs - y) ** 2).mean()
    loss.backward()
    return loss


for _ in range(3):
    optimizer.step(closure)
print('LBFGS loss', round(closure().item(), 5), [round(v, 3) for v in coeffs.tolist()])
print('LBFGS reaches lstsq', torch.allclose(coeffs.detach(), closed, atol=1e-2))
print(sorted(optimizer.state_dict()['param_groups'][0].keys()))


class GaussianBasis(nn.Module):
    def __init__(self, centres, width):
        super().__init__()
        self.register_buffer('centres', centres)
        self.width = width
        self.linear = nn.Linear(len(centres), 1)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def features(self, x):
        return torch.exp(-(x.unsqueeze(-1) - self.centres) ** 2 / (2 * self.width ** 2))

    def forward(self, x):
        return self.linear(self.features(x)).squeeze(-1)


model = GaussianBasis(torch.linspace(-3, 3, 7), width=0.8)
print(model, [n for n, _ in model.named_buffers()], model.features(torch.tensor([0.0])).shape)
opt = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=1e-4)
for step in range(300):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        print(step, round(loss.item(), 4))
print('basis fit mse < 1e-3:', loss.item() < 1e-3)
with torch.no_grad():
    print('prediction at pi/2', round(model(torch.tensor([math.pi / 2])).item(), 2))


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        return torch.round(input)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


w = torch.tensor([0.4, 1.6, -2.3], requires_grad=True)
q = RoundSTE.apply(w * 2)
print('rounded', q, q.requires_grad)
(q * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
print('straight-through gradient', w.grad)
target = torch.tensor([1.0, 3.0, -5.0])
w = torch.tensor([0.1, 0.1, 0.1], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
for _ in range(60):
    loss = ((RoundSTE.apply(w * 2) - target) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print('quantised weights reach target', RoundSTE.apply(w * 2).tolist(), loss.item())
