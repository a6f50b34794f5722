"""RepVGG (DingXiaoH/RepVGG) structural re-parameterization: fuse 3x3+BN, 1x1+BN and identity BN
into one 3x3 conv; plus torch.nn.utils.fusion and channels_last / SyncBatchNorm conversion idioms."""
import copy
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(in_channels, out_channels, kernel_size, stride, padding, groups=1):
    result = nn.Sequential()
    result.add_module('conv', nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size,
                                        stride=stride, padding=padding, groups=groups, bias=False))
    result.add_module('bn', nn.BatchNorm2d(num_features=out_channels))
    return result


class RepVGGBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode='zeros', deploy=False):
        super(RepVGGBlock, self).__init__()
        self.deploy = deploy
        self.groups = groups
        self.in_channels = in_channels
        assert kernel_size == 3
        assert padding == 1
        padding_11 = padding - kernel_size // 2
        self.nonlinearity = nn.ReLU()
        self.se = nn.Identity()
        if deploy:
            self.rbr_reparam = nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size, stride=stride,
                                         padding=padding, dilation=dilation, groups=groups, bias=True, padding_mode=padding_mode)
        else:
            self.rbr_identity = nn.BatchNorm2d(num_features=in_channels) if out_channels == in_channels and stride == 1 else None
            self.rbr_dense = conv_bn(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding, groups=groups)
            self.rbr_1x1 = conv_bn(in_channels=in_channels, out_channels=out_channels, kernel_size=1, stride=stride, padding=padding_11, groups=groups)

    def forward(self, inputs):
        if hasattr(self, 'rbr_reparam'):
            return self.nonlinearity(self.se(self.rbr_reparam(inputs)))
        if self.rbr_identity is None:
            id_out = 0
        else:
            id_out = self.rbr_identity(inputs)
        return self.nonlinearity(self.se(self.rbr_dense(inputs) + self.rbr_1x1(inputs) + id_out))

    def get_custom_L2(self):
        K3 = self.rbr_dense.conv.weight
        K1 = self.rbr_1x1.conv.weight
        t3 = (self.rbr_dense.bn.weight / ((self.rbr_dense.bn.running_var + self.rbr_dense.bn.eps).sqrt())).reshape(-1, 1, 1, 1).detach()
        t1 = (self.rbr_1x1.bn.weight / ((self.rbr_1x1.bn.running_var + self.rbr_1x1.bn.eps).sqrt())).reshape(-1, 1, 1, 1).detach()
        l2_loss_circle = (K3 ** 2).sum() - (K3[:, :, 1:2, 1:2] ** 2).sum()
        eq_kernel = K3[:, :, 1:2, 1:2] * t3 + K1 * t1
        l2_loss_eq_kernel = (eq_kernel ** 2 / (t3 ** 2 + t1 ** 2)).sum()
        return l2_loss_eq_kernel + l2_loss_circle

    def get_equivalent_kernel_bias(self):
        kernel3x3, bias3x3 = self._fuse_bn_tensor(self.rbr_dense)
        kernel1x1, bias1x1 = self._fuse_bn_tensor(self.rbr_1x1)
        kernelid, biasid = self._fuse_bn_tensor(self.rbr_identity)
        return kernel3x3 + self._pad_1x1_to_3x3_tensor(kernel1x1) + kernelid, bias3x3 + bias1x1 + biasid

    def _pad_1x1_to_3x3_tensor(self, kernel1x1):
        if kernel1x1 is None:
            return 0
        else:
            return torch.nn.functional.pad(kernel1x1, [1, 1, 1, 1])

    def _fuse_bn_tensor(self, branch):
        if branch is None:
            return 0, 0
        if isinstance(branch, nn.Sequential):
            kernel = branch.conv.weight
            running_mean = branch.bn.running_mean
            running_var = branch.bn.running_var
            gamma = branch.bn.weight
            beta = branch.bn.bias
            eps = branch.bn.eps
        else:
            assert isinstance(branch, nn.BatchNorm2d)
            if not hasattr(self, 'id_tensor'):
                input_dim = self.in_channels // self.groups
                kernel_value = np.zeros((self.in_channels, input_dim, 3, 3), dtype=np.float32)
                for i in range(self.in_channels):
                    kernel_value[i, i % input_dim, 1, 1] = 1
                self.id_tensor = torch.from_numpy(kernel_value).to(branch.weight.device)
            kernel = self.id_tensor
            running_mean = branch.running_mean
            running_var = branch.running_var
            gamma = branch.weight
            beta = branch.bias
            eps = branch.eps
        std = (running_var + eps).sqrt()
        t = (gamma / std).reshape(-1, 1, 1, 1)
        return kernel * t, beta - running_mean * gamma / std

    def switch_to_deploy(self):
        if hasattr(self, 'rbr_reparam'):
            return
        kernel, bias = self.get_equivalent_kernel_bias()
        self.rbr_reparam = nn.Conv2d(in_channels=self.rbr_dense.conv.in_channels, out_channels=self.rbr_dense.conv.out_channels,
                                     kernel_size=self.rbr_dense.conv.kernel_size, stride=self.rbr_dense.conv.stride,
                                     padding=self.rbr_dense.conv.padding, dilation=self.rbr_dense.conv.dilation, groups=self.rbr_dense.conv.groups, bias=True)
        self.rbr_reparam.weight.data = kernel
        self.rbr_reparam.bias.data = bias
        self.__delattr__('rbr_dense')
        self.__delattr__('rbr_1x1')
        if hasattr(self, 'rbr_identity'):
            self.__delattr__('rbr_identity')
        if hasattr(self, 'id_tensor'):
            self.__delattr__('id_tensor')
        self.deploy = True


def repvgg_model_convert(model, save_path=None, do_copy=True):
    if do_copy:
        model = copy.deepcopy(model)
    for module in model.modules():
        if hasattr(module, 'switch_to_deploy'):
            module.switch_to_deploy()
    return model


torch.manual_seed(0)
net = nn.Sequential(RepVGGBlock(4, 4, 3, 1, 1), RepVGGBlock(4, 8, 3, 2, 1), RepVGGBlock(8, 8, 3, 1, 1, groups=2))
# deterministic weights and BN statistics that are not the defaults
with torch.no_grad():
    for i, (n, p) in enumerate(net.named_parameters()):
        p.copy_(0.3 * torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.9 + i).view_as(p) + (1.0 if n.endswith("bn.weight") or n.endswith("identity.weight") else 0.0))
    for i, m in enumerate(m for m in net.modules() if isinstance(m, nn.BatchNorm2d)):
        m.running_mean.copy_(torch.linspace(-0.2, 0.2, m.num_features) * (i + 1))
        m.running_var.copy_(torch.linspace(0.5, 1.5, m.num_features))
net.eval()
x = torch.cos(torch.arange(2 * 4 * 8 * 8, dtype=torch.float32) * 0.17).view(2, 4, 8, 8)
y_train = net(x)
print("custom L2", net[0].get_custom_L2().item())
deploy = repvgg_model_convert(net)
print(deploy[0])
print([n for n, _ in deploy.named_children()], list(dict(deploy[0].named_children()).keys()))
y_deploy = deploy(x)
print(y_train.shape, "max diff < 1e-5:", (y_train - y_deploy).abs().max().item() < 1e-5)
print(y_deploy[0, 0, :2])
print("params before/after", sum(p.numel() for p in net.parameters()), sum(p.numel() for p in deploy.parameters()))
print(hasattr(deploy[0], "id_tensor"), hasattr(net[0], "id_tensor"))

conv = nn.Conv2d(4, 6, 3, padding=1)
bn = nn.BatchNorm2d(6)
with torch.no_grad():
    conv.weight.copy_(torch.linspace(-1, 1, conv.weight.numel()).view_as(conv.weight))
    conv.bias.fill_(0.1)
    bn.running_mean.copy_(torch.arange(6.) / 10)
    bn.running_var.copy_(torch.arange(1., 7.))
    bn.weight.fill_(2.0)
conv.eval(); bn.eval()
fused = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
print(type(fused).__name__, torch.allclose(fused(x), bn(conv(x)), atol=1e-5))
print(fused.bias)

net2 = nn.Sequential(nn.Conv2d(4, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
sbn = nn.SyncBatchNorm.convert_sync_batchnorm(net2)
print(sbn)
cl = net.to(memory_format=torch.channels_last)
xc = x.contiguous(memory_format=torch.channels_last)
print(xc.is_contiguous(), xc.is_contiguous(memory_format=torch.channels_last), xc.stride())
print(torch.allclose(cl(xc), y_train, atol=1e-6))
