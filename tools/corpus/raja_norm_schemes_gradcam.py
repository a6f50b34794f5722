"""raja17021998/Image-Classification-using-ResNet-from-scratch-and-Diff-Norm-Schemes-Scratch
(norm.py, resnet.py, train.py, gradcam.py): a ResNet whose normalisation layers are written by
hand (batch, instance, batch-instance, layer, group, none: running statistics kept as plain
attributes, eps a 0-d tensor, the stem's gamma/beta registered twice), trained with SGD, Adagrad,
RMSprop and Adam with early stopping and accuracy / F1 from the collected predictions, its state
dict saved and loaded with map_location, and a Grad-CAM written with a forward hook and a full
backward hook on the last block (pytorch_grad_cam's method).  A full backward hook on a layer
followed by ReLU(inplace=True) is refused, as Grad-CAM users meet it.  The bird images are
replaced by numpy draws, the loaders are pickled as train.py's data_loaders.pkl is, and the
weights are set from numpy, so nothing printed depends on torch's random stream."""
import io
import os
import pickle
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

# ---- norm.py

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

class IdentityNorm(nn.Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super(IdentityNorm, self).__init__()
        self.momentum = momentum
        self.running_mean = 0
        self.running_var = 0
        self.eps = torch.tensor(eps)
        self.num_features = num_features
        shape = (1, self.num_features, 1, 1)
        self.gamma = nn.Parameter(torch.empty(shape))
        self.beta = nn.Parameter(torch.empty(shape))

        self._param_init()

    def _param_init(self):
        nn.init.zeros_(self.beta)
        nn.init.ones_(self.gamma)

    def forward(self, x):
        return x


class StandardBatchNorm(nn.Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super(StandardBatchNorm, self).__init__()
        self.momentum = momentum
        self.running_mean = 0
        self.running_var = 0
        self.eps = torch.tensor(eps)
        self.num_features = num_features
        shape = (1, self.num_features, 1, 1)
        self.gamma = nn.Parameter(torch.empty(shape))
        self.beta = nn.Parameter(torch.empty(shape))

        self._param_init()

    def _param_init(self):
        nn.init.zeros_(self.beta)
        nn.init.ones_(self.gamma)

    def forward(self, x):
        if self.training:
            n = x.numel() / x.size(1)
            dimensions = (0, 2, 3)
            var = x.var(dim=dimensions, keepdim=True, unbiased=False)
            mean = x.mean(dim=dimensions, keepdim=True)

            with torch.no_grad():
                self.running_mean = self.momentum * mean + (1 - self.momentum) * self.running_mean
                self.running_var = self.momentum * (n / (n - 1)) * var + (1 - self.momentum) * self.running_var

        else:
            mean = self.running_mean
            var = self.running_var
        dn = torch.sqrt(var + self.eps)
        x = (x - mean) / dn

        x = x * self.gamma + self.beta

        return x


class InstanceNorm(nn.Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super(InstanceNorm, self).__init__()
        self.momentum = momentum
        self.running_mean = 0
        self.running_var = 0
        self.eps = torch.tensor(eps)
        self.num_features = num_features
        shape = (1, self.num_features, 1, 1)


        self.gamma = nn.Parameter(torch.empty(shape))
        self.beta = nn.Parameter(torch.empty(shape))

        self._param_init()


    def _param_init(self):
        nn.init.zeros_(self.beta)
        nn.init.ones_(self.gamma)


    def forward(self, x):
        N, C, H, W = x.shape

        assert C == self.num_features
        dimensions = (2,3)
        if self.training:
            mean = x.mean(dim=dimensions, keepdim=True)
            var = x.var(dim=dimensions, keepdim=True)
        else:            
            mean = x.mean(dim=dimensions, keepdim=True)
            var = x.var(dim=dimensions, keepdim=True)
        dn = torch.sqrt(var + self.eps)
        x = (x - mean)/ dn
        x = x * self.gamma + self.beta

        return x


class LayerNorm(nn.Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super(LayerNorm, self).__init__()
        self.eps = torch.tensor(eps)
        self.num_features = num_features
        shape = (1, self.num_features, 1, 1)

        self.gamma = nn.Parameter(torch.empty(shape))
        self.beta = nn.Parameter(torch.empty(shape))

        self._param_init()


    def _param_init(self):
        nn.init.zeros_(self.beta)
        nn.init.ones_(self.gamma)

    def forward(self, x):
        
        N, C, H, W = x.shape

        assert C == self.num_features
        dimensions = (1,2,3)
        if self.training:
            mean = x.mean(dim=dimensions, keepdim=True)            
            var = x.var(dim=dimensions, keepdim=True)
        else:
            mean = x.mean(dim=dimensions, keepdim=True)            
            var = x.var(dim=dimensions, keepdim=True)
        dn = torch.sqrt(var + self.eps)
        x = (x - mean)/ dn

        x = x * self.gamma + self.beta

        return x



class GroupNorm(nn.Module):
    def __init__(self, num_features, eps=1e-5, group=4):
        super(GroupNorm,self).__init__()
        self.eps = torch.tensor(eps)
        self.num_features = num_features
        self.group = group        
        shape = (1, self.num_features, 1, 1)


        self.gamma = nn.Parameter(torch.empty(shape))
        self.beta = nn.Parameter(torch.empty(shape))

        self._param_init()


    def _param_init(self):
        nn.init.zeros_(self.beta)
        nn.init.ones_(self.gamma)

    def forward(self, x):
        N, C, H, W = x.shape
        assert C % self.group == 0
        assert self.num_features == C

        x = x.view(N, self.group, int(C / self.group), H, W)
        dimensions = (1,2,3)
        mean = x.mean(dim=dimensions, keepdim=True)
        var = x.var(dim=dimensions, keepdim=True)
        dn = torch.sqrt(var + self.eps)
        x = (x - mean)/ dn
        x = x.view(N, C, H, W)
        
        x = x * self.gamma + self.beta

        return x

class BatchInstanceNorm(nn.Module):
    def __init__(self, num_features, momentum = 0.1, eps=1e-5, rho=0.5):
        super(BatchInstanceNorm, self).__init__()
        self.momentum = momentum
        self.running_mean = 0
        self.running_var = 0
        self.eps = torch.tensor(eps)
        self.num_features = num_features
        self.rho = rho
        shape = (1, self.num_features, 1, 1)


        self.gamma = nn.Parameter(torch.empty(shape))
        self.beta = nn.Parameter(torch.empty(shape))

        self._param_init()


    def _param_init(self):
        nn.init.zeros_(self.beta)
        nn.init.ones_(self.gamma)

    
    def forward(self, x):
        if self.training:            
                
            n = x.numel() / x.size(1)
            dimensions = (0,2,3)
            var_bn = x.var(dim=dimensions, keepdim=True, unbiased=False)
            mean_bn = x.mean(dim=dimensions, keepdim=True)

            with torch.no_grad():
                
                self.running_mean = self.momentum * mean_bn + (1 - self.momentum) * self.running_mean
                self.running_var = self.momentum * (n/(n-1)) * var_bn + (1 - self.momentum) * self.running_var

        else:
            mean_bn = self.running_mean
            var_bn = self.running_var
        dn = torch.sqrt(var_bn + self.eps)
        x_bn = (x - mean_bn)/ dn
        dimensions = (2,3)
        mean_in = x.mean(dim=dimensions, keepdim=True)
        var_in = x.var(dim=dimensions, keepdim=True)
        dn = torch.sqrt(var_in + self.eps)
        x_in = (x - mean_in)/ dn

        x = self.rho * x_bn + (1-self.rho) * x_in

        x = x * self.gamma + self.beta

        return x


# ---- resnet.py


class Block(nn.Module):
    def __init__(self, in_channels, intermediate_channels, identity_downsample=None, stride=1, norm_type='bn'):
        super().__init__()
        self.expansion = 2
        self.conv1 = nn.Conv2d(in_channels, intermediate_channels, kernel_size=3, stride=stride, padding=1, bias=False)
        
        if norm_type == 'bn':
            self.nl1 = StandardBatchNorm(intermediate_channels)
            self.nl2 = StandardBatchNorm(intermediate_channels* self.expansion)
        elif norm_type == 'in':
            self.nl1 = InstanceNorm(intermediate_channels)
            self.nl2 = InstanceNorm(intermediate_channels* self.expansion)
        elif norm_type == 'gn':
            self.nl1 = GroupNorm(num_features=intermediate_channels)  # Assuming a group size of 4
            self.nl2 = GroupNorm(num_features=intermediate_channels* self.expansion)
        elif norm_type == 'bin':
            self.nl1 = BatchInstanceNorm(intermediate_channels)
            self.nl2 = BatchInstanceNorm(intermediate_channels* self.expansion)
        elif norm_type == 'ln':
            self.nl1 = LayerNorm(num_features=intermediate_channels)
            self.nl2 = LayerNorm(num_features=intermediate_channels* self.expansion)
        elif norm_type=='nn':
            self.nl1= IdentityNorm(intermediate_channels)
            self.nl2 = IdentityNorm(intermediate_channels* self.expansion)
            
        self.conv2 = nn.Conv2d(intermediate_channels, intermediate_channels * self.expansion, kernel_size=3, stride=1, padding=1, bias=False)    
        self.relu = nn.ReLU()
        self.identity_downsample = identity_downsample
        self.stride = stride

    def forward(self, x):
        identity = x.clone()

        x = self.conv1(x)
        x = self.nl1(x)
        x = self.relu(x)
        x = self.conv2(x)
        x = self.nl2(x)

        if self.identity_downsample is not None:
            identity = self.identity_downsample(identity)

        x += identity
        x = self.relu(x)
        return x

class ResNet(nn.Module):
    def __init__(self, block, layers, image_channels, num_classes, norm_type):
        super(ResNet, self).__init__()
        self.in_channels = 16
        self.conv1 = nn.Conv2d(image_channels, 16, kernel_size=3, stride=1, padding=1, bias=False)

        if norm_type == 'bn':
            self.norm = StandardBatchNorm(16)
            self.gamma = self.norm.gamma
            self.beta = self.norm.beta
            
        elif norm_type == 'in':
            self.norm = InstanceNorm(16)
            self.gamma = self.norm.gamma
            self.beta = self.norm.beta
            
        elif norm_type == 'gn':
            self.norm = GroupNorm(group=4, num_features=16)  # Assuming a group size of 4
            self.gamma = self.norm.gamma
            self.beta = self.norm.beta
            
        elif norm_type == 'bin':
            self.norm = BatchInstanceNorm(16)
            self.gamma = self.norm.gamma
            self.beta = self.norm.beta
            
        elif norm_type == 'ln':
            self.norm = LayerNorm(16)
            self.gamma = self.norm.gamma
            self.beta = self.norm.beta
            
        elif norm_type=='nn':
            self.norm= IdentityNorm(16)
            self.gamma = self.norm.gamma
            self.beta = self.norm.beta
        else:
            raise ValueError("Invalid normalization type. Choose from 'batch', 'instance', or 'group'.")
        self.relu = nn.ReLU()
        
        self.layer1 = self._make_layer(block, layers[0], intermediate_channels=16, stride=1, norm_type=norm_type)
        self.layer2 = self._make_layer(block, layers[1], intermediate_channels=32, stride=2, norm_type=norm_type)
        self.layer3 = self._make_layer(block, layers[2], intermediate_channels=64, stride=2, norm_type=norm_type)
        
        self.avgpool = nn.AdaptiveAvgPool2d((8,8))
        self.fc = nn.Linear(128 * 8*8, num_classes)
        
    def forward(self, x):
        x = self.conv1(x)
        x = self.norm(x)
        x = self.relu(x)

        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)

        x = self.avgpool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.fc(x)

        return x
    
    
    def _make_layer(self, block, num_residual_blocks, intermediate_channels, stride, norm_type):
        identity_downsample = None
        layers = []

        if stride != 1 or self.in_channels != intermediate_channels * 2:
            if norm_type == 'gn':
                num_groups = 4  # Adjust according to your group size preference
                identity_downsample = nn.Sequential(
                    nn.Conv2d(self.in_channels, intermediate_channels * 2, kernel_size=1, stride=stride, bias=False),
                    GroupNorm(num_features=intermediate_channels * 2, group=num_groups),
                )
            elif norm_type == 'bn':
                identity_downsample = nn.Sequential(
                    nn.Conv2d(self.in_channels, intermediate_channels * 2, kernel_size=1, stride=stride, bias=False),
                    StandardBatchNorm(intermediate_channels * 2)
                )
            elif norm_type == 'in':
                identity_downsample = nn.Sequential(
                    nn.Conv2d(self.in_channels, intermediate_channels * 2, kernel_size=1, stride=stride, bias=False),
                    InstanceNorm(intermediate_channels * 2)
                )
            elif norm_type == 'bin':
                identity_downsample = nn.Sequential(
                    nn.Conv2d(self.in_channels, intermediate_channels * 2, kernel_size=1, stride=stride, bias=False),
                    BatchInstanceNorm(intermediate_channels * 2)
                )
            elif norm_type == 'ln':
                identity_downsample = nn.Sequential(
                    nn.Conv2d(self.in_channels, intermediate_channels * 2, kernel_size=1, stride=stride, bias=False),
                    LayerNorm(intermediate_channels * 2)
                )
            elif norm_type == 'nn':
                identity_downsample = nn.Sequential(
                    nn.Conv2d(self.in_channels, intermediate_channels * 2, kernel_size=1, stride=stride, bias=False),
                    IdentityNorm(intermediate_channels * 2)
                )

        layers.append(block(self.in_channels, intermediate_channels, identity_downsample, stride, norm_type))
        self.in_channels = intermediate_channels * 2

        for i in range(num_residual_blocks - 1):
            layers.append(block(self.in_channels, intermediate_channels, norm_type=norm_type))

        return nn.Sequential(*layers)


# ---- train.py's loop, metrics from numpy (sklearn's accuracy_score / f1_score)
def accuracy_score(a, b):
    return float(np.mean(np.asarray(a) == np.asarray(b)))
def f1_score(a, b, average):
    a, b = np.asarray(a), np.asarray(b)
    if average == "micro":
        return accuracy_score(a, b)
    f1s = []
    for c in np.union1d(a, b):
        tp = np.sum((a == c) & (b == c)); fp = np.sum((a != c) & (b == c)); fn = np.sum((a == c) & (b != c))
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(f1s))

rng = np.random.RandomState(0)
X = torch.from_numpy(rng.rand(24, 3, 16, 16).astype(np.float32))
Y = torch.from_numpy(rng.randint(0, 5, 24))
train_loader = DataLoader(TensorDataset(X[:16], Y[:16]), batch_size=8, shuffle=False)
val_loader = DataLoader(TensorDataset(X[16:], Y[16:]), batch_size=8, shuffle=False)
buf = io.BytesIO(); pickle.dump((train_loader, val_loader), buf); buf.seek(0)
train_loader, val_loader = pickle.load(buf)
print("loaders", len(train_loader), len(val_loader), type(train_loader.dataset).__name__)

def init_np(model, seed):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "gamma" in name or "beta" in name:
                continue
            p.copy_(torch.from_numpy((r.randn(*p.shape) * 0.05).astype(np.float32)))

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def train(norm_type, opt, lr, num_epochs=2, use_early_stopping=True, patience=1):
    model = ResNet(Block, [1, 1, 1], 3, 5, norm_type).to(device)
    init_np(model, 2)
    print(norm_type, "params", sum(p.numel() for p in model.parameters()), len(list(model.parameters())), len(model.state_dict()))
    criterion = nn.CrossEntropyLoss()
    optimizer = {"SGD": optim.SGD, "AdaGrad": optim.Adagrad, "RMSprop": optim.RMSprop, "Adam": optim.Adam}[opt](model.parameters(), lr=lr)
    best_val_loss = np.inf; counter = 0
    for epoch in range(num_epochs):
        model.train(); running_loss = 0; all_labels = []; all_predictions = []
        for data, labels in train_loader:
            x = data.to(device); y = labels.to(device)
            optimizer.zero_grad()
            y_hat = model(x)
            loss = criterion(y_hat, y)
            loss.backward(); optimizer.step()
            running_loss += loss.item()
            all_labels.extend(y.cpu().numpy())
            all_predictions.extend(torch.argmax(y_hat, dim=1).cpu().numpy())
        average_loss = running_loss / len(train_loader)
        print(f"Train - Epoch [{epoch + 1}/{num_epochs}], Loss: {average_loss:.4f}, Accuracy: {accuracy_score(all_labels, all_predictions):.4f}, "
              f"Micro F1: {f1_score(all_labels, all_predictions, average='micro'):.4f}, Macro F1: {f1_score(all_labels, all_predictions, average='macro'):.4f}")
        model.eval(); vl = 0; vlab = []; vpred = []
        with torch.no_grad():
            for vx, vy in val_loader:
                out = model(vx); vl += criterion(out, vy).item()
                vlab.extend(vy.cpu().numpy()); vpred.extend(torch.argmax(out, dim=1).cpu().numpy())
        val_average_loss = vl / len(val_loader)
        print(f"Validation - Epoch [{epoch + 1}/{num_epochs}], Loss: {val_average_loss:.4f}, Accuracy: {accuracy_score(vlab, vpred):.4f}, Macro F1: {f1_score(vlab, vpred, average='macro'):.4f}")
        if use_early_stopping:
            if val_average_loss < best_val_loss:
                best_val_loss = val_average_loss; counter = 0
            else:
                counter += 1
            if counter >= patience:
                print(f"Early stopping triggered after {epoch + 1} epochs without improvement."); break
    print("types", type(all_labels[0]).__name__, type(all_predictions[0]).__name__, type(getattr(model.norm, "running_mean", None)).__name__,
          getattr(getattr(model.norm, "running_mean", None), "shape", None), model.norm.eps.dtype if norm_type != "gn" else None)
    return model

models = {}
for nt, opt, lr in [("bn", "Adam", 1e-3), ("in", "SGD", 0.01), ("gn", "RMSprop", 1e-3), ("bin", "AdaGrad", 0.01), ("ln", "Adam", 1e-3), ("nn", "SGD", 0.01)]:
    models[nt] = train(nt, opt, lr)
try:
    ResNet(Block, [1, 1, 1], 3, 5, "xx")
except ValueError as e:
    print("ValueError", e)

# state dict round trip with map_location, the aliased gamma/beta
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "m.pth")
    torch.save(models["bn"].state_dict(), path)
    sd = torch.load(path, map_location=device)
    print([k for k in sd if "gamma" in k][:3], torch.equal(sd["gamma"], sd["norm.gamma"]))
    m2 = ResNet(Block, [1, 1, 1], 3, 5, "bn")
    print(m2.load_state_dict(sd))
    m2.eval()
    try:
        m2(X[:2])
    except Exception as e:
        print(type(e).__name__)
    print("running not in sd", "norm.running_mean" in sd)

# Grad-CAM on layer3[-1], hand written (as pytorch_grad_cam does)
model = models["bn"]; model.eval()
acts, grads = {}, {}
h1 = model.layer3[-1].register_forward_hook(lambda m, i, o: acts.__setitem__("a", o))
h2 = model.layer3[-1].register_full_backward_hook(lambda m, gi, go: grads.__setitem__("g", go[0]))
inp = X[:2].clone().requires_grad_(True)
out = model(inp)
model.zero_grad()
out[:, 0].sum().backward()
w = grads["g"].mean(dim=(2, 3), keepdim=True)
print("grad-cam weights", grads["g"].shape, [round(v, 6) for v in w.flatten()[:4].tolist()], round(acts["a"].mean().item(), 4))
cam = F.relu((w * acts["a"]).sum(dim=1))
cam = cam - cam.amin(dim=(1, 2), keepdim=True)
cam = cam / (cam.amax(dim=(1, 2), keepdim=True) + 1e-7)
cam = F.interpolate(cam.unsqueeze(1), size=(16, 16), mode="bilinear", align_corners=False)[:, 0]
print("cam", cam.shape, np.round(cam[0, ::5, ::5].detach().numpy(), 3).tolist(), inp.grad.abs().sum().item() > 0)
h1.remove(); h2.remove()
print(len(model.layer3[-1]._forward_hooks), len(model.layer3[-1]._backward_hooks))

# Grad-CAM's hooks on a layer followed by an in-place ReLU (the hook's output may not be written)
net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(inplace=True))
net[0].register_full_backward_hook(lambda module, grad_input, grad_output: None)
try:
    net(X[:1])
except RuntimeError as e:
    print("RuntimeError", str(e)[:120])
