"""MixMatch / ReMixMatch (label guessing, sharpening, mixup, distribution alignment, Beta priors)
and DINO (centering buffer, teacher temperature schedule, weight-normed head, cosine schedules)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(0)
torch.manual_seed(0)

def linear_rampup(current, rampup_length=16):
    if rampup_length == 0:
        return 1.0
    current = np.clip(current / rampup_length, 0.0, 1.0)
    return float(current)

class SemiLoss(object):
    def __call__(self, outputs_x, targets_x, outputs_u, targets_u, epoch, lambda_u=75):
        probs_u = torch.softmax(outputs_u, dim=1)
        Lx = -torch.mean(torch.sum(F.log_softmax(outputs_x, dim=1) * targets_x, dim=1))
        Lu = torch.mean((probs_u - targets_u)**2)
        return Lx, Lu, lambda_u * linear_rampup(epoch)

def interleave_offsets(batch, nu):
    groups = [batch // (nu + 1)] * (nu + 1)
    for x in range(batch - sum(groups)):
        groups[-x - 1] += 1
    offsets = [0]
    for g in groups:
        offsets.append(offsets[-1] + g)
    assert offsets[-1] == batch
    return offsets

def interleave(xy, batch):
    nu = len(xy) - 1
    offsets = interleave_offsets(batch, nu)
    xy = [[v[offsets[p]:offsets[p + 1]] for p in range(nu + 1)] for v in xy]
    for i in range(1, nu + 1):
        xy[0][i], xy[i][i] = xy[i][i], xy[0][i]
    return [torch.cat(v, dim=0) for v in xy]

num_classes, B, T, alpha = 3, 4, 0.5, 0.75
model = nn.Linear(5, num_classes)
with torch.no_grad():
    model.weight.copy_(torch.sin(torch.arange(15.)).view(3, 5))
    model.bias.fill_(0.1)
inputs_x = torch.linspace(-1, 1, B * 5).view(B, 5)
targets_x = torch.tensor([0, 2, 1, 1])
targets_x = torch.zeros(B, num_classes).scatter_(1, targets_x.view(-1, 1).long(), 1)
print(targets_x)
inputs_u = torch.cos(torch.arange(B * 5.)).view(B, 5)
inputs_u2 = inputs_u.flip(0) * 0.9

with torch.no_grad():
    outputs_u = model(inputs_u)
    outputs_u2 = model(inputs_u2)
    p = (torch.softmax(outputs_u, dim=1) + torch.softmax(outputs_u2, dim=1)) / 2
    pt = p**(1 / T)
    targets_u = pt / pt.sum(dim=1, keepdim=True)
    targets_u = targets_u.detach()
print(targets_u)

l = np.random.beta(alpha, alpha)
l = max(l, 1 - l)
print(type(l).__name__, l >= 0.5)
l = 0.7
all_inputs = torch.cat([inputs_x, inputs_u, inputs_u2], dim=0)
all_targets = torch.cat([targets_x, targets_u, targets_u], dim=0)
idx = torch.arange(all_inputs.size(0)).flip(0)
input_a, input_b = all_inputs, all_inputs[idx]
target_a, target_b = all_targets, all_targets[idx]
mixed_input = l * input_a + (1 - l) * input_b
mixed_target = l * target_a + (1 - l) * target_b
mixed_input = list(torch.split(mixed_input, B))
mixed_input = interleave(mixed_input, B)
logits = [model(mixed_input[0])]
for input in mixed_input[1:]:
    logits.append(model(input))
logits = interleave(logits, B)
logits_x = logits[0]
logits_u = torch.cat(logits[1:], dim=0)
criterion = SemiLoss()
Lx, Lu, w = criterion(logits_x, mixed_target[:B], logits_u, mixed_target[B:], 3 + 1 / 4)
loss = Lx + w * Lu
print(Lx, Lu, w)
loss.backward()
print(model.weight.grad)

# ReMixMatch distribution alignment
p_model = torch.ones(num_classes) / num_classes
p_target = torch.tensor([0.5, 0.3, 0.2])
prob = torch.softmax(outputs_u, dim=1)
prob = prob * p_target / p_model
prob = prob / prob.sum(dim=1, keepdim=True)
print(prob)
# beta distribution from torch
lam_dist = torch.distributions.Beta(torch.tensor([alpha]), torch.tensor([alpha]))
lam = lam_dist.sample()
print(lam.shape, lam.dtype)
print(lam_dist.mean, lam_dist.variance)
m = torch.distributions.beta.Beta(2.0, 3.0)
print(m.log_prob(torch.tensor(0.3)), m.entropy())
print(m.sample((4,)).shape)

# ---- a learnable Beta mixing prior: the distribution keeps the values it was built with ----
log_a = torch.zeros(1, requires_grad=True)
beta_opt = torch.optim.SGD([log_a], lr=0.5)
prior = torch.distributions.Beta(log_a.exp(), log_a.exp())
print(prior.concentration1, prior.mean)
nll = -prior.log_prob(torch.tensor([0.3])).sum()
beta_opt.zero_grad()
nll.backward()
beta_opt.step()
print(log_a, nll)
with torch.no_grad():
    conc = torch.tensor([2.0, 3.0])
    b = torch.distributions.Beta(conc, conc.flip(0))
    conc.mul_(2)
print(b.concentration1, b.concentration0, b.mean, b.variance)
print(b.log_prob(torch.tensor([0.25, 0.5])), b.entropy())


# ---- DINO loss, head and schedules ----
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0, start_warmup_value=0):
    warmup_schedule = np.array([])
    warmup_iters = warmup_epochs * niter_per_ep
    if warmup_epochs > 0:
        warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)
    iters = np.arange(epochs * niter_per_ep - warmup_iters)
    schedule = final_value + 0.5 * (base_value - final_value) * (1 + np.cos(np.pi * iters / len(iters)))
    schedule = np.concatenate((warmup_schedule, schedule))
    assert len(schedule) == epochs * niter_per_ep
    return schedule

class DINOLoss(nn.Module):
    def __init__(self, out_dim, ncrops, warmup_teacher_temp, teacher_temp,
                 warmup_teacher_temp_epochs, nepochs, student_temp=0.1,
                 center_momentum=0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.ncrops = ncrops
        self.register_buffer("center", torch.zeros(1, out_dim))
        self.teacher_temp_schedule = np.concatenate((
            np.linspace(warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs),
            np.ones(nepochs - warmup_teacher_temp_epochs) * teacher_temp
        ))

    def forward(self, student_output, teacher_output, epoch):
        student_out = student_output / self.student_temp
        student_out = student_out.chunk(self.ncrops)
        temp = self.teacher_temp_schedule[epoch]
        teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1)
        teacher_out = teacher_out.detach().chunk(2)
        total_loss = 0
        n_loss_terms = 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
                n_loss_terms += 1
        total_loss /= n_loss_terms
        self.update_center(teacher_output)
        return total_loss

    @torch.no_grad()
    def update_center(self, teacher_output):
        batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
        batch_center = batch_center / len(teacher_output)
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)

class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim, use_bn=False, norm_last_layer=True, nlayers=3, hidden_dim=16, bottleneck_dim=8):
        super().__init__()
        nlayers = max(nlayers, 1)
        layers = [nn.Linear(in_dim, hidden_dim)]
        if use_bn:
            layers.append(nn.BatchNorm1d(hidden_dim))
        layers.append(nn.GELU())
        for _ in range(nlayers - 2):
            layers.append(nn.Linear(hidden_dim, hidden_dim))
            layers.append(nn.GELU())
        layers.append(nn.Linear(hidden_dim, bottleneck_dim))
        self.mlp = nn.Sequential(*layers)
        self.apply(self._init_weights)
        self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
        self.last_layer.weight_g.data.fill_(1)
        if norm_last_layer:
            self.last_layer.weight_g.requires_grad = False

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.mlp(x)
        x = nn.functional.normalize(x, dim=-1, p=2)
        x = self.last_layer(x)
        return x

lr_schedule = cosine_scheduler(0.0005 * 64 / 256., 1e-6, 5, 3, warmup_epochs=1)
momentum_schedule = cosine_scheduler(0.996, 1, 5, 3)
print(lr_schedule.round(7))
print(momentum_schedule.round(6))

head = DINOHead(6, 10)
print(head.last_layer.weight_g.shape, head.last_layer.weight_v.shape, head.last_layer.weight_g.requires_grad)
with torch.no_grad():
    for i, p in enumerate(head.parameters()):
        if p.requires_grad:
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) + i).view_as(p) * 0.5)
loss_fn = DINOLoss(10, 4, 0.04, 0.07, 3, 5)
print(loss_fn.teacher_temp_schedule)
feat_s = torch.cos(torch.arange(4 * 3 * 6, dtype=torch.float32) * 0.1).view(12, 6)
feat_t = torch.sin(torch.arange(2 * 3 * 6, dtype=torch.float32) * 0.2).view(6, 6)
s_out = head(feat_s)
with torch.no_grad():
    t_out = head(feat_t)
for epoch in range(3):
    loss = loss_fn(s_out, t_out, epoch)
    print(epoch, loss.item())
print(loss_fn.center)
loss.backward()
print(head.last_layer.weight_v.grad.norm(), head.last_layer.weight_g.grad)
print(head.mlp[0].weight.grad.abs().sum())

def cancel_gradients_last_layer(epoch, model, freeze_last_layer):
    if epoch >= freeze_last_layer:
        return
    for n, p in model.named_parameters():
        if "last_layer" in n:
            p.grad = None
cancel_gradients_last_layer(0, head, 1)
print([(n, p.grad is None) for n, p in head.named_parameters()])
param_norms = []
for name, p in head.named_parameters():
    if p.grad is not None:
        param_norm = p.grad.data.norm(2)
        param_norms.append(param_norm.item())
        clip_coef = 3.0 / (param_norm + 1e-6)
        if clip_coef < 1:
            p.grad.data.mul_(clip_coef)
print(len(param_norms))
