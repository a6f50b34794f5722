"""Checkpointing as the Zero-to-GANs course notebooks do it: saving generator / optimizer
state_dicts and whole modules, reloading them into fresh objects, and the failures those notebooks
hit: a Windows-style path whose parent ('...') does not exist, a parent that is a plain file, a
missing file to load, and random_split lengths that do not add up.  Weights are fixed."""
import os
import tempfile
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset, random_split

workdir = tempfile.TemporaryDirectory()
os.chdir(workdir.name)
gen = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 2), nn.Tanh())
with torch.no_grad():
    for i, p in enumerate(gen.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) + i).reshape(p.shape) * 0.3)
opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
z = torch.linspace(-1, 1, 12).reshape(3, 4)
loss = gen(z).pow(2).mean()
loss.backward()
opt_g.step()
torch.save(gen.state_dict(), 'G.pth')
torch.save(opt_g.state_dict(), 'opt_g.pth')
torch.save(gen, 'gen_model.pth')
gen2 = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 2), nn.Tanh())
print(gen2.load_state_dict(torch.load('G.pth')))
opt2 = torch.optim.Adam(gen2.parameters(), lr=1.0)
opt2.load_state_dict(torch.load('opt_g.pth'))
print(opt2.param_groups[0]['lr'], opt2.param_groups[0]['betas'], sorted(opt2.state[0].keys()))
print(torch.equal(gen2(z), gen(z)), torch.load('gen_model.pth', weights_only=False)(z).detach().numpy().round(5))
open('notes.txt', 'w').write('x')
for path in ['...\\saved model GAN', 'runs\\G.pth', 'notes.txt/G.pth', 'missing_dir/G.pth']:
    try:
        torch.save(gen, path)
        print('saved', path)
    except RuntimeError as e:
        print('RuntimeError:', e)
print(sorted(f for f in os.listdir('.')))
try:
    torch.load('no_such.pth')
except FileNotFoundError as e:
    print('FileNotFoundError:', e)
ds = TensorDataset(torch.arange(10.).reshape(10, 1), torch.arange(10))
try:
    random_split(ds, [7, 2])
except ValueError as e:
    print('ValueError:', e)
a, b = random_split(ds, [7, 3])
print(len(a), len(b), type(a).__name__, sorted(int(i) for i in list(a.indices) + list(b.indices)))
os.chdir(os.path.dirname(workdir.name))
workdir.cleanup()
