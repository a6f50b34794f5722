"""Conv-BatchNorm fusion by rewriting a torch.fx graph (after the FX fusion tutorial's recipe):
trace, find call_module Conv2d -> BatchNorm2d pairs, fold the BN's statistics into the conv,
reroute the users, erase the BN nodes, drop the unused submodules and recompile."""
import copy

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 4, 3)
        self.bn2 = nn.BatchNorm2d(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(self.bn2(self.conv2(x)), 2)
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def fuse_conv_bn(conv, bn):
    fused = copy.deepcopy(conv)
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    fused.weight = nn.Parameter((conv.weight * scale.reshape(-1, 1, 1, 1)).detach())
    bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
    fused.bias = nn.Parameter(((bias - bn.running_mean) * scale + bn.bias).detach())
    return fused


def fuse(model):
    gm = torch.fx.symbolic_trace(copy.deepcopy(model))
    modules = dict(gm.named_modules())
    fused = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        conv_node = node.args[0]
        if conv_node.op != "call_module" or not isinstance(modules[conv_node.target], nn.Conv2d):
            continue
        if len(conv_node.users) > 1:
            continue
        new_conv = fuse_conv_bn(modules[conv_node.target], modules[node.target])
        setattr(gm, conv_node.target, new_conv)
        node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(node)
        fused += 1
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm, fused


model = Net()
x = torch.randn(4, 3, 8, 8)
model.train()
for _ in range(3):              # give the BatchNorms running statistics
    model(torch.randn(4, 3, 8, 8) * 2 + 0.5)
model.eval()

gm, count = fuse(model)
print("fused pairs:", count)
print(gm.graph)
print(gm.code)
print([name for name, _ in gm.named_modules()])
print(sorted(gm.state_dict().keys()))
ref = model(x)
out = gm(x)
print(out.shape, torch.allclose(ref, out, atol=1e-5))
print(round((ref - out).abs().max().item() * 0 + 1.0, 1))
print(len(list(gm.graph.nodes)), sum(1 for n in gm.graph.nodes if n.op == "call_module"))
