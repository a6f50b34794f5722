"""luohaohaoluo/pytorch-tutorial VIT/VIT/models.py and VIT/VIT/train.py: a Vision Transformer on
MNIST-shaped images, with einops' rearrange for the patches and the qkv split, einsum attention,
a prepended class token, and the script's accuracy line (sum() of bool tensors, a 0-d tensor
formatted with :.2%).

Adapted: MNIST replaced by 256 training and 128 test 28x28 uint8 images drawn with numpy (labels
too), scaled as ToTensor does; the loaders do not shuffle; depth 2 instead of 6; 2 epochs; the
parameters drawn from one numpy stream; tqdm and the TensorBoard writer removed; a loss line
every other batch.
"""
import numpy as np
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(x, **kwargs) + x


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden_dim), nn.GELU(), nn.Linear(hidden_dim, dim))

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.scale = dim ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        b, n, _, h = *x.shape, self.heads
        qkv = self.to_qkv(x)
        q, k, v = rearrange(qkv, 'b n (qkv h d) -> qkv b h n d', qkv=3, h=h)
        dots = torch.einsum('bhid,bhjd->bhij', q, k) * self.scale
        if mask is not None:
            mask = F.pad(mask.flatten(1), (1, 0), value=True)
            assert mask.shape[-1] == dots.shape[-1], 'mask has incorrect dimensions'
            mask = mask[:, None, :] * mask[:, :, None]
            dots.masked_fill_(~mask, float('-inf'))
            del mask
        attn = dots.softmax(dim=-1)
        out = torch.einsum('bhij,bhjd->bhid', attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.to_out(out)


class Transformer(nn.Module):
    def __init__(self, dim, depth, heads, mlp_dim):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                Residual(PreNorm(dim, Attention(dim, heads=heads))),
                Residual(PreNorm(dim, FeedForward(dim, mlp_dim)))
            ]))

    def forward(self, x, mask=None):
        for attn, ff in self.layers:
            x = attn(x, mask=mask)
            x = ff(x)
        return x


class ViT(nn.Module):
    def __init__(self, *, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels=3):
        super().__init__()
        assert image_size % patch_size == 0, 'image dimensions must be divisible by the patch size'
        num_patches = (image_size // patch_size) ** 2
        patch_dim = channels * patch_size ** 2
        self.patch_size = patch_size
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.patch_to_embedding = nn.Linear(patch_dim, dim)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.transformer = Transformer(dim, depth, heads, mlp_dim)
        self.to_cls_token = nn.Identity()
        self.mlp_head = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, num_classes))

    def forward(self, img, mask=None):
        p = self.patch_size
        x = rearrange(img, 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=p, p2=p)
        x = self.patch_to_embedding(x)
        cls_tokens = self.cls_token.expand(img.shape[0], -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x += self.pos_embedding
        x = self.transformer(x, mask)
        x = self.to_cls_token(x[:, 0])
        return self.mlp_head(x)


def mnist_like(n, seed):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 1, 28, 28)).astype(np.float32) / 255.0
    labels = rng.integers(0, 10, n)
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
train_loader = DataLoader(mnist_like(256, 7), batch_size=64, shuffle=False)
test_loader = DataLoader(mnist_like(128, 8), batch_size=64, shuffle=False)
EPOCHS = 2

model = ViT(image_size=28, patch_size=7, num_classes=10, channels=1,
            dim=64, depth=2, heads=8, mlp_dim=128).to(device)
rng = np.random.default_rng(0)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.15, 0.15, tuple(p.shape)).astype(np.float32)))
print(sum(p.numel() for p in model.parameters()), "parameters")

loss_fn = torch.nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=0.003)

for epoch in range(EPOCHS):
    for ind, (X, Y) in enumerate(train_loader):
        X, Y = X.to(device), Y.to(device)
        optimizer.zero_grad()
        output = model(X)
        loss = loss_fn(output, Y)
        loss.backward()
        optimizer.step()
        if ind % 2 == 0:
            print(epoch, ind, f'{loss.item():.5f}')
    all_accnum, all_len = [], []
    for ind, (X, Y) in enumerate(test_loader):
        X, Y = X.to(device), Y.to(device)
        all_len.append(len(Y))
        output = model(X)
        pre = sum(torch.argmax(output, dim=1) == Y)
        all_accnum.append(pre)
    acc = sum(all_accnum) / sum(all_len)
    print(f"\n{epoch}: the test accuracy is {acc:.2%}")
    print(type(pre).__name__, pre.dtype, acc.dtype)

with torch.no_grad():
    logits = model(next(iter(test_loader))[0][:2])
print(logits.shape, logits.argmax(1).tolist())
