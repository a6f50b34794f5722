"""Neuroevolution and population methods on small nn.Sequential policies and benchmark
functions: OpenAI-ES with antithetic noise and centred-rank fitness shaping (argsort of
argsort), the update written into the model by torch.nn.utils.vector_to_parameters /
parameters_to_vector under no_grad; a genetic algorithm with tournament selection (indexing a
fitness table with a randint-like index matrix, argmax), uniform crossover through
torch.where on a mask, Gaussian mutation on a mask, elitism with sort / topk / gather;
particle swarm and differential evolution (rand/1/bin) steps on Rastrigin, and a
cross-entropy-method update of a Normal's mean and std from the elite set.

Inspired by BenSecret/Pytorch-Evolution-Strategies (pytorch-evolution-strategies.py: noise
populations added to the master weights and combined by normalised rewards); written anew.
Every random draw comes from numpy, so the output does not depend on torch's random stream.
"""
import math

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

rng = np.random.RandomState(11)


def t(a, dtype=torch.float32):
    return torch.tensor(np.asarray(a), dtype=dtype)


def rastrigin(x):
    return 10 * x.shape[-1] + (x ** 2 - 10 * torch.cos(2 * math.pi * x)).sum(-1)


policy = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
with torch.no_grad():
    for p in policy.parameters():
        p.copy_(t(rng.uniform(-0.5, 0.5, tuple(p.shape))))
obs = t(rng.standard_normal((16, 3)))
target = t(rng.standard_normal((16, 2)))


def episode_return(model):
    with torch.no_grad():
        return -((model(obs) - target) ** 2).mean().item()


theta = parameters_to_vector(policy.parameters()).detach().clone()
print("params", theta.numel(), theta.dtype, "grad_fn on the flat vector:",
      parameters_to_vector(policy.parameters()).grad_fn is not None)
sigma, lr, half = 0.05, 0.05, 10
for gen in range(8):
    eps = t(rng.standard_normal((half, theta.numel())))
    eps = torch.cat([eps, -eps])                          # antithetic pairs
    returns = torch.empty(2 * half)
    for i in range(2 * half):
        vector_to_parameters(theta + sigma * eps[i], policy.parameters())
        returns[i] = episode_return(policy)
    ranks = returns.argsort().argsort().float()
    shaped = ranks / (len(ranks) - 1) - 0.5               # centred ranks in [-0.5, 0.5]
    theta = theta + lr / (2 * half * sigma) * (shaped @ eps)
    vector_to_parameters(theta, policy.parameters())
    if gen % 2 == 1:
        print(f"es gen {gen}: mean return {returns.mean().item():.5f} best {returns.max().item():.5f} "
              f"theta return {episode_return(policy):.5f}")
print("weights are Parameters:", type(policy[0].weight).__name__, policy[0].weight.requires_grad,
      policy[0].weight.is_leaf)

# genetic algorithm over flat parameter vectors
pop_size, n_elite = 12, 2
population = theta + 0.1 * t(rng.standard_normal((pop_size, theta.numel())))
for gen in range(6):
    fitness = torch.empty(pop_size)
    for i in range(pop_size):
        vector_to_parameters(population[i], policy.parameters())
        fitness[i] = episode_return(policy)
    elite_vals, elite_idx = torch.topk(fitness, n_elite)
    elites = population.gather(0, elite_idx.unsqueeze(1).expand(-1, population.shape[1]))
    contestants = t(rng.randint(0, pop_size, size=(2 * (pop_size - n_elite), 3)), torch.int64)
    winners = contestants.gather(1, fitness[contestants].argmax(1, keepdim=True)).squeeze(1)
    parents_a, parents_b = population[winners[0::2]], population[winners[1::2]]
    mask = t(rng.uniform(size=parents_a.shape)) < 0.5
    children = torch.where(mask, parents_a, parents_b)
    mut = t(rng.uniform(size=children.shape)) < 0.05
    children = children + mut * 0.2 * t(rng.standard_normal(children.shape))
    population = torch.cat([elites, children])
    sorted_fit, order = torch.sort(fitness, descending=True)
    print(f"ga gen {gen}: best {sorted_fit[0].item():.5f} median {fitness.median().item():.5f} "
          f"elite {[round(v, 5) for v in elite_vals.tolist()]} mutated {int(mut.sum())}")

# particle swarm on Rastrigin
n, d = 10, 3
pos = t(rng.uniform(-3, 3, (n, d)))
vel = torch.zeros(n, d)
pbest, pbest_f = pos.clone(), rastrigin(pos)
gbest = pbest[pbest_f.argmin()].clone()
for it in range(10):
    r1, r2 = t(rng.uniform(size=(n, d))), t(rng.uniform(size=(n, d)))
    vel = 0.7 * vel + 1.5 * r1 * (pbest - pos) + 1.5 * r2 * (gbest - pos)
    pos = (pos + vel).clamp(-5.12, 5.12)
    f = rastrigin(pos)
    better = f < pbest_f
    pbest = torch.where(better.unsqueeze(1), pos, pbest)
    pbest_f = torch.minimum(f, pbest_f)
    gbest = pbest[pbest_f.argmin()].clone()
print("pso best", round(pbest_f.min().item(), 5), "at", gbest.numpy().round(4))

# differential evolution, rand/1/bin
pop = t(rng.uniform(-3, 3, (12, d)))
fit = rastrigin(pop)
for it in range(10):
    idx = torch.stack([t(rng.choice(12, 3, replace=False), torch.int64) for _ in range(12)])
    a, b, c = pop[idx[:, 0]], pop[idx[:, 1]], pop[idx[:, 2]]
    mutant = (a + 0.6 * (b - c)).clamp(-5.12, 5.12)
    cross = t(rng.uniform(size=(12, d))) < 0.9
    cross[torch.arange(12), t(rng.randint(0, d, 12), torch.int64)] = True
    trial = torch.where(cross, mutant, pop)
    f_trial = rastrigin(trial)
    keep = f_trial <= fit
    pop = torch.where(keep[:, None], trial, pop)
    fit = torch.where(keep, f_trial, fit)
print("de best", round(fit.min().item(), 5), "replaced last gen", int(keep.sum()))

# cross-entropy method on a 1-d Rastrigin with torch.distributions.Normal
mu, std = torch.tensor([2.5]), torch.tensor([2.0])
for it in range(6):
    dist = torch.distributions.Normal(mu, std)
    xs = mu + std * t(rng.standard_normal((40, 1)))
    scores = rastrigin(xs)
    elite = xs[scores.argsort()[:8]]
    mu, std = elite.mean(0), elite.std(0) + 1e-3
    print(f"cem {it}: mu {mu.item():.4f} std {std.item():.4f} "
          f"log_prob(elite) {dist.log_prob(elite).sum().item():.4f} cdf(0) {dist.cdf(torch.zeros(1)).item():.4f}")
