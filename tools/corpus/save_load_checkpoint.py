"""Saving and resuming training as the recipes do: checkpoints with optimizer and scheduler, BytesIO, map_location, partial loads."""
import io
import os
import tempfile

import torch
import torch.nn as nn
import torch.optim as optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def make():
    net = Net()
    with torch.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) + 0.05 * i)
    return net


x = torch.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]])
target = torch.tensor([1, 0])
net = make()
opt = optim.Adam(net.parameters(), lr=0.01)
sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
for epoch in range(3):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(net(x), target)
    loss.backward()
    opt.step()
    sched.step()

tmp = tempfile.mkdtemp()
path = os.path.join(tmp, 'checkpoint.pt')
torch.save({'epoch': 3, 'model_state_dict': net.state_dict(), 'optimizer_state_dict': opt.state_dict(),
            'scheduler': sched.state_dict(), 'loss': loss.item(), 'history': [1.0, 0.5]}, path)
print('saved', os.path.getsize(path) > 0)

ckpt = torch.load(path, weights_only=True)
print(sorted(ckpt), ckpt['epoch'], round(ckpt['loss'], 4), ckpt['history'])
print(list(ckpt['model_state_dict'].keys()))
print(ckpt['optimizer_state_dict']['param_groups'][0]['lr'], sorted(ckpt['optimizer_state_dict']['state'][0]))
print(ckpt['optimizer_state_dict']['state'][0]['step'], ckpt['scheduler']['last_epoch'])

resumed = make()
opt2 = optim.Adam(resumed.parameters(), lr=0.01)
sched2 = optim.lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
print(resumed.load_state_dict(ckpt['model_state_dict']))
opt2.load_state_dict(ckpt['optimizer_state_dict'])
sched2.load_state_dict(ckpt['scheduler'])
print('lr after resume', opt2.param_groups[0]['lr'], sched2.get_last_lr())
for model, o in ((net, opt), (resumed, opt2)):
    o.zero_grad()
    l = nn.functional.cross_entropy(model(x), target)
    l.backward()
    o.step()
print('same next step', all(torch.equal(a, b) for a, b in zip(net.parameters(), resumed.parameters())))

buffer = io.BytesIO()
torch.save(net.state_dict(), buffer)
buffer.seek(0)
sd = torch.load(buffer, map_location='cpu')
print('BytesIO round trip', all(torch.equal(sd[k], v) for k, v in net.state_dict().items()))
sd = torch.load(path, map_location=torch.device('cpu'))['model_state_dict']
print('map_location device', sd['fc1.weight'].device)
print(torch.load(path, map_location=lambda storage, loc: storage)['epoch'])

whole = os.path.join(tmp, 'whole.pt')
torch.save(net, whole)
try:
    torch.load(whole)
except Exception as e:
    print('whole model with weights_only default:', type(e).__name__, 'weights_only' in str(e))
loaded = torch.load(whole, weights_only=False)
print(type(loaded).__name__, torch.equal(loaded(x), net(x)))

partial = {k: v for k, v in net.state_dict().items() if k.startswith('fc1')}
fresh = make()
result = fresh.load_state_dict(partial, strict=False)
print(result.missing_keys, result.unexpected_keys, torch.equal(fresh.fc1.weight, net.fc1.weight))
print(torch.equal(fresh.fc2.weight, make().fc2.weight))

renamed = {'encoder.' + k: v for k, v in net.state_dict().items()}
stripped = {k.replace('encoder.', '', 1): v for k, v in renamed.items()}
print(make().load_state_dict(stripped))

t = torch.arange(6.0).reshape(2, 3)
view = t[0]
torch.save({'base': t, 'view': view}, os.path.join(tmp, 'views.pt'))
back = torch.load(os.path.join(tmp, 'views.pt'))
back['view'][0] = 100.0
print('view sharing preserved', back['base'][0, 0].item())
torch.save([torch.tensor(1), 2.5, 'text', None, (1, 2), {'nested': torch.ones(2, dtype=torch.int16)}], os.path.join(tmp, 'misc.pt'))
print(torch.load(os.path.join(tmp, 'misc.pt')))
frozen = make()
frozen.fc1.requires_grad_(False)
sd = frozen.state_dict()
print('state_dict tensors detached', [v.requires_grad for v in sd.values()])
print(sd['fc1.bias'])
keep = frozen.state_dict(keep_vars=True)
print([type(v).__name__ for v in keep.values()], keep['fc2.bias'].requires_grad)
