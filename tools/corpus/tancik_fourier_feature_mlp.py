# Fourier feature networks (tancik/fourier-feature-networks, pytorch port)
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

RES = 32
x1 = np.linspace(0, 1, RES + 1)[:-1]
x_test = np.stack(np.meshgrid(x1, x1), axis=-1)
x_train = x_test[::2, ::2]
print(x_test.shape, x_train.shape)

img = np.sin(6 * x_test[..., 0]) * np.cos(4 * x_test[..., 1])
img = np.stack([img, img ** 2, 0.5 * img], -1).astype(np.float32)
y_test = torch.from_numpy(img)
y_train = y_test[::2, ::2]
print(y_train.shape, y_train.dtype)


def input_mapping(x, B):
    if B is None:
        return x
    x_proj = (2. * np.pi * x) @ B.T
    return torch.cat([torch.sin(x_proj), torch.cos(x_proj)], dim=-1)


class MLP(nn.Module):
    def __init__(self, d_in, width=64, depth=3, d_out=3):
        super().__init__()
        layers = []
        for i in range(depth - 1):
            layers += [nn.Linear(d_in if i == 0 else width, width), nn.ReLU()]
        layers += [nn.Linear(width, d_out), nn.Sigmoid()]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def det_init(m):
    if isinstance(m, nn.Linear):
        with torch.no_grad():
            k = torch.arange(m.weight.numel(), dtype=m.weight.dtype).reshape(m.weight.shape)
            m.weight.copy_(torch.cos(k * 1.7) / np.sqrt(m.in_features))
            m.bias.zero_()


mapping_size = 32
B_gauss = torch.randn(mapping_size, 2)
print("B", B_gauss.shape, B_gauss.dtype)
# deterministic B matrix with the same statistics
B_det = torch.sin(torch.arange(mapping_size * 2, dtype=torch.float32)).reshape(mapping_size, 2) * 3
B_dict = {"none": None, "basic": torch.eye(2), "gauss_3": B_det * 3.0, "gauss_1": B_det * 1.0}

xt = torch.tensor(x_train, dtype=torch.float32)
xT = torch.tensor(x_test, dtype=torch.float32)
print(xt.dtype, input_mapping(xt, B_dict["gauss_3"]).shape)


def psnr(pred, target):
    return -10 * torch.log10(2. * F.mse_loss(pred, target))


results = {}
for k, B in B_dict.items():
    d_in = 2 if B is None else 2 * B.shape[0]
    model = MLP(d_in)
    model.apply(det_init)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_psnrs = []
    for i in range(40):
        pred = model(input_mapping(xt, B))
        loss = .5 * F.mse_loss(pred, y_train)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 10 == 0:
            train_psnrs.append(psnr(pred, y_train).item())
    with torch.no_grad():
        test_psnr = psnr(model(input_mapping(xT, B)), y_test)
    results[k] = (train_psnrs, test_psnr.item())
    print(f"{k:8s} train {['%.3f' % p for p in train_psnrs]} test {test_psnr:.3f}")

best = max(results, key=lambda k: results[k][1])
print("best", best)
pred_img = model(input_mapping(xT, B)).detach().numpy()
print(pred_img.shape, pred_img.dtype, float(pred_img.clip(0, 1).mean()))
