"""pytorch/tutorials intermediate_source/ensembling.py: torch.func.stack_module_state, functional_call
over a meta-device copy, vmap over the stacked models (device cpu, 10 minibatches, no timing)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)

class SimpleMLP(nn.Module):
    def __init__(self):
        super(SimpleMLP, self).__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x

device = 'cpu'
num_models = 10
data = torch.randn(10, 64, 1, 28, 28, device=device)
targets = torch.randint(10, (640,), device=device)
models = [SimpleMLP().to(device) for _ in range(num_models)]
minibatches = data[:num_models]
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]
minibatch = data[0]
predictions2 = [model(minibatch) for model in models]
from torch.func import stack_module_state
params, buffers = stack_module_state(models)
from torch.func import functional_call
import copy
base_model = copy.deepcopy(models[0])
base_model = base_model.to('meta')

def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))

print([p.size(0) for p in params.values()])
assert minibatches.shape == (num_models, 64, 1, 28, 28)
from torch import vmap
predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
print(predictions1_vmap.shape, torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5))
predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
print(predictions2_vmap.shape, torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5))
print(base_model.fc1.weight.device, base_model.fc1.weight.shape)
