"""Temperature scaling of a classifier's logits with LBFGS, after gpleiss/temperature_scaling
(temperature_scaling.py: ModelWithTemperature, _ECELoss).

Adapted: `.cuda()` calls removed; the DenseNet-CIFAR100 model -> a fixed linear classifier
(weights from numpy) over synthetic, deliberately over-confident data; the validation loader is a
TensorDataset of numpy features.  The classes are the repository's otherwise.
"""
import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F


class ModelWithTemperature(nn.Module):
    def __init__(self, model):
        super(ModelWithTemperature, self).__init__()
        self.model = model
        self.temperature = nn.Parameter(torch.ones(1) * 1.5)

    def forward(self, input):
        logits = self.model(input)
        return self.temperature_scale(logits)

    def temperature_scale(self, logits):
        temperature = self.temperature.unsqueeze(1).expand(logits.size(0), logits.size(1))
        return logits / temperature

    def set_temperature(self, valid_loader):
        nll_criterion = nn.CrossEntropyLoss()
        ece_criterion = _ECELoss()
        logits_list = []
        labels_list = []
        training_mode = self.training
        self.eval()
        with torch.no_grad():
            for input, label in valid_loader:
                logits = self.model(input)
                logits_list.append(logits)
                labels_list.append(label)
            logits = torch.cat(logits_list)
            labels = torch.cat(labels_list)
        before_temperature_nll = nll_criterion(logits, labels).item()
        before_temperature_ece = ece_criterion(logits, labels).item()
        print('Before temperature - NLL: %.3f, ECE: %.3f' % (before_temperature_nll, before_temperature_ece))
        optimizer = optim.LBFGS([self.temperature], lr=0.01, max_iter=200)

        def eval():
            optimizer.zero_grad()
            loss = nll_criterion(self.temperature_scale(logits), labels)
            loss.backward()
            return loss
        optimizer.step(eval)
        after_temperature_nll = nll_criterion(self.temperature_scale(logits), labels).item()
        after_temperature_ece = ece_criterion(self.temperature_scale(logits), labels).item()
        print('Optimal temperature: %.3f' % self.temperature.item())
        print('After temperature - NLL: %.3f, ECE: %.3f' % (after_temperature_nll, after_temperature_ece))
        self.train(training_mode)
        return self


class _ECELoss(nn.Module):
    def __init__(self, n_bins=15):
        super(_ECELoss, self).__init__()
        bin_boundaries = torch.linspace(0, 1, n_bins + 1)
        self.bin_lowers = bin_boundaries[:-1]
        self.bin_uppers = bin_boundaries[1:]

    def forward(self, logits, labels):
        softmaxes = F.softmax(logits, dim=1)
        confidences, predictions = torch.max(softmaxes, 1)
        accuracies = predictions.eq(labels)
        ece = torch.zeros(1, device=logits.device)
        for bin_lower, bin_upper in zip(self.bin_lowers, self.bin_uppers):
            in_bin = confidences.gt(bin_lower.item()) * confidences.le(bin_upper.item())
            prop_in_bin = in_bin.float().mean()
            if prop_in_bin.item() > 0:
                accuracy_in_bin = accuracies[in_bin].float().mean()
                avg_confidence_in_bin = confidences[in_bin].mean()
                ece += torch.abs(avg_confidence_in_bin - accuracy_in_bin) * prop_in_bin
        return ece


rng = np.random.RandomState(0)
n, d, k = 600, 8, 5
centers = rng.randn(k, d)
labels = rng.randint(0, k, size=n)
features = centers[labels] + 1.2 * rng.randn(n, d)
classifier = nn.Linear(d, k)
with torch.no_grad():      # an over-confident classifier: the class centres, scaled up
    classifier.weight.copy_(torch.from_numpy((4.0 * centers).astype(np.float32)))
    classifier.bias.copy_(torch.from_numpy((-2.0 * (centers ** 2).sum(1)).astype(np.float32)))
valid_set = torch.utils.data.TensorDataset(torch.from_numpy(features.astype(np.float32)),
                                           torch.from_numpy(labels))
valid_loader = torch.utils.data.DataLoader(valid_set, batch_size=128, shuffle=False)

model = ModelWithTemperature(classifier)
model.set_temperature(valid_loader)
print(model.temperature.grad is not None, model.training)
x0, _ = valid_set[0]
print(model(x0[None]).detach().numpy().round(3))
print(sorted(model.state_dict().keys()))
