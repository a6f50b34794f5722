"""Spatial transformer network: a localization net regresses a 2x3 affine theta (its last layer
initialised to the identity), F.affine_grid builds the sampling grid and F.grid_sample warps the
input before an ordinary LeNet-style classifier; SGD steps train both through grid_sample's
gradient with respect to the input and to the grid.

Source: Koorye/pytorch-tutorial, 10.05.spatial_transformer_networks.py (PyTorch's spatial
transformer tutorial).  Adapted: MNIST replaced by 16 class-dependent 28x28 images drawn with
numpy; every parameter drawn with numpy; two SGD steps (later ones amplify float rounding
at bilinear kinks: the second step's gradient is printed to 2 decimals, as PyTorch's own
differs in the 4th between its default and AVX-512 kernels, ATEN_CPU_CAPABILITY); the training steps run with the model in eval mode so
its two dropouts draw nothing (no batch norm, so eval changes nothing else); plotting left out.
Kept: the tutorial's `import urllib` / `urllib.request.build_opener()` preamble, which works
only because importing torch loads urllib.request.  Also printed: affine_grid / grid_sample under
both align_corners settings and the nearest / border / reflection options.
"""
import urllib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

opener = urllib.request.build_opener()
opener.addheaders = [('User-agent', 'Mozilla/5.0')]
print("opener:", type(opener).__name__, opener.addheaders)

rs = np.random.RandomState(0)
labels_np = rs.randint(0, 10, 16)
prototypes = rs.rand(10, 28, 28)
images_np = (prototypes[labels_np] + 0.3 * rs.rand(16, 1, 28, 28).squeeze(1))[:, None]
images = torch.tensor(images_np, dtype=torch.float32)
labels = torch.tensor(labels_np)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))

    def identity_theta(self):
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x):
        xs = self.localization(x).view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False), theta

    def forward(self, x):
        x, _ = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


model = Net()
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.tensor(rs.uniform(-0.2, 0.2, tuple(p.shape)), dtype=torch.float32))
model.identity_theta()
model.eval()

warped, theta = model.stn(images)
print("identity theta:", theta[0].detach())
print("identity warp max error:", round((warped - images).abs().max().item(), 5))

optimizer = optim.SGD(model.parameters(), lr=0.01)
for step in range(2):
    optimizer.zero_grad()
    output = model(images)
    loss = F.nll_loss(output, labels)
    loss.backward()
    print(f"step {step}: loss {loss.item():.5f} theta-bias grad {model.fc_loc[2].bias.grad.numpy().astype(float).round(2 if step else 4).tolist()}")
    optimizer.step()

with torch.no_grad():
    output = model(images)
    pred = output.argmax(dim=1)
    print("test loss:", round(F.nll_loss(output, labels, reduction='sum').item() / 16, 5),
          "correct:", pred.eq(labels).sum().item(), "/ 16")
    warped, theta = model.stn(images)
    print("learned theta[0]:", theta[0].numpy().astype(float).round(4).tolist())
    print("warped shape:", tuple(warped.shape), "sum:", round(warped.sum().item(), 3))

# the sampling options on one small image, with a rotation-and-shift theta needing padding
small = torch.arange(1.0, 17.0).view(1, 1, 4, 4).requires_grad_()
angle = torch.tensor(0.4)
theta = torch.stack([torch.stack([angle.cos(), -angle.sin(), torch.tensor(0.3)]),
                     torch.stack([angle.sin(), angle.cos(), torch.tensor(-0.2)])]).unsqueeze(0)
theta.requires_grad_()
for align in (False, True):
    grid = F.affine_grid(theta, (1, 1, 4, 4), align_corners=align)
    print("align_corners", align, "grid[0, 0]:", grid[0, 0].detach().numpy().astype(float).round(4).tolist())
    for mode, padding in (("bilinear", "zeros"), ("nearest", "zeros"), ("bilinear", "border"),
                          ("bilinear", "reflection")):
        out = F.grid_sample(small, grid, mode=mode, padding_mode=padding, align_corners=align)
        gin, gtheta = torch.autograd.grad(out.pow(2).sum(), (small, theta))
        print(f"  {mode:8s} {padding:10s} out row0 {out[0, 0, 0].detach().numpy().astype(float).round(4).tolist()}"
              f" |d small| {gin.abs().sum().item():.4f} d theta {gtheta[0].numpy().astype(float).round(4).tolist()}")
