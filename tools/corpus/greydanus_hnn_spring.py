"""A Hamiltonian neural network for the ideal spring, after greydanus/hamiltonian-nn
(nn_models.py MLP, hnn.py HNN, utils.py rk4 / L2_loss / integrate_model, experiment-spring
train.py, concatenated in that order).

Adapted: the dataset is the spring's closed-form trajectories with numpy noise (the original
integrates with scipy and differentiates with the `autograd` package); hidden width 200 -> 64,
2000 steps -> 60; the orthogonal initialisation draws from numpy instead of torch's generator;
argparse replaced by keyword arguments; the trained model is saved to and reloaded from a
temporary directory.  Kept as written: `rk4_time_derivative(x)` in train.py passes no `dt`
(a TypeError once --use_rk4 is given), called here through a try.
"""
import os
import tempfile

import numpy as np
import scipy.integrate
import torch

solve_ivp = scipy.integrate.solve_ivp
_rng = np.random.RandomState(0)


def orthogonal_from_numpy(weight):
    rows, cols = weight.shape
    flat = _rng.standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with torch.no_grad():
        weight.copy_(torch.tensor(q, dtype=weight.dtype))


def choose_nonlinearity(name):
    nl = None
    if name == 'tanh':
        nl = torch.tanh
    elif name == 'relu':
        nl = torch.relu
    elif name == 'sigmoid':
        nl = torch.sigmoid
    elif name == 'softplus':
        nl = torch.nn.functional.softplus
    elif name == 'selu':
        nl = torch.nn.functional.selu
    elif name == 'elu':
        nl = torch.nn.functional.elu
    elif name == 'swish':
        nl = lambda x: x * torch.sigmoid(x)
    else:
        raise ValueError("nonlinearity not recognized")
    return nl


class MLP(torch.nn.Module):
    '''Just a salt-of-the-earth MLP'''
    def __init__(self, input_dim, hidden_dim, output_dim, nonlinearity='tanh'):
        super(MLP, self).__init__()
        self.linear1 = torch.nn.Linear(input_dim, hidden_dim)
        self.linear2 = torch.nn.Linear(hidden_dim, hidden_dim)
        self.linear3 = torch.nn.Linear(hidden_dim, output_dim, bias=None)

        for l in [self.linear1, self.linear2, self.linear3]:
            orthogonal_from_numpy(l.weight)  # use a principled initialization
        with torch.no_grad():
            self.linear1.bias.copy_(torch.tensor(_rng.uniform(-0.1, 0.1, hidden_dim)))
            self.linear2.bias.copy_(torch.tensor(_rng.uniform(-0.1, 0.1, hidden_dim)))

        self.nonlinearity = choose_nonlinearity(nonlinearity)

    def forward(self, x, separate_fields=False):
        h = self.nonlinearity(self.linear1(x))
        h = self.nonlinearity(self.linear2(h))
        return self.linear3(h)


def rk4(fun, y0, t, dt, *args, **kwargs):
    dt2 = dt / 2.0
    k1 = fun(y0, t, *args, **kwargs)
    k2 = fun(y0 + dt2 * k1, t + dt2, *args, **kwargs)
    k3 = fun(y0 + dt2 * k2, t + dt2, *args, **kwargs)
    k4 = fun(y0 + dt * k3, t + dt, *args, **kwargs)
    dy = dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return dy


def L2_loss(u, v):
    return (u - v).pow(2).mean()


def integrate_model(model, t_span, y0, fun=None, **kwargs):
    def default_fun(t, np_x):
        x = torch.tensor(np_x, requires_grad=True, dtype=torch.float32)
        x = x.view(1, np.size(np_x))  # batch size of 1
        dx = model.time_derivative(x).data.numpy().reshape(-1)
        return dx
    fun = default_fun if fun is None else fun
    return solve_ivp(fun=fun, t_span=t_span, y0=y0, **kwargs)


class HNN(torch.nn.Module):
    '''Learn arbitrary vector fields that are sums of conservative and solenoidal fields'''
    def __init__(self, input_dim, differentiable_model, field_type='solenoidal',
                 baseline=False, assume_canonical_coords=True):
        super(HNN, self).__init__()
        self.baseline = baseline
        self.differentiable_model = differentiable_model
        self.assume_canonical_coords = assume_canonical_coords
        self.M = self.permutation_tensor(input_dim)  # Levi-Civita permutation tensor
        self.field_type = field_type

    def forward(self, x):
        # traditional forward pass
        if self.baseline:
            return self.differentiable_model(x)

        y = self.differentiable_model(x)
        assert y.dim() == 2 and y.shape[1] == 2, "Output tensor should have shape [batch_size, 2]"
        return y.split(1, 1)

    def rk4_time_derivative(self, x, dt):
        return rk4(fun=self.time_derivative, y0=x, t=0, dt=dt)

    def time_derivative(self, x, t=None, separate_fields=False):
        '''NEURAL ODE-STLE VECTOR FIELD'''
        if self.baseline:
            return self.differentiable_model(x)

        '''NEURAL HAMILTONIAN-STLE VECTOR FIELD'''
        F1, F2 = self.forward(x)  # traditional forward pass

        conservative_field = torch.zeros_like(x)  # start out with both components set to 0
        solenoidal_field = torch.zeros_like(x)

        if self.field_type != 'solenoidal':
            dF1 = torch.autograd.grad(F1.sum(), x, create_graph=True)[0]  # gradients for conservative field
            conservative_field = dF1 @ torch.eye(*self.M.shape)

        if self.field_type != 'conservative':
            dF2 = torch.autograd.grad(F2.sum(), x, create_graph=True)[0]  # gradients for solenoidal field
            solenoidal_field = dF2 @ self.M.t()

        if separate_fields:
            return [conservative_field, solenoidal_field]

        return conservative_field + solenoidal_field

    def permutation_tensor(self, n):
        M = None
        if self.assume_canonical_coords:
            M = torch.eye(n)
            M = torch.cat([M[n // 2:], -M[:n // 2]])
        else:
            '''Constructs the Levi-Civita permutation tensor'''
            M = torch.ones(n, n)  # matrix of ones
            M *= 1 - torch.eye(n)  # clear diagonals
            M[::2] *= -1  # pattern of signs
            M[:, ::2] *= -1

            for i in range(n):  # make asymmetric
                for j in range(i + 1, n):
                    M[i, j] *= -1
        return M


def get_dataset(seed=0, samples=20, test_split=0.5, noise_std=0.1):
    rs = np.random.RandomState(seed)
    xs, dxs = [], []
    t = np.linspace(0, 3, 30)
    for s in range(samples):
        y0 = rs.rand(2) * 2 - 1
        radius = rs.rand() * 0.9 + 0.1  # sample a range of radii
        y0 = y0 / np.sqrt((y0 ** 2).sum()) * radius
        q = y0[0] * np.cos(2 * t) + y0[1] * np.sin(2 * t)
        p = -y0[0] * np.sin(2 * t) + y0[1] * np.cos(2 * t)
        dq, dp = 2 * p, -2 * q
        q = q + rs.randn(*q.shape) * noise_std
        p = p + rs.randn(*p.shape) * noise_std
        xs.append(np.stack([q, p]).T)
        dxs.append(np.stack([dq, dp]).T)
    x, dx = np.concatenate(xs), np.concatenate(dxs)
    split_ix = int(len(x) * test_split)
    return {'x': x[:split_ix], 'test_x': x[split_ix:], 'dx': dx[:split_ix], 'test_dx': dx[split_ix:]}


def train(baseline=False, field_type='solenoidal', use_rk4=False, total_steps=60,
          print_every=20, nonlinearity='tanh', canonical=True, verbose=True):
    if verbose:
        print("Training baseline model:" if baseline else "Training HNN model:")

    output_dim = 2
    nn_model = MLP(2, 64, output_dim, nonlinearity)
    model = HNN(2, differentiable_model=nn_model, field_type=field_type, baseline=baseline,
                assume_canonical_coords=canonical)
    optim = torch.optim.Adam(model.parameters(), 1e-3, weight_decay=1e-4)

    # arrange data
    data = get_dataset(seed=0)
    x = torch.tensor(data['x'], requires_grad=True, dtype=torch.float32)
    test_x = torch.tensor(data['test_x'], requires_grad=True, dtype=torch.float32)
    dxdt = torch.Tensor(data['dx'])
    test_dxdt = torch.Tensor(data['test_dx'])

    # vanilla train loop
    stats = {'train_loss': [], 'test_loss': []}
    for step in range(total_steps + 1):

        # train step
        dxdt_hat = model.rk4_time_derivative(x, 0.1) if use_rk4 else model.time_derivative(x)
        loss = L2_loss(dxdt, dxdt_hat)
        loss.backward(); optim.step(); optim.zero_grad()

        # run test data
        test_dxdt_hat = model.rk4_time_derivative(test_x, 0.1) if use_rk4 else model.time_derivative(test_x)
        test_loss = L2_loss(test_dxdt, test_dxdt_hat)

        # logging
        stats['train_loss'].append(loss.item())
        stats['test_loss'].append(test_loss.item())
        if verbose and step % print_every == 0:
            print("step {}, train_loss {:.4e}, test_loss {:.4e}".format(step, loss.item(), test_loss.item()))

    train_dxdt_hat = model.time_derivative(x)
    train_dist = (dxdt - train_dxdt_hat) ** 2
    test_dxdt_hat = model.time_derivative(test_x)
    test_dist = (test_dxdt - test_dxdt_hat) ** 2
    print('Final train loss {:.4e} +/- {:.4e}\nFinal test loss {:.4e} +/- {:.4e}'
          .format(train_dist.mean().item(), train_dist.std().item() / np.sqrt(train_dist.shape[0]),
                  test_dist.mean().item(), test_dist.std().item() / np.sqrt(test_dist.shape[0])))
    return model, stats


print(HNN(4, MLP(4, 8, 2)).M)
print(HNN(5, MLP(5, 8, 2), assume_canonical_coords=False).M)
model, stats = train()
print(len(stats['train_loss']), round(min(stats['test_loss']), 4))
train(field_type='conservative', nonlinearity='relu')
train(field_type='both', canonical=False)
train(baseline=True)
train(use_rk4=True, total_steps=20)
try:
    model.rk4_time_derivative(torch.zeros(3, 2))
except TypeError as e:
    print('TypeError', e)

with tempfile.TemporaryDirectory() as save_dir:
    path = '{}/{}{}.tar'.format(save_dir, 'spring', '-hnn')
    torch.save(model.state_dict(), path)
    reloaded = HNN(2, differentiable_model=MLP(2, 64, 2))
    print(reloaded.load_state_dict(torch.load(path)))
    print(sorted(os.listdir(save_dir)))

path = integrate_model(reloaded, [0, 2], np.array([1.0, 0.0]), t_eval=np.linspace(0, 2, 5), rtol=1e-6)
print(path['y'].shape, np.round(path['y'], 3))
x = torch.tensor([[0.5, 0.1]], requires_grad=True)
conservative, solenoidal = reloaded.time_derivative(x, separate_fields=True)
print(conservative, solenoidal)
