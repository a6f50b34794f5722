"""Self-organising grids: a growing neural cellular automaton (fixed Sobel kernels rotated by an
angle, built with numpy and applied per channel with F.conv2d(groups=channels), channels-last
states transposed in and out, an alive mask from F.max_pool2d of the alpha channel, a
stochastic update mask compared with a fire rate, per-parameter gradient normalisation, Adam
with an ExponentialLR schedule and a sample pool indexed with numpy arrays), Conway's Game of
Life both with a fixed-weight nn.Conv2d neighbour counter (bool masks written in place) and
with torch.roll on a torus, a circular-padding laplacian, and a reaction-diffusion step with a
replicate-padded stencil.  Inspired by chenmingxiang110/Growing-Neural-Cellular-Automata,
benjaminrwilson/game-of-life and willisk/reaction-diffusion."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(8)
CHANNELS, SIZE, HIDDEN = 8, 10, 24


class CellularAutomaton(nn.Module):
    def __init__(self, channels, fire_rate, hidden):
        super().__init__()
        self.channels = channels
        self.fire_rate = fire_rate
        self.fc0 = nn.Linear(channels * 3, hidden)
        self.fc1 = nn.Linear(hidden, channels, bias=False)
        with torch.no_grad():
            self.fc0.weight.copy_(torch.from_numpy(rng.randn(hidden, channels * 3).astype(np.float32) * 0.05))
            self.fc0.bias.zero_()
            self.fc1.weight.copy_(torch.from_numpy(rng.randn(channels, hidden).astype(np.float32) * 0.05))

    def alive(self, x):
        return F.max_pool2d(x[:, 3:4, :, :], kernel_size=3, stride=1, padding=1) > 0.1

    def perceive(self, x, angle):
        def conv_with(x, kernel):
            weights = torch.from_numpy(kernel.astype(np.float32))
            weights = weights.view(1, 1, 3, 3).repeat(self.channels, 1, 1, 1)
            return F.conv2d(x, weights, padding=1, groups=self.channels)
        dx = np.outer([1, 2, 1], [-1, 0, 1]) / 8.0
        dy = dx.T
        c, s = np.cos(angle * np.pi / 180), np.sin(angle * np.pi / 180)
        return torch.cat((x, conv_with(x, c * dx - s * dy), conv_with(x, s * dx + c * dy)), 1)

    def update(self, x, fire_rate, angle, mask=None):
        x = x.transpose(1, 3)
        pre_life = self.alive(x)
        dx = self.perceive(x, angle).transpose(1, 3)
        dx = self.fc1(F.relu(self.fc0(dx)))
        if mask is None:
            mask = torch.rand([dx.size(0), dx.size(1), dx.size(2), 1]) > fire_rate
        dx = dx * mask.float()
        x = x + dx.transpose(1, 3)
        life = (pre_life & self.alive(x)).float()
        return (x * life).transpose(1, 3)

    def forward(self, x, steps=1, fire_rate=None, angle=0.0, masks=None):
        for i in range(steps):
            x = self.update(x, self.fire_rate if fire_rate is None else fire_rate, angle,
                            None if masks is None else masks[i])
        return x


target = torch.from_numpy(rng.rand(SIZE, SIZE, 4).astype(np.float32))
target[..., :3] *= target[..., 3:]
seed = np.zeros([SIZE, SIZE, CHANNELS], np.float32)
seed[SIZE // 2, SIZE // 2, 3:] = 1.0
pool = np.repeat(seed[None, ...], 6, 0)
ca = CellularAutomaton(CHANNELS, 0.5, HIDDEN)
opt = torch.optim.Adam(ca.parameters(), lr=2e-3, betas=(0.5, 0.5))
sched = torch.optim.lr_scheduler.ExponentialLR(opt, 0.99)
steps = 6
for it in range(4):
    idx = rng.choice(len(pool), 3, replace=False)
    x0 = torch.from_numpy(pool[idx])
    masks = [torch.from_numpy(rng.rand(3, SIZE, SIZE, 1) > 0.5) for _ in range(steps)]
    x = ca(x0, steps=steps, angle=15.0, masks=masks)
    loss = F.mse_loss(x[..., :4], target.expand(3, -1, -1, -1))
    opt.zero_grad()
    loss.backward()
    for p in ca.parameters():
        p.grad.data = p.grad.data / (p.grad.data.norm() + 1e-8)
    opt.step()
    sched.step()
    pool[idx] = x.detach().cpu().numpy()
    alive = ca.alive(x.transpose(1, 3))
    print(f"it {it} loss {loss.item():.6f} alive {int(alive.sum())} {alive.dtype} "
          f"lr {sched.get_last_lr()[0]:.6f}")
print(ca)
out = ca(torch.from_numpy(pool[:2]), steps=2)
print(out.shape, out.requires_grad, type(out.grad_fn).__name__, out.dtype)

# damage: a circle cut out of the state with a meshgrid mask
yy, xx = torch.meshgrid(torch.linspace(-1, 1, SIZE), torch.linspace(-1, 1, SIZE), indexing="ij")
damage = ((xx - 0.5) ** 2 + yy ** 2 < 0.2).float()
damaged = x.detach() * (1 - damage)[None, :, :, None]
print("damaged cells", int(damage.sum()), round(x.detach().sum().item(), 4), round(damaged.sum().item(), 4))

# Game of Life with a fixed-weight convolution and in-place boolean writes
neighbours = nn.Conv2d(1, 1, 3, padding=1)
neighbours.weight = nn.Parameter(torch.Tensor([[[[1, 1, 1], [1, 0, 1], [1, 1, 1]]]]), requires_grad=False)
neighbours.bias = nn.init.zeros_(neighbours.bias)
board = torch.from_numpy((rng.rand(1, 1, 12, 12) < 0.4).astype(np.float32))
glider = torch.zeros(1, 1, 12, 12)
glider[0, 0, 1, 2] = glider[0, 0, 2, 3] = glider[0, 0, 3, 1] = glider[0, 0, 3, 2] = glider[0, 0, 3, 3] = 1
with torch.no_grad():
    for t in range(5):
        n = neighbours(board)[0, 0]
        state = board[0, 0]
        dies = (n < 2) | (n > 3)
        born = (n == 3) & (state == 0)
        state[dies & (state == 1)] = 0
        state[born] = 1
        print("life", t, int(board.sum()), board.dtype)


def life_torus(b):
    n = sum(torch.roll(b, (i, j), (0, 1)) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
    return ((n == 3) | ((b == 1) & (n == 2))).to(b.dtype)


g = glider[0, 0]
for t in range(4):
    g = life_torus(g)
print("glider after 4 steps", g.nonzero().tolist())

# a circular-padding laplacian and one Gray-Scott step on a replicate-padded stencil
lap = nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular", groups=2, bias=False)
with torch.no_grad():
    lap.weight.copy_(torch.tensor([[0.05, 0.2, 0.05], [0.2, -1.0, 0.2], [0.05, 0.2, 0.05]]).expand(2, 1, 3, 3))
uv = torch.from_numpy(rng.rand(1, 2, 12, 12).astype(np.float32))
print(lap, round(lap(uv).abs().sum().item(), 2), round(F.pad(uv, (1, 1, 1, 1), mode="circular")[0, 0, 0, :3].sum().item(), 4))


def laplace(u):
    u_pad = F.pad(u.unsqueeze(0).unsqueeze_(0), (1, 1, 1, 1), mode="replicate").squeeze_()
    u = -4 * u + u_pad[2:, 1:-1] + u_pad[1:-1, 2:] + u_pad[:-2, 1:-1] + u_pad[1:-1, :-2]
    u[:, 0] = u[0, :] = u[:, -1] = u[-1, :] = 0
    return u


A, B = uv[0, 0].clone(), uv[0, 1].clone() * 0.3
for t in range(20):
    R = A * B ** 2
    A += 0.16 * laplace(A) - R + 0.055 * (1 - A)
    B += 0.08 * laplace(B) + R - (0.062 + 0.055) * B
    A.clamp_(min=0, max=1)
    B.clamp_(min=0, max=1)
print("gray-scott", round(A.mean().item(), 5), round(B.mean().item(), 5), bool(A.isfinite().all()))
