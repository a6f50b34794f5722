"""Idioms met in real tutorial and example programs: batching one image in place, a model wrapped
"in case of several GPUs", a checkpoint of a whole transformer, safe_globals lists naming torch's
module files, walking grad_fn.next_functions, and a loss-scaled training loop."""
import io
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.parallel  # noqa: F401  (imported by GAN scripts whether or not they use it)
import torch.onnx  # noqa: F401  (imported by language-model scripts for an optional export)

torch.manual_seed(0)

# One image becomes a batch of one, in place; the same object is returned.
image = torch.arange(12.0).reshape(3, 2, 2)
same = image.unsqueeze_(0)
print(same is image, image.shape, image.ndimension())
image.squeeze_(0)
print(image.shape, image.transpose_(1, 2).shape, image[0])
grid = torch.arange(6.0).reshape(2, 3)
grid.t_()
print(grid, grid.is_contiguous())
weights = torch.ones(3, requires_grad=True)
try:
    weights.unsqueeze_(0)
except RuntimeError as e:
    print("leaf in-place:", e)

# A model wrapped in DataParallel: on CPU the wrapper runs the model itself.
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
wrapped = nn.DataParallel(model)
print(wrapped.device_ids, list(wrapped.state_dict())[:2])
x = torch.linspace(-1, 1, 12).reshape(3, 4)
print(torch.equal(wrapped(x), model(x)))
plain = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
plain.load_state_dict(wrapped.module.state_dict())
print(torch.equal(plain(x), model(x)))
print("in onnx export:", torch.onnx.is_in_onnx_export())

# A whole transformer layer saved and loaded; the loader names the classes by their files.
layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0)
layer.eval()
buffer = io.BytesIO()
torch.save(layer, buffer)
buffer.seek(0)
allowed = [nn.modules.transformer.TransformerEncoderLayer, nn.modules.activation.MultiheadAttention,
           nn.modules.linear.NonDynamicallyQuantizableLinear, nn.modules.linear.Linear,
           nn.modules.normalization.LayerNorm, nn.modules.dropout.Dropout, F.relu]
with torch.serialization.safe_globals(allowed):
    restored = torch.load(buffer)
src = torch.linspace(-2, 2, 48).reshape(3, 2, 8)
print(type(restored).__name__, restored.activation is F.relu,
      torch.allclose(restored(src), layer(src)))

# A recurrent model calls flatten_parameters() before each forward (a no-op on CPU).
rnn = nn.GRU(3, 5, num_layers=2)
print(rnn.flatten_parameters(), rnn(torch.zeros(4, 1, 3))[0].shape)

# Walking the graph backwards from a result, as the autograd tutorials do.
a = torch.linspace(0.0, 1.0, 5, requires_grad=True)
d = 2 * torch.sin(a) + 1
print(d.grad_fn.name(), [f.name() if f else None for f, _ in d.grad_fn.next_functions])
mul = d.grad_fn.next_functions[0][0]
print(mul.name(), [f.name() if f else None for f, _ in mul.next_functions])
sin = mul.next_functions[0][0]
print(sin.name(), sin.next_functions[0][0].name(), sin.next_functions[0][0].next_functions)

# Loss scaling with an injected overflow: the step is skipped and the scale backs off.
w = nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
opt = torch.optim.SGD([w], lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=2)
inputs = torch.tensor([0.5, 1.0, -1.5])
for step in range(5):
    opt.zero_grad()
    with torch.autocast(device_type="cpu", enabled=False):
        loss = ((w * inputs).sum() - 1.0) ** 2
    scaler.scale(loss).backward()
    if step == 2:
        w.grad[1] = float("inf")
    scaler.unscale_(opt)
    nn.utils.clip_grad_norm_(w, max_norm=10.0)
    scaler.step(opt)
    scaler.update()
    print(step, scaler.get_scale(), [round(v, 4) for v in w.tolist()])
print(scaler.state_dict())
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    legacy = torch.cuda.amp.GradScaler()
print("cuda scaler enabled:", legacy.is_enabled(), legacy.get_scale())
