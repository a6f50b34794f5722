"""Fashion-MNIST MLP trained on one-hot targets (CrossEntropyLoss with class probabilities),
AdamW, a bare `@torch.inference_mode` decorator on the test loop, a state_dict round trip and a
single-sample prediction that indexes a Python list with a 0-d tensor.

Source: stephenlb/pytorch-tutorials, custom-dataset.py.  Adapted: torchvision's FashionMNIST,
ToTensor and Lambda are replaced by small stand-ins over numpy images (same shapes, uint8 pixels);
parameters are drawn with numpy (no torch random stream); 2 epochs of 160 images, no shuffling;
the state dict goes through an in-memory buffer instead of a file; plotting removed.
"""
import io

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Lambda:
    def __init__(self, f):
        self.f = f

    def __call__(self, x):
        return self.f(x)


class ToTensor:
    def __call__(self, a):
        return torch.tensor(a[None].astype(np.float32) / 255.)


class FashionMNIST(Dataset):
    def __init__(self, train, transform, target_transform):
        r = np.random.default_rng(0 if train else 1)
        n = 160 if train else 64
        self.x = r.integers(0, 256, (n, 28, 28)).astype(np.uint8)
        self.y = r.integers(0, 10, n)
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.transform(self.x[i]), self.target_transform(int(self.y[i]))


device = torch.accelerator.current_accelerator()
print(f"Using {device} device")


class NN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.units = units = 512
        self.learing_rate = 0.002
        self.batch_size = 16
        self.epochs = 2
        self.loss = nn.CrossEntropyLoss()
        self.device = device
        self.outputs = 10
        self.model = nn.Sequential(
            nn.Linear(784, units),
            nn.ReLU(),
            nn.Linear(units, units),
            nn.ReLU(),
            nn.Linear(units, self.outputs),
        )

    def forward(self, batch):
        return self.model(batch)


model = NN().to(device)
print(model)
rng = np.random.default_rng(5)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.05))
optim = torch.optim.AdamW(model.parameters(), lr=model.learing_rate)

labels_array = ["T-Shrit", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                "Bag", "Ankel Boot"]

image_transform = Lambda(lambda x: ToTensor()(x).flatten())
one_hot = Lambda(lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1))

image_dataset = FashionMNIST(True, image_transform, one_hot)
test_dataset = FashionMNIST(False, image_transform, one_hot)
train_dataloader = DataLoader(image_dataset, batch_size=model.batch_size, shuffle=False)
test_dataloader = DataLoader(test_dataset, batch_size=model.batch_size, shuffle=False)


def train(epoch):
    size = len(image_dataset)
    total = size * model.epochs
    model.train()
    for batch, (X, y) in enumerate(train_dataloader):
        prediction = model(X.to(model.device))
        y = y.to(model.device)
        loss = model.loss(prediction, y)
        optim.zero_grad()
        loss.backward()
        optim.step()
        if batch % 3 == 0:
            progress = f'{100. * (((size * epoch) + (batch * model.batch_size)) / total):.2f}%'
            print(f'Loss: {loss:.5f} {progress}')


@torch.inference_mode
def test():
    model.eval()
    cost = 0
    correct = 0
    incorrect = 0
    for X, y in test_dataloader:
        out = model(X.to(model.device))
        answers = out.argmax(1).cpu()
        loss = model.loss(out, y.to(model.device)).item()
        accuracy = answers == y.argmax(1)
        batch_correct_answers = len(list(filter(lambda a: a, accuracy)))
        correct += batch_correct_answers
        incorrect += model.batch_size - batch_correct_answers
        cost = (cost + loss) / 2
    print(f'Accuracy: {100. * (correct / (correct + incorrect)):.2f}%')
    print(f'Cost: {cost:.4f}')
    print(out.requires_grad, out.is_inference(), torch.is_inference_mode_enabled())


for epoch in range(model.epochs):
    train(epoch)
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
test()


def test_sample():
    train_features, train_labels = next(iter(train_dataloader))
    print(f'Features: {train_features.size()}')
    print(f'Labels: {train_labels.size()}')
    sample_image = train_features[0].squeeze()
    sample_label = train_labels[0]
    print(f'Label: {sample_label}')
    logits = model(sample_image.to(model.device))
    argmax = logits.argmax(0)
    softmax = nn.Softmax(0)(logits)
    print(f"{logits=}")
    print(f"{argmax=}")
    print(f"{softmax=}")
    print(f"{labels_array[argmax]}")


test_sample()
with torch.no_grad():
    for p in model.parameters():
        p.zero_()
buffer.seek(0)
print(model.load_state_dict(torch.load(buffer, weights_only=True)))
test()
