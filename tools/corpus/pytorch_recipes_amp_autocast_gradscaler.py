# PyTorch AMP recipe, CPU edition
import torch
import torch.nn as nn

torch.manual_seed(0)

def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(nn.Linear(in_size, in_size))
        layers.append(nn.ReLU())
    layers.append(nn.Linear(in_size, out_size))
    return nn.Sequential(*tuple(layers))

def fill(m):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            n = p.numel()
            p.copy_((torch.arange(n, dtype=torch.float32).reshape(p.shape) % 7 - 3) * 0.05 / (i + 1))

batch_size, in_size, out_size, num_layers = 16, 32, 8, 3
net = make_model(in_size, out_size, num_layers)
fill(net)
data = [(torch.linspace(-1, 1, batch_size * in_size).reshape(batch_size, in_size) * (k + 1),
         torch.linspace(0, 1, batch_size * out_size).reshape(batch_size, out_size)) for k in range(3)]
loss_fn = nn.MSELoss()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
use_amp = True
scaler = torch.amp.GradScaler("cpu", enabled=use_amp)
for epoch in range(2):
    for input, target in data:
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
            output = net(input)
            print("output dtype", output.dtype)
            loss = loss_fn(output, target)
            print("loss dtype", loss.dtype)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.1)
        print("grad dtype", net[0].weight.grad.dtype, "norm %.4f" % gn.item())
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    print(epoch, "loss %.5f" % loss.item())
print("scale", scaler.get_scale())
checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict()}
print(sorted(checkpoint["scaler"].keys()))
print(torch.is_autocast_enabled("cpu") if hasattr(torch, "is_autocast_enabled") else None)
