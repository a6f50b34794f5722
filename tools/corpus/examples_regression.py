"""pytorch/examples-style polynomial regression: features by torch.cat of powers, smooth_l1, manual updates."""
from itertools import count

import torch
import torch.nn.functional as F

POLY_DEGREE = 4
torch.manual_seed(0)
W_target = torch.randn(POLY_DEGREE, 1) * 5
b_target = torch.randn(1) * 5


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def f(x):
    """Approximated function."""
    return x.mm(W_target) + b_target.item()


def poly_desc(W, b):
    """Creates a string description of a polynomial."""
    result = 'y = '
    for i, w in enumerate(W):
        result += '{:+.2f} x^{} '.format(w, i + 1)
    result += '{:+.2f}'.format(b[0])
    return result


def get_batch(batch_size=32):
    """Builds a batch i.e. (x, f(x)) pair."""
    random = torch.randn(batch_size)
    x = make_features(random)
    y = f(x)
    return x, y


print(make_features(torch.tensor([1.0, 2.0])))
print(poly_desc(torch.tensor([1.0, -2.5, 0.125, 3.0]), torch.tensor([-0.5])))

fc = torch.nn.Linear(W_target.size(0), 1)
for batch_idx in count(1):
    batch_x, batch_y = get_batch()
    fc.zero_grad()
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    output.backward()
    for param in fc.parameters():
        param.data.add_(-0.1 * param.grad)
    if loss < 1e-3 or batch_idx > 20000:
        break

print('converged:', loss < 1e-3)
print('==> Learned function close to the actual one:',
      torch.allclose(fc.weight.view(-1), W_target.view(-1), atol=0.3),
      abs(fc.bias.item() - b_target.item()) < 0.3)
print(len(poly_desc(fc.weight.view(-1), fc.bias)) > 20)
