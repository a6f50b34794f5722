# MAML with a conv4 backbone and functional conv2d (dragen1860 / cbfinn style)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
n_way, k_shot, k_query, imgsz = 5, 1, 2, 28

class Learner(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.vars = nn.ParameterList()
        self.vars_bn = nn.ParameterList()
        for i, (name, param) in enumerate(config):
            if name == 'conv2d':
                w = nn.Parameter(torch.ones(*param[:4]))
                torch.nn.init.kaiming_normal_(w)
                with torch.no_grad():
                    w.copy_(torch.sin(torch.arange(w.numel(), dtype=torch.float32)).reshape(w.shape) * 0.2)
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))
            elif name == 'linear':
                w = nn.Parameter(torch.ones(*param))
                with torch.no_grad():
                    w.copy_(torch.cos(torch.arange(w.numel(), dtype=torch.float32)).reshape(w.shape) * 0.1)
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))
            elif name == 'bn':
                w = nn.Parameter(torch.ones(param[0]))
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))
                running_mean = nn.Parameter(torch.zeros(param[0]), requires_grad=False)
                running_var = nn.Parameter(torch.ones(param[0]), requires_grad=False)
                self.vars_bn.extend([running_mean, running_var])

    def extra_repr(self):
        info = ''
        for name, param in self.config:
            if name == 'conv2d':
                info += 'conv2d:(ch_in:%d, ch_out:%d, k:%dx%d, stride:%d, padding:%d)\n' % (param[1], param[0], param[2], param[3], param[4], param[5])
            elif name in ['flatten', 'relu', 'max_pool2d']:
                info += name + ':' + str(tuple(param)) + '\n'
        return info

    def forward(self, x, vars=None, bn_training=True):
        if vars is None:
            vars = self.vars
        idx = 0
        bn_idx = 0
        for name, param in self.config:
            if name == 'conv2d':
                w, b = vars[idx], vars[idx + 1]
                x = F.conv2d(x, w, b, stride=param[4], padding=param[5])
                idx += 2
            elif name == 'linear':
                w, b = vars[idx], vars[idx + 1]
                x = F.linear(x, w, b)
                idx += 2
            elif name == 'bn':
                w, b = vars[idx], vars[idx + 1]
                running_mean, running_var = self.vars_bn[bn_idx], self.vars_bn[bn_idx + 1]
                x = F.batch_norm(x, running_mean, running_var, weight=w, bias=b, training=bn_training)
                idx += 2
                bn_idx += 2
            elif name == 'flatten':
                x = x.view(x.size(0), -1)
            elif name == 'relu':
                x = F.relu(x, inplace=param[0])
            elif name == 'max_pool2d':
                x = F.max_pool2d(x, param[0], param[1], param[2])
        assert idx == len(vars)
        assert bn_idx == len(self.vars_bn)
        return x

    def zero_grad(self, vars=None):
        with torch.no_grad():
            if vars is None:
                for p in self.vars:
                    if p.grad is not None:
                        p.grad.zero_()

    def parameters(self):
        return self.vars

config = [
    ('conv2d', [8, 1, 3, 3, 2, 0]),
    ('relu', [True]),
    ('bn', [8]),
    ('conv2d', [8, 8, 3, 3, 2, 0]),
    ('relu', [True]),
    ('bn', [8]),
    ('max_pool2d', [2, 1, 0]),
    ('flatten', []),
    ('linear', [n_way, 8 * 5 * 5]),
]
net = Learner(config)
print(net)
tmp = filter(lambda x: x.requires_grad, net.parameters())
num = sum(map(lambda x: x.numel(), tmp))
print('Total trainable tensors:', num)

x_spt = torch.sin(torch.arange(n_way * k_shot * imgsz * imgsz, dtype=torch.float32)).reshape(n_way * k_shot, 1, imgsz, imgsz)
y_spt = torch.arange(n_way).repeat_interleave(k_shot)
x_qry = torch.cos(torch.arange(n_way * k_query * imgsz * imgsz, dtype=torch.float32) * 0.7).reshape(n_way * k_query, 1, imgsz, imgsz)
y_qry = torch.arange(n_way).repeat_interleave(k_query)

meta_optim = torch.optim.Adam(net.parameters(), lr=1e-3)
update_lr = 0.4
corrects = [0, 0, 0]
losses_q = [0, 0, 0]
logits = net(x_spt, vars=None, bn_training=True)
loss = F.cross_entropy(logits, y_spt)
grad = torch.autograd.grad(loss, net.parameters())
fast_weights = list(map(lambda p: p[1] - update_lr * p[0], zip(grad, net.parameters())))
with torch.no_grad():
    logits_q = net(x_qry, net.parameters(), bn_training=True)
    loss_q = F.cross_entropy(logits_q, y_qry)
    losses_q[0] += loss_q
    pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
    correct = torch.eq(pred_q, y_qry).sum().item()
    corrects[0] = corrects[0] + correct
for k in range(1, 3):
    logits = net(x_spt, fast_weights, bn_training=True)
    loss = F.cross_entropy(logits, y_spt)
    grad = torch.autograd.grad(loss, fast_weights, create_graph=True)
    fast_weights = list(map(lambda p: p[1] - update_lr * p[0], zip(grad, fast_weights)))
    logits_q = net(x_qry, fast_weights, bn_training=True)
    loss_q = F.cross_entropy(logits_q, y_qry)
    losses_q[k] += loss_q
    with torch.no_grad():
        pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
        correct = torch.eq(pred_q, y_qry).sum().item()
        corrects[k] = corrects[k] + correct

loss_q = losses_q[-1]
meta_optim.zero_grad()
loss_q.backward()
print('losses', [float(l) for l in losses_q])
print('grad norms', [round(p.grad.norm().item(), 4) for p in net.parameters()])
meta_optim.step()
accs = torch.tensor(corrects) / (n_way * k_query)
print('accs', accs)
print(net.vars_bn[0])
