"""A tutorial's 'load the model trained on the GPU' cell, run on a CPU machine.  The checkpoint
is made here: a state_dict saved normally, then its storages retagged as saved on cuda:0 (what
torch.save writes on a GPU box).  Loading it needs a map_location; the callable form is told
where each storage was saved."""
import io
import os
import tempfile
import zipfile

import torch
import torch.nn as nn

torch.manual_seed(0)


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


net = TinyNet()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1))

workdir = tempfile.mkdtemp()
cpu_path = os.path.join(workdir, "net_cpu.pth")
gpu_path = os.path.join(workdir, "net_gpu.pth")
torch.save(net.state_dict(), cpu_path)

# retag: the pickle names each storage's device as a length-prefixed string
with zipfile.ZipFile(cpu_path) as src, zipfile.ZipFile(gpu_path, "w") as dst:
    for info in src.infolist():
        data = src.read(info.filename)
        if info.filename.endswith("data.pkl"):
            data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
        dst.writestr(info.filename, data)

x = torch.tensor([[0.5, -1.0, 2.0, 0.25]])


def attempt(label, **kwargs):
    try:
        state = torch.load(gpu_path, **kwargs)
    except RuntimeError as err:
        print(f"{label}: RuntimeError: {str(err)[:96]}")
        return
    model = TinyNet()
    model.load_state_dict(state)
    print(f"{label}: loaded {sorted(state)}; out = {model(x).detach()}")


attempt("no map_location")
attempt("map_location='cpu'", map_location="cpu")
attempt("map_location=torch.device('cpu')", map_location=torch.device("cpu"))
attempt("dict naming cuda:0", map_location={"cuda:0": "cpu"})
attempt("dict naming cuda:1 only", map_location={"cuda:1": "cpu"})
attempt("weights_only=False", weights_only=False)

seen = []


def remember(storage, location):
    seen.append(location)
    return storage


attempt("callable keeping the storage", map_location=remember)
print("locations the callable saw:", seen)
attempt("callable returning None", map_location=lambda storage, location: None)

seen.clear()
torch.load(cpu_path, map_location=remember)
print("locations of the CPU file:", seen)
print("CPU file loads as is:", torch.equal(torch.load(cpu_path)["fc2.bias"], net.fc2.bias.detach()))
