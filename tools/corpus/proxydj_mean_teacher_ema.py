"""Mean Teacher and EMA teachers: mul_/add_ updates under no_grad, consistency ramp-up, softmax MSE
and KL consistency, torch._foreach_* and lerp_ EMA updates."""
import copy
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

def det_init(model, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=p.dtype) * 0.41 + i).view_as(p) * scale)

def update_ema_variables(model, ema_model, alpha, global_step):
    # Use the true average until the exponential average is more correct
    alpha = min(1 - 1 / (global_step + 1), alpha)
    for ema_param, param in zip(ema_model.parameters(), model.parameters()):
        ema_param.data.mul_(alpha).add_(param.data, alpha=1 - alpha)

def softmax_mse_loss(input_logits, target_logits):
    assert input_logits.size() == target_logits.size()
    input_softmax = F.softmax(input_logits, dim=1)
    target_softmax = F.softmax(target_logits, dim=1)
    num_classes = input_logits.size()[1]
    return F.mse_loss(input_softmax, target_softmax, size_average=False) / num_classes

def softmax_kl_loss(input_logits, target_logits):
    input_log_softmax = F.log_softmax(input_logits, dim=1)
    target_softmax = F.softmax(target_logits, dim=1)
    return F.kl_div(input_log_softmax, target_softmax, size_average=False)

def sigmoid_rampup(current, rampup_length):
    if rampup_length == 0:
        return 1.0
    current = torch.clamp(torch.tensor(current, dtype=torch.float32), 0.0, rampup_length) if False else max(0.0, min(float(current), rampup_length))
    phase = 1.0 - current / rampup_length
    return float(math.exp(-5.0 * phase * phase))

def get_current_consistency_weight(epoch, consistency=10.0, rampup=5):
    return consistency * sigmoid_rampup(epoch, rampup)

model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Dropout(0.0), nn.Linear(12, 3))
det_init(model)
ema_model = copy.deepcopy(model)
for param in ema_model.parameters():
    param.detach_()
print([p.requires_grad for p in ema_model.parameters()])

optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)
class_criterion = nn.CrossEntropyLoss(reduction='sum', ignore_index=-1)
consistency_criterion = softmax_mse_loss
NO_LABEL = -1
x = torch.linspace(-1, 1, 8 * 6).view(8, 6)
target = torch.tensor([0, 1, -1, 2, -1, -1, 1, 0])
global_step = 0
for epoch in range(4):
    noise = 0.05 * torch.cos(torch.arange(48.).view(8, 6) * (epoch + 1))
    input_var = x + noise
    ema_input_var = x - noise
    minibatch_size = len(target)
    labeled_minibatch_size = target.data.ne(NO_LABEL).sum()
    ema_model_out = ema_model(ema_input_var)
    model_out = model(input_var)
    ema_logit = ema_model_out.detach().data
    class_loss = class_criterion(model_out, target) / minibatch_size
    consistency_weight = get_current_consistency_weight(epoch)
    consistency_loss = consistency_weight * consistency_criterion(model_out, ema_logit) / minibatch_size
    loss = class_loss + consistency_loss
    assert not (math.isnan(loss.item()) or loss.item() > 1e5), 'Loss explosion: {}'.format(loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    global_step += 1
    update_ema_variables(model, ema_model, 0.99, global_step)
    prec1 = (model_out.argmax(1) == target).float().sum() / labeled_minibatch_size.float() * 100
    print('epoch', epoch, 'labeled', labeled_minibatch_size.item(), 'class {:.5f} cons {:.5f} w {:.4f} prec {:.2f}'.format(
        class_loss.item(), consistency_loss.item(), consistency_weight, prec1.item()))
print(ema_model[0].weight[:2])
print(softmax_kl_loss(model(x), ema_model(x)).item())
print(labeled_minibatch_size, labeled_minibatch_size.dtype)


# ---- EMA with torch._foreach_* ----
import copy
import torch
import torch.nn as nn

class ModelEMA:
    def __init__(self, model, decay=0.9999, device=None):
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay = decay
        for p in self.module.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        ema_params = tuple(self.module.parameters())
        model_params = tuple(model.parameters())
        torch._foreach_mul_(ema_params, self.decay)
        torch._foreach_add_(ema_params, model_params, alpha=1 - self.decay)
        for b_ema, b_model in zip(self.module.buffers(), model.buffers()):
            b_ema.copy_(b_model)

    @torch.no_grad()
    def update_lerp(self, model):
        ema_params = [p for p in self.module.parameters()]
        model_params = [p for p in model.parameters()]
        torch._foreach_lerp_(ema_params, model_params, 1.0 - self.decay)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.Linear(5, 2))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1))
ema = ModelEMA(model, decay=0.9)
x = torch.linspace(-2, 2, 24).view(6, 4)
model(x)
with torch.no_grad():
    for p in model.parameters():
        p.add_(0.5)
ema.update(model)
print(ema.module[0].weight)
print(ema.module[1].running_var)
print(ema.module[1].num_batches_tracked)
ema.update_lerp(model)
print(ema.module[2].bias)

a = [torch.ones(3), torch.full((2, 2), 2.0)]
b = [torch.arange(3.), torch.eye(2)]
print(torch._foreach_add(a, b))
print(torch._foreach_mul(a, 3.0))
print(torch._foreach_sub(a, b, alpha=2))
print(torch._foreach_div(a, 4))
print(torch._foreach_norm(b))
print(torch._foreach_sqrt([torch.tensor([4., 9.])]))
c = [t.clone() for t in a]
torch._foreach_addcmul_(c, b, b, value=0.5)
print(c)
torch._foreach_lerp_(c, a, 0.25)
print(c)
torch._foreach_mul_(c, [2.0, 3.0])
print(c)
torch._foreach_zero_(c)
print(c)
print(torch.lerp(torch.zeros(3), torch.ones(3), torch.tensor([0.1, 0.5, 0.9])))
w = torch.zeros(2)
w.lerp_(torch.tensor([1., 2.]), 0.3)
print(w)
