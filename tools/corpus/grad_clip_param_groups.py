"""Gradient clipping, per-parameter option groups and weight decay that excludes biases and norms."""
import torch
import torch.nn as nn


def make_model():
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.ReLU(), nn.Linear(4, 1))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-1.0, 1.0, p.numel()).reshape(p.shape) * (0.5 + 0.1 * i))
    return model


x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [0.0, -2.0, 1.0]])
y = torch.tensor([[1.0], [0.0], [2.0]])

model = make_model()
loss = nn.functional.mse_loss(model(x), y)
loss.backward()
grads = [p.grad.clone() for p in model.parameters()]
total = torch.norm(torch.stack([g.norm() for g in grads]))
print('total grad norm', total)
returned = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
print('clip_grad_norm_ returned', returned)
print('norm after clip', torch.norm(torch.stack([p.grad.norm() for p in model.parameters()])))
print('direction kept', torch.allclose(model[0].weight.grad * total, grads[0], atol=1e-5))
print('inf norm', torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0, norm_type=float('inf')))
print('clip_grad_norm_ no-op when small', torch.nn.utils.clip_grad_norm_(model.parameters(), 100.0))
torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.05)
print('max |grad| after clip_value', max(p.grad.abs().max().item() for p in model.parameters()))
print('get_total_norm', torch.nn.utils.get_total_norm([p.grad for p in model.parameters()]))
single = torch.tensor([3.0, 4.0], requires_grad=True)
single.grad = torch.tensor([3.0, 4.0])
print('single tensor', torch.nn.utils.clip_grad_norm_(single, 1.0), single.grad)

decay, no_decay = [], []
for name, p in make_model().named_parameters():
    (no_decay if name.endswith('bias') or p.ndim == 1 else decay).append(name)
print('decay', decay)
print('no_decay', no_decay)

model = make_model()
groups = [
    {'params': [p for n, p in model.named_parameters() if p.ndim > 1], 'weight_decay': 0.1},
    {'params': [p for n, p in model.named_parameters() if p.ndim == 1], 'weight_decay': 0.0, 'lr': 0.01},
]
opt = torch.optim.AdamW(groups, lr=0.05)
print(len(opt.param_groups), [g['lr'] for g in opt.param_groups], [g['weight_decay'] for g in opt.param_groups])
print(sorted(k for k in opt.param_groups[0] if k != 'params'))
for step in range(20):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print('AdamW groups loss', round(loss.item(), 4))

model = make_model()
opt = torch.optim.SGD([{'params': model[0].parameters()}, {'params': model[3].parameters(), 'lr': 0.001}],
                      lr=0.1, momentum=0.9)
print([g['lr'] for g in opt.param_groups], opt.param_groups[1]['momentum'])
opt.add_param_group({'params': model[1].parameters(), 'lr': 0.5})
print('after add_param_group', [g['lr'] for g in opt.param_groups], len(opt.param_groups[2]['params']))
for step in range(5):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print('SGD groups loss', round(loss.item(), 4))
for g in opt.param_groups:
    g['lr'] *= 0.5
print('halved', [g['lr'] for g in opt.param_groups])
sd = opt.state_dict()
print(sorted(sd), len(sd['state']), sd['param_groups'][0]['params'], sd['param_groups'][1]['params'])
print(sorted(sd['state'][0]))

w = torch.tensor([1.0, -2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1, weight_decay=0.5)
w.sum().backward()
opt.step()
print('SGD weight_decay step', w)
w2 = torch.tensor([1.0, -2.0], requires_grad=True)
opt = torch.optim.Adam([w2], lr=0.1, weight_decay=0.5)
w2.sum().backward()
opt.step()
print('Adam weight_decay step', w2)
try:
    torch.optim.SGD([w, w], lr=0.1)
except Exception as e:
    print(type(e).__name__)
try:
    torch.optim.SGD([{'params': [w]}, {'params': [w]}], lr=0.1)
except ValueError as e:
    print('duplicate across groups: ValueError')
try:
    torch.optim.SGD([w], lr=-1)
except ValueError as e:
    print('negative lr: ValueError', 'Invalid learning rate' in str(e))
