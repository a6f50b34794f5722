"""ConvNeXt block as timm / facebookresearch write it: depthwise 7x7, LayerNorm channels_last via
permute, GELU MLP, layer scale, DropPath. trunc_normal_ init."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def drop_path(x, drop_prob: float = 0., training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0., scale_by_keep: bool = True):
        super(DropPath, self).__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f'drop_prob={round(self.drop_prob,3):0.3f}'


class LayerNorm(nn.Module):
    def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.data_format = data_format
        if self.data_format not in ["channels_last", "channels_first"]:
            raise NotImplementedError
        self.normalized_shape = (normalized_shape, )

    def forward(self, x):
        if self.data_format == "channels_last":
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        elif self.data_format == "channels_first":
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            x = self.weight[:, None, None] * x + self.bias[:, None, None]
            return x


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


class Block(nn.Module):
    def __init__(self, dim, drop_path=0., layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init_value * torch.ones((dim)),
                                  requires_grad=True) if layer_scale_init_value > 0 else None
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()

    def forward(self, x):
        input = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
        x = self.norm(x)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.pwconv2(x)
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        x = input + self.drop_path(x)
        return x


def _init_weights(m):
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        nn.init.trunc_normal_(m.weight, std=.02)
        nn.init.constant_(m.bias, 0)


torch.manual_seed(0)
dp_rates = [x.item() for x in torch.linspace(0, 0.2, 6)]
print("dp rates:", [round(r, 4) for r in dp_rates])
stem = nn.Sequential(nn.Conv2d(3, 32, kernel_size=4, stride=4), LayerNorm(32, eps=1e-6, data_format="channels_first"))
blocks = nn.Sequential(*[Block(dim=32, drop_path=dp_rates[j]) for j in range(3)])
model = nn.Sequential(stem, blocks)
model.apply(_init_weights)
print(model[1][1])
print(model[1][1].drop_path)
w = model[1][0].pwconv1.weight
print("trunc bound:", w.abs().max().item() <= 0.04 + 1e-6, round(w.std().item(), 2))
x = torch.randn(2, 3, 32, 32)
model.eval()
y = model(x)
print(y.shape)
# layernorm channels_first equals LayerNorm2d via permute
ln_cf = LayerNorm(32, data_format="channels_first")
ln2d = LayerNorm2d(32, eps=1e-6)
z = torch.randn(2, 32, 5, 5)
print("ln equal:", torch.allclose(ln_cf(z), ln2d(z), atol=1e-5))
print(ln2d)
model.train()
torch.manual_seed(1)
y = model(x)
y.mean().backward()
print("gamma grad shape:", model[1][2].gamma.grad.shape)
print("dw weight shape:", model[1][0].dwconv.weight.shape, model[1][0].dwconv.groups)
n_dw = sum(p.numel() for n, p in model.named_parameters() if "dwconv" in n)
print("dw params:", n_dw)
dp = DropPath(0.5)
dp.train()
t = torch.ones(1000, 4)
out = dp(t)
print("droppath values:", sorted(set(out.unique().tolist())))
print("droppath per-sample:", bool((out == out[:, :1]).all()))
print(dp)
