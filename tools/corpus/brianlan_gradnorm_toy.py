# GradNorm (Chen et al. 2018) on a toy regression problem, as in many re-implementations
import torch
import torch.nn as nn
import numpy as np


class RegressionTrain(nn.Module):
    def __init__(self, model):
        super(RegressionTrain, self).__init__()
        self.model = model
        self.weights = torch.nn.Parameter(torch.ones(model.n_tasks).float())
        self.mse_loss = nn.MSELoss()

    def forward(self, x, ts):
        B, n_tasks = ts.shape[:2]
        ys = self.model(x)
        assert(ys.size()[1] == n_tasks)
        task_loss = []
        for i in range(n_tasks):
            task_loss.append(self.mse_loss(ys[:, i, :], ts[:, i, :]))
        task_loss = torch.stack(task_loss)
        return task_loss

    def get_last_shared_layer(self):
        return self.model.get_last_shared_layer()


class RegressionModel(nn.Module):
    def __init__(self, n_tasks):
        super(RegressionModel, self).__init__()
        self.n_tasks = n_tasks
        self.l1 = nn.Linear(250, 100)
        self.l2 = nn.Linear(100, 100)
        self.l3 = nn.Linear(100, 100)
        self.l4 = nn.Linear(100, 100)
        for i in range(self.n_tasks):
            layer = nn.Linear(100, 100)
            setattr(self, 'task_{}'.format(i), layer)

    def forward(self, x):
        h = self.l1(x).relu()
        h = self.l2(h).relu()
        h = self.l3(h).relu()
        h = self.l4(h).relu()
        outs = []
        for i in range(self.n_tasks):
            layer = getattr(self, 'task_{}'.format(i))
            outs.append(layer(h))
        return torch.stack(outs, dim=1)

    def get_last_shared_layer(self):
        return self.l4


def det_init(m, scale):
    with torch.no_grad():
        for name, p in m.named_parameters():
            k = torch.arange(p.numel(), dtype=torch.float32)
            p.copy_((torch.sin(k * 0.37 + len(name)) * scale).reshape(p.shape))


n_tasks = 2
sigmas = [1.0, 10.0]
x = torch.cos(torch.arange(64 * 250, dtype=torch.float32) * 0.01).reshape(64, 250)
B = torch.sin(torch.arange(250 * 100, dtype=torch.float32) * 0.013).reshape(250, 100)
ts = torch.stack([s * torch.tanh(x @ B / 10.0) for s in sigmas], dim=1)
print('targets', ts.shape, ts.dtype)

model = RegressionTrain(RegressionModel(n_tasks))
det_init(model.model, 0.08)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
alpha = 0.12
weights = []
task_losses = []
loss_ratios = []
grad_norm_losses = []

model.train()
for t in range(12):
    task_loss = model(x, ts)
    weighted_task_loss = torch.mul(model.weights, task_loss)
    if t == 0:
        if torch.cuda.is_available():
            initial_task_loss = task_loss.data.cpu()
        else:
            initial_task_loss = task_loss.data
        initial_task_loss = initial_task_loss.numpy()
    loss = torch.sum(weighted_task_loss)
    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    model.weights.grad.data = model.weights.grad.data * 0.0

    W = model.get_last_shared_layer()
    norms = []
    for i in range(len(task_loss)):
        gygw = torch.autograd.grad(task_loss[i], W.parameters(), retain_graph=True)
        norms.append(torch.norm(torch.mul(model.weights[i], gygw[0])))
    norms = torch.stack(norms)

    loss_ratio = task_loss.data.cpu().numpy() / initial_task_loss
    inverse_train_rate = loss_ratio / np.mean(loss_ratio)
    mean_norm = np.mean(norms.data.cpu().numpy())
    constant_term = torch.tensor(mean_norm * (inverse_train_rate ** alpha), requires_grad=False)
    grad_norm_loss = torch.sum(torch.abs(norms - constant_term))
    model.weights.grad = torch.autograd.grad(grad_norm_loss, model.weights)[0]
    optimizer.step()

    normalize_coeff = n_tasks / torch.sum(model.weights.data, dim=0)
    model.weights.data = model.weights.data * normalize_coeff

    task_losses.append(task_loss.data.cpu().numpy())
    loss_ratios.append(np.sum(task_losses[-1] / task_losses[0]))
    weights.append(model.weights.data.cpu().numpy())
    grad_norm_losses.append(grad_norm_loss.data.cpu().numpy())
    if t % 3 == 0:
        print('{}/{}: loss_ratio={:.4f}, weights={}, task_loss={}, grad_norm_loss={:.4f}'.format(
            t, 12, loss_ratios[-1], model.weights.data.cpu().numpy(), task_loss.data.cpu().numpy().round(5),
            grad_norm_loss.data.cpu().numpy()))

task_losses = np.array(task_losses)
weights = np.array(weights)
print(task_losses.shape, weights.shape, weights.dtype, task_losses.dtype)
print('final weights sum', weights[-1].sum())
print(type(grad_norm_losses[-1]), grad_norm_losses[-1].shape)
