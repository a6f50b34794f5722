"""Learning PyTorch with Examples: the cubic fit with torch.optim.RMSprop."""
import math

import torch

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
torch.nn.init.constant_(model[0].weight, 0.1)
torch.nn.init.constant_(model[0].bias, -0.1)
loss_fn = torch.nn.MSELoss(reduction='sum')

learning_rate = 1e-3
optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)
for t in range(2000):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 400 == 99:
        # One decimal: RMSprop's per-coordinate scaling amplifies float32 rounding, and the
        # second decimal differs between two correct float32 implementations after ~900 steps.
        print(t, f"{loss.item():.1f}")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

linear_layer = model[0]
print(f'Result: y = {linear_layer.bias.item():.2f} + {linear_layer.weight[:, 0].item():.2f} x + '
      f'{linear_layer.weight[:, 1].item():.2f} x^2 + {linear_layer.weight[:, 2].item():.2f} x^3')
group = optimizer.param_groups[0]
print(type(optimizer).__name__, group['lr'], group['alpha'], group['eps'], len(group['params']))
