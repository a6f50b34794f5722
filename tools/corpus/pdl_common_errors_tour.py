"""mrdbourke/pytorch-deep-learning, extras/pytorch_most_common_errors.ipynb: the shape, device
and dtype errors it walks through, each printed as `Type: message` as the notebook shows them.
Adapted for the corpus: a FashionMNIST-shaped image from numpy instead of the download; weights
set from numpy where outputs are printed; plus the convolution of a uint8 image (notebook 04)."""
import numpy as np
import torch
from torch import nn


def show(label, fn):
    try:
        out = fn()
        print(label, "->", tuple(out.shape), out.dtype)
    except Exception as e:  # the notebook's point: read the error
        print(label, "->", f"{type(e).__name__}: {e}".splitlines()[0])


tensor_1 = torch.arange(12.).reshape(3, 4) / 10
tensor_2 = torch.arange(12., 0, -1).reshape(3, 4) / 10
print(torch.equal(tensor_1 * tensor_2, torch.mul(tensor_1, tensor_2)))
show("tensor_1 @ tensor_2", lambda: tensor_1 @ tensor_2)
show("tensor_1.T @ tensor_2", lambda: tensor_1.T @ tensor_2)
show("tensor_1 @ tensor_2.T", lambda: tensor_1 @ tensor_2.T)
show("torch.matmul(tensor_1, tensor_2)", lambda: torch.matmul(tensor_1, tensor_2))

rng = np.random.RandomState(0)
image_uint8 = torch.from_numpy(rng.randint(0, 256, size=(1, 28, 28)).astype(np.uint8))
image = image_uint8.float() / 255
print(f"Image shape: {image.shape} -> [batch, height, width]")


def seq(*layers):
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            if not isinstance(p, nn.parameter.UninitializedParameter):
                p.copy_(torch.linspace(-0.05, 0.05, p.numel()).reshape(p.shape))
    return model


show("model_0", lambda: seq(nn.Linear(10, 10), nn.Linear(10, 10))(image))
flatten = nn.Flatten()
print(f"After flatten shape: {flatten(image).shape} -> [batch, height*width]")
show("model_1", lambda: seq(nn.Flatten(), nn.Linear(10, 10), nn.Linear(10, 10))(image))
model_2 = seq(nn.Flatten(), nn.Linear(784, 10), nn.Linear(10, 10))
print(model_2(image))
show("model_3", lambda: seq(nn.Flatten(), nn.Linear(784, 10), nn.Linear(5, 10))(image))
model_4 = seq(nn.Flatten(), nn.Linear(784, 10), nn.LazyLinear(out_features=10))
print(model_4)
show("model_4", lambda: model_4(image))
print(model_4)
model_5 = seq(nn.Flatten(), nn.LazyLinear(out_features=10), nn.LazyLinear(out_features=10))
show("model_5", lambda: model_5(image))
print([tuple(p.shape) for p in model_5.parameters()])

# Datatype errors: the raw uint8 image into float layers
show("model_2(uint8 image)", lambda: model_2(image_uint8))
show("model_2(uint8 image.unsqueeze(0))", lambda: model_2(image_uint8.unsqueeze(0)))
show("model_2(float64 image)", lambda: model_2(image.double()))
print(f"Original datatype: {image_uint8.unsqueeze(dim=0).dtype}")
print(f"Changing the datatype: {image_uint8.unsqueeze(dim=0).type(torch.float32).dtype}")
conv = seq(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 26 * 26, 3))
show("conv(uint8 image)", lambda: conv(image_uint8.unsqueeze(0)))
show("conv(float64 image)", lambda: conv(image.double().unsqueeze(0)))
show("conv(float image)", lambda: conv(image.unsqueeze(0)))
print(conv(image.unsqueeze(0)))
conv_nobias = nn.Conv2d(1, 4, 3, bias=False)
show("conv no bias(uint8 image)", lambda: conv_nobias(image_uint8))
show("F.linear no bias(uint8)", lambda: nn.functional.linear(image_uint8.flatten(1), model_2[1].weight))

# Device errors: everything here is on the CPU
device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"Current device: {device}", image.device, next(model_2.parameters()).device)
show("image.numpy() on a tensor requiring grad", lambda: model_2(image).numpy())
print(model_2(image).detach().numpy().shape)
