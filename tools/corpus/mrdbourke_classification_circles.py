import math
import torch
from torch import nn

torch.manual_seed(42)
n_samples = 1000


def make_circles_torch(n, noise=0.03, factor=0.8):
    # deterministic circles (no sklearn)
    n_out = n // 2
    n_in = n - n_out
    lin_out = torch.linspace(0, 2 * math.pi, n_out + 1)[:-1]
    lin_in = torch.linspace(0, 2 * math.pi, n_in + 1)[:-1]
    outer = torch.stack([torch.cos(lin_out), torch.sin(lin_out)], dim=1)
    inner = torch.stack([torch.cos(lin_in), torch.sin(lin_in)], dim=1) * factor
    X = torch.cat([outer, inner])
    y = torch.cat([torch.zeros(n_out), torch.ones(n_in)])
    jitter = torch.sin(torch.arange(n, dtype=torch.float32) * 12.9898).unsqueeze(1) * noise
    return X + jitter, y


X, y = make_circles_torch(n_samples)
print(f"First 5 X features:\n{X[:5]}")
print(f"\nFirst 5 y labels:\n{y[:5]}")
print(X.shape, y.shape)
X_sample = X[0]
y_sample = y[0]
print(f"Values for one sample of X: {X_sample} and the same for y: {y_sample}")
print(f"Shapes for one sample of X: {X_sample.shape} and the same for y: {y_sample.shape}")
print(type(X), X.dtype, y.dtype)
perm = torch.arange(n_samples).flip(0)
perm = torch.cat([perm[::2], perm[1::2]])
X, y = X[perm], y[perm]
X_train, X_test = X[:800], X[800:]
y_train, y_test = y[:800], y[800:]
print(len(X_train), len(X_test), len(y_train), len(y_test))
print(y_train.sum(), y_test.mean())

device = "cuda" if torch.cuda.is_available() else "cpu"


def init_det(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            n = p.numel()
            vals = torch.sin(torch.arange(n, dtype=torch.float32) * 0.7 + i) * 0.5
            p.copy_(vals.reshape(p.shape))


class CircleModelV0(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_1 = nn.Linear(in_features=2, out_features=5)
        self.layer_2 = nn.Linear(in_features=5, out_features=1)

    def forward(self, x):
        return self.layer_2(self.layer_1(x))


model_0 = CircleModelV0().to(device)
init_det(model_0)
print(model_0)
model_0 = nn.Sequential(
    nn.Linear(in_features=2, out_features=5),
    nn.Linear(in_features=5, out_features=1)
).to(device)
init_det(model_0)
print(model_0)
print(model_0.state_dict())

with torch.inference_mode():
    untrained_preds = model_0(X_test.to(device))
print(f"Length of predictions: {len(untrained_preds)}, Shape: {untrained_preds.shape}")
print(f"Length of test samples: {len(y_test)}, Shape: {y_test.shape}")
print(f"\nFirst 10 predictions:\n{torch.round(untrained_preds[:10])}")
print(f"\nFirst 10 test labels:\n{y_test[:10]}")

loss_fn = nn.BCEWithLogitsLoss()
optimizer = torch.optim.SGD(params=model_0.parameters(), lr=0.1)


def accuracy_fn(y_true, y_pred):
    correct = torch.eq(y_true, y_pred).sum().item()
    acc = (correct / len(y_pred)) * 100
    return acc


model_0.eval()
with torch.inference_mode():
    y_logits = model_0(X_test.to(device))[:5]
print(y_logits)
y_pred_probs = torch.sigmoid(y_logits)
print(y_pred_probs)
print(torch.round(y_pred_probs))
y_preds = torch.round(y_pred_probs)
y_pred_labels = torch.round(torch.sigmoid(model_0(X_test.to(device))[:5]))
print(torch.eq(y_preds.squeeze(), y_pred_labels.squeeze()))
print(y_preds.squeeze())

torch.manual_seed(42)
epochs = 100
X_train, y_train = X_train.to(device), y_train.to(device)
X_test, y_test = X_test.to(device), y_test.to(device)
for epoch in range(epochs):
    model_0.train()
    y_logits = model_0(X_train).squeeze()
    y_pred = torch.round(torch.sigmoid(y_logits))
    loss = loss_fn(y_logits, y_train)
    acc = accuracy_fn(y_true=y_train, y_pred=y_pred)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model_0.eval()
    with torch.inference_mode():
        test_logits = model_0(X_test).squeeze()
        test_pred = torch.round(torch.sigmoid(test_logits))
        test_loss = loss_fn(test_logits, y_test)
        test_acc = accuracy_fn(y_true=y_test, y_pred=test_pred)
    if epoch % 10 == 0:
        print(f"Epoch: {epoch} | Loss: {loss:.5f}, Accuracy: {acc:.2f}% | Test loss: {test_loss:.5f}, Test acc: {test_acc:.2f}%")


class CircleModelV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_1 = nn.Linear(in_features=2, out_features=10)
        self.layer_2 = nn.Linear(in_features=10, out_features=10)
        self.layer_3 = nn.Linear(in_features=10, out_features=1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.layer_3(self.relu(self.layer_2(self.relu(self.layer_1(x)))))


model_3 = CircleModelV2().to(device)
init_det(model_3)
print(model_3)
loss_fn = torch.nn.BCEWithLogitsLoss()
optimizer = torch.optim.SGD(model_3.parameters(), lr=0.1)
epochs = 1000
for epoch in range(epochs):
    y_logits = model_3(X_train).squeeze()
    y_pred = torch.round(torch.sigmoid(y_logits))
    loss = loss_fn(y_logits, y_train)
    acc = accuracy_fn(y_true=y_train, y_pred=y_pred)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model_3.eval()
    with torch.inference_mode():
        test_logits = model_3(X_test).squeeze()
        test_pred = torch.round(torch.sigmoid(test_logits))
        test_loss = loss_fn(test_logits, y_test)
        test_acc = accuracy_fn(y_true=y_test, y_pred=test_pred)
    if epoch % 100 == 0:
        print(f"Epoch: {epoch} | Loss: {loss:.5f}, Accuracy: {acc:.2f}% | Test Loss: {test_loss:.5f}, Test Accuracy: {test_acc:.2f}%")

model_3.eval()
with torch.inference_mode():
    y_preds = torch.round(torch.sigmoid(model_3(X_test))).squeeze()
print(y_preds[:10], y[:10])

A = torch.arange(-10, 10, 1, dtype=torch.float32)
print(A)


def relu(x):
    return torch.maximum(torch.tensor(0), x)


print(relu(A))


def sigmoid(x):
    return 1 / (1 + torch.exp(-x))


print(sigmoid(A))
print(torch.allclose(sigmoid(A), torch.sigmoid(A)))

# multi-class
NUM_CLASSES = 4
NUM_FEATURES = 2
centers = torch.tensor([[-5., -5.], [5., 5.], [-5., 5.], [5., -5.]])
idx = torch.arange(400) % 4
X_blob = centers[idx] + 1.5 * torch.stack([torch.sin(torch.arange(400.) * 1.3), torch.cos(torch.arange(400.) * 2.1)], 1)
y_blob = idx.type(torch.LongTensor)
print(X_blob[:5], y_blob[:5])
print(y_blob.dtype, X_blob.type(torch.float).dtype)
X_blob_train, X_blob_test = X_blob[:320], X_blob[320:]
y_blob_train, y_blob_test = y_blob[:320], y_blob[320:]


class BlobModel(nn.Module):
    def __init__(self, input_features, output_features, hidden_units=8):
        super().__init__()
        self.linear_layer_stack = nn.Sequential(
            nn.Linear(in_features=input_features, out_features=hidden_units),
            nn.Linear(in_features=hidden_units, out_features=hidden_units),
            nn.Linear(in_features=hidden_units, out_features=output_features),
        )

    def forward(self, x):
        return self.linear_layer_stack(x)


model_4 = BlobModel(input_features=NUM_FEATURES, output_features=NUM_CLASSES, hidden_units=8).to(device)
init_det(model_4)
print(model_4)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model_4.parameters(), lr=0.1)
print(model_4(X_blob_train.to(device))[:5])
print(model_4(X_blob_train.to(device))[0].shape, NUM_CLASSES)
y_logits = model_4(X_blob_test.to(device))
y_pred_probs = torch.softmax(y_logits, dim=1)
print(y_logits[:5])
print(y_pred_probs[:5])
print(torch.sum(y_pred_probs[0]))
print(y_pred_probs[0])
print(torch.argmax(y_pred_probs[0]))
for epoch in range(100):
    model_4.train()
    y_logits = model_4(X_blob_train)
    y_pred = torch.softmax(y_logits, dim=1).argmax(dim=1)
    loss = loss_fn(y_logits, y_blob_train)
    acc = accuracy_fn(y_true=y_blob_train, y_pred=y_pred)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model_4.eval()
    with torch.inference_mode():
        test_logits = model_4(X_blob_test)
        test_pred = torch.softmax(test_logits, dim=1).argmax(dim=1)
        test_loss = loss_fn(test_logits, y_blob_test)
        test_acc = accuracy_fn(y_true=y_blob_test, y_pred=test_pred)
    if epoch % 10 == 0:
        print(f"Epoch: {epoch} | Loss: {loss:.5f}, Acc: {acc:.2f}% | Test Loss: {test_loss:.5f}, Test Acc: {test_acc:.2f}%")
model_4.eval()
with torch.inference_mode():
    y_logits = model_4(X_blob_test)
print(y_logits[:10])
y_pred_probs = torch.softmax(y_logits, dim=1)
y_preds = y_pred_probs.argmax(dim=1)
print(f"Predictions: {y_preds[:10]}\nLabels: {y_blob_test[:10]}")
print(f"Test accuracy: {accuracy_fn(y_true=y_blob_test, y_pred=y_preds)}%")
try:
    loss_fn(y_logits, y_blob_test.float())
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
try:
    nn.BCEWithLogitsLoss()(model_3(X_test), y_test)
except ValueError as e:
    print("ValueError", e)
