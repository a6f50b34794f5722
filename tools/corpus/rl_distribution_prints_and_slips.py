"""What RL scripts print about their policies' distributions, and the slips they make: a
distribution built from a numpy array, a checkpoint saved into a directory never created."""
import os
import tempfile

import numpy as np
import torch
from torch.distributions import Bernoulli, Beta, Categorical, LogNormal, MultivariateNormal, Normal

print(Normal(torch.tensor([0.25]), torch.tensor([0.5])))
print(Normal(0.0, 1.0))
print(Normal(torch.zeros(1, 2), torch.ones(1, 2)))
print(Categorical(torch.tensor([[0.2, 0.8]])))
print(Categorical(logits=torch.tensor([0.0, 1.0])))
print(Bernoulli(torch.tensor([0.3])), Beta(torch.tensor([2.0]), torch.tensor([3.0])))
print(LogNormal(torch.tensor([0.0]), torch.tensor([1.0])))
print(MultivariateNormal(torch.zeros(2), torch.diag(torch.tensor([0.36, 0.36])).unsqueeze(0)))
print(MultivariateNormal(torch.zeros(1), scale_tril=torch.eye(1)))

for build in (lambda: Categorical(np.array([0.5, 0.5])),
              lambda: Categorical(logits=[0.1, 0.2]),
              lambda: Normal(np.zeros(2), 1.0),
              lambda: Normal(torch.zeros(1, 1), -torch.ones(1, 1)),
              lambda: Normal(torch.zeros(2), torch.ones(2)).log_prob(np.zeros(2))):
    try:
        build()
    except Exception as e:
        print(type(e).__name__, str(e).splitlines()[0])

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "exp", "actor.pth")
    try:
        torch.save({"w": torch.ones(2)}, path)
    except RuntimeError as e:
        print("RuntimeError", str(e).replace(d, "<tmp>"))
    os.makedirs(os.path.dirname(path))
    torch.save({"w": torch.ones(2)}, path)
    print(torch.load(path)["w"])
