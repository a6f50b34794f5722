"""jasonrichdarmawan/learn-pytorch 8-transformer experiments (1-unfold, 4-need_weights,
5-multi_head_attention): an image cut into 2x2 patches with nn.Unfold, embedded by a Linear and
mixed by nn.MultiheadAttention, with and without the attention weights; the input built with
torch.arange(end=...), and the weights set deterministically instead of drawn."""
import numpy as np
import torch
from torch.nn import Linear, MultiheadAttention, Unfold


def fill_deterministically(module, seed):
    """Every parameter from one numpy stream, so the printed values do not depend on torch's."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))


channels, height, width = 3, 4, 6
image = torch.arange(end=1 * channels * height * width, dtype=torch.float)
image = image.view(1, channels, height, width)
print("image", image.shape, image.dtype, image[0, :, 0, :2].tolist())

unfold = Unfold(kernel_size=(2, 2), stride=(2, 2))
patches = unfold(image)
print("unfolded", patches.shape)
print(patches[0, :, :3])
patches = patches.permute(0, 2, 1)
print("patches", patches.shape, patches.is_contiguous())

embed_layer = Linear(12, 8)
fill_deterministically(embed_layer, 0)
embed = embed_layer(patches / 72.0)
print("embed", embed.shape, embed.grad_fn.name())
print(embed.flatten(start_dim=1, end_dim=2).shape)

linear_layer = Linear(6 * 8, 6 * 8)
mha = MultiheadAttention(embed_dim=8, num_heads=2)
fill_deterministically(mha, 1)
print("parameters in Linear:", sum(p.numel() for p in linear_layer.parameters()))
print("parameters in MultiheadAttention:", sum(p.numel() for p in mha.parameters()))
print([(name, tuple(p.shape)) for name, p in mha.named_parameters()])

# batch_first=False: the (1, 6, 8) embedding is read as 1 position of a batch of 6
without_weights, none_weights = mha(embed, embed, embed, need_weights=False)
with_weights, weights = mha(embed, embed, embed)
print("without weights", without_weights.shape, none_weights)
print("same output:", torch.allclose(without_weights, with_weights))
print("weights", weights.shape, weights.sum(dim=-1).flatten().tolist())
print(with_weights[0, :2].detach())

seq = embed.transpose(0, 1)          # 6 positions of a batch of 1
out, avg = mha(seq, seq, seq, average_attn_weights=True)
_, per_head = mha(seq, seq, seq, average_attn_weights=False)
print("sequence output", out.shape, "weights", avg.shape, per_head.shape)
print("head mean equals average:", torch.allclose(per_head.mean(dim=1), avg, atol=1e-6))
print(avg[0].detach())

loss = out.pow(2).mean()
loss.backward()
print("loss", round(loss.item(), 6))
print("grad norms", [round(p.grad.norm().item(), 5) for p in mha.parameters()])
print("embed weight grad", embed_layer.weight.grad.shape, round(embed_layer.weight.grad.abs().sum().item(), 5))
