"""numpy functions applied to tensors, as tutorials do (udacity's denoising autoencoder clips a
noisy batch with np.clip before the Conv2d): PyTorch hands the result back as a tensor, bool
results as uint8, and np.sort / np.concatenate give ndarrays."""
import warnings

import numpy as np
import torch
import torch.nn as nn

warnings.simplefilter("ignore", DeprecationWarning)  # numpy 2 on torch's one-argument wrap

images = torch.linspace(-0.5, 1.5, 32).view(2, 1, 4, 4)
noisy = images + 0.25 * torch.cos(torch.arange(32.0)).view(2, 1, 4, 4)
clipped = np.clip(noisy, 0.0, 1.0)
print(type(clipped).__name__, clipped.dtype, clipped.shape)
print(clipped[0, 0])
conv = nn.Conv2d(1, 2, 3, padding=1)
with torch.no_grad():
    conv.weight.fill_(0.1)
    conv.bias.fill_(0.0)
print(conv(clipped).sum(dim=(2, 3)))

t = torch.tensor([[-1.0, 0.25, 2.5]])
labels = torch.tensor([3, 1, 2])
for name, value in [("round", np.round(t)), ("around", np.around(t, 1)), ("exp", np.exp(t)),
                    ("maximum", np.maximum(t, 0.5)), ("transpose", np.transpose(t)),
                    ("reshape", np.reshape(t, (3,))), ("argmax", np.argmax(t)),
                    ("cumsum", np.cumsum(t)), ("argsort", np.argsort(labels)),
                    ("sqrt", np.sqrt(labels)), ("greater", np.greater(t, 0)),
                    ("isnan", np.isnan(t)), ("sort", np.sort(t)),
                    ("concatenate", np.concatenate([t, t]))]:
    print(f"{name:12s}", type(value).__name__, value.dtype, value.tolist())
print(np.float64(2) * t)
