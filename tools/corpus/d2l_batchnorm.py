"""d2l.ai-style batch normalization from scratch, checked against nn.BatchNorm1d/2d and nn.LayerNorm."""
import torch
from torch import nn


def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
    if not torch.is_grad_enabled():
        X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
    else:
        assert len(X.shape) in (2, 4)
        if len(X.shape) == 2:
            mean = X.mean(dim=0)
            var = ((X - mean) ** 2).mean(dim=0)
        else:
            mean = X.mean(dim=(0, 2, 3), keepdim=True)
            var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        X_hat = (X - mean) / torch.sqrt(var + eps)
        moving_mean = (1.0 - momentum) * moving_mean + momentum * mean
        moving_var = (1.0 - momentum) * moving_var + momentum * var
    Y = gamma * X_hat + beta
    return Y, moving_mean.data, moving_var.data


class BatchNorm(nn.Module):
    def __init__(self, num_features, num_dims):
        super().__init__()
        shape = (1, num_features) if num_dims == 2 else (1, num_features, 1, 1)
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        self.moving_mean = torch.zeros(shape)
        self.moving_var = torch.ones(shape)

    def forward(self, X):
        if self.moving_mean.device != X.device:
            self.moving_mean = self.moving_mean.to(X.device)
            self.moving_var = self.moving_var.to(X.device)
        Y, self.moving_mean, self.moving_var = batch_norm(
            X, self.gamma, self.beta, self.moving_mean, self.moving_var, eps=1e-5, momentum=0.1)
        return Y


X = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).reshape(2, 3, 4, 4).sin() * 3 + 1
mine = BatchNorm(3, num_dims=4)
ref = nn.BatchNorm2d(3)
print(ref)
y_mine, y_ref = mine(X), ref(X)
print('train outputs match:', torch.allclose(y_mine, y_ref, atol=1e-5))
print(ref.running_mean)
print(mine.moving_mean.reshape(-1))
print('running var (unbiased in nn):', ref.running_var)

ref.eval()
with torch.no_grad():
    y_mine, y_ref = mine(X), ref(X)
print('eval uses running statistics:', y_ref.shape, round(y_ref.mean().item(), 4))

X2 = torch.tensor([[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]])
bn1 = nn.BatchNorm1d(2, affine=False)
out = bn1(X2)
print(out[[0, 2]], out[1].abs().max().item() < 1e-6)
print(bn1.running_mean, bn1.running_var, bn1.num_batches_tracked)
ln = nn.LayerNorm(2)
print(ln(X2).detach())
print(nn.LayerNorm([3, 2], elementwise_affine=False)(X2.unsqueeze(0)))
gn = nn.GroupNorm(1, 3)
print(gn(X[:1]).mean().abs().item() < 1e-5)
print(list(dict(ref.named_buffers()).keys()))
