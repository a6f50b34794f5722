"""'Learning PyTorch with examples' variants: a cubic fitted to sin(x) with nn.Flatten, a Legendre autograd.Function, and LBFGS."""
import math

import torch

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)
print(xx.shape, x.unsqueeze(-1).shape)

model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
with torch.no_grad():
    model[0].weight.zero_()
    model[0].bias.zero_()
loss_fn = torch.nn.MSELoss(reduction='sum')
learning_rate = 1e-6
for t in range(2000):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 500 == 99:
        print(t, round(loss.item(), 2))
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad
linear_layer = model[0]
print(f'Result: y = {linear_layer.bias.item():.4f} + {linear_layer.weight[:, 0].item():.4f} x + '
      f'{linear_layer.weight[:, 1].item():.4f} x^2 + {linear_layer.weight[:, 2].item():.4f} x^3')


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


dtype = torch.float
a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, dtype=dtype, requires_grad=True)
learning_rate = 5e-6
for t in range(2000):
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 500 == 99:
        print(t, round(loss.item(), 2))
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None
print(f'Result: y = {a.item():.4f} + {b.item():.4f} * P3({c.item():.4f} + {d.item():.4f} x)')
print(y_pred.grad_fn.__class__.__name__, torch.autograd.gradcheck(LegendrePolynomial3.apply, (torch.tensor([0.3, -0.7], dtype=torch.double, requires_grad=True),)))

coeffs = torch.zeros(4, requires_grad=True)
optimizer = torch.optim.LBFGS([coeffs], lr=1, max_iter=50, history_size=10, line_search_fn='strong_wolfe')


def closure():
    optimizer.zero_grad()
    pred = coeffs[0] + coeffs[1] * x + coeffs[2] * x ** 2 + coeffs[3] * x ** 3
    loss = ((pred - y) ** 2).mean()
    loss.backward()
    return loss


for _ in range(3):
    final = optimizer.step(closure)
print('LBFGS loss', round(closure().item(), 5), [round(v, 3) for v in coeffs.tolist()])

opt_model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
with torch.no_grad():
    opt_model[0].weight.fill_(0.1)
    opt_model[0].bias.fill_(0.0)
optimizer = torch.optim.RMSprop(opt_model.parameters(), lr=1e-3)
for t in range(1000):
    loss = loss_fn(opt_model(xx), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print('RMSprop loss', round(loss.item(), 1))
