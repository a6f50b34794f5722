"""Capstone of a 15-day PyTorch course (meharuhanzz/Pytorch-tutorial, day15/main.py, with day12's
checkpointing): a backbone frozen except a new Dropout+Linear head, then layer4 unfrozen at a
smaller learning rate with a fresh Adam over filter(requires_grad), early stopping on the
validation loss with copy.deepcopy(state_dict()), a weights_only checkpoint holding the class
names, and a fresh model reloaded from it.  The pretrained resnet18 is replaced by a small
resnet-shaped network (conv1/bn1/layer4/avgpool/fc, convolutions without bias) and the shapes
ImageFolder by numpy images; sklearn's metrics by a numpy confusion matrix.  Weights come from
numpy, so the printed losses do not depend on the library's random stream."""
import copy
import os
import tempfile

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Subset, TensorDataset

BATCH_SIZE = 8
NUM_EPOCHS = 8
PATIENCE = 3
DROPOUT_P = 0.0   # the course uses 0.3; off here so the losses do not follow the random stream
LR_HEAD = 0.01
LR_FINETUNE = 0.001
FINETUNE_START_EPOCH = 3
CHECKPOINT_PATH = os.path.join(tempfile.mkdtemp(), "best_model.pt")

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"Device: {device}")

class_names = ["circle", "square", "triangle"]
num_classes = len(class_names)
rng = np.random.RandomState(0)
labels_np = rng.randint(0, num_classes, 60)
images_np = rng.rand(60, 3, 32, 32).astype(np.float32) * 0.2
for i, c in enumerate(labels_np):
    images_np[i, c, 8:24, 8:24] += 0.8
full_dataset = TensorDataset(torch.from_numpy(images_np), torch.from_numpy(labels_np))
train_size = int(0.8 * len(full_dataset))
train_dataset = Subset(full_dataset, range(train_size))
val_dataset = Subset(full_dataset, range(train_size, len(full_dataset)))
train_loader = DataLoader(train_dataset, batch_size=BATCH_SIZE, shuffle=False)
val_loader = DataLoader(val_dataset, batch_size=BATCH_SIZE, shuffle=False)
print(f"train: {len(train_dataset)}, val: {len(val_dataset)}")


class SmallResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer4 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
                                    nn.BatchNorm2d(16), nn.ReLU(inplace=True))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, 1000)

    def forward(self, x):
        x = self.layer4(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build_model(seed):
    model = SmallResNet()
    model.fc = nn.Sequential(nn.Dropout(DROPOUT_P), nn.Linear(model.fc.in_features, num_classes))
    draw = np.random.RandomState(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                for param in module.parameters(recurse=False):
                    param.copy_(torch.from_numpy(draw.normal(0.0, 0.3, tuple(param.shape))))
    return model.to(device)


model = build_model(1)
print(model.fc)
for param in model.parameters():
    param.requires_grad = False
for param in model.fc.parameters():
    param.requires_grad = True
trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
total = sum(p.numel() for p in model.parameters())
print(f"Trainable: {trainable:,} / {total:,} parameters ({100 * trainable / total:.2f}%)")

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=LR_HEAD)


def run_epoch(loader, training):
    model.train() if training else model.eval()
    total_loss, correct, total = 0.0, 0, 0
    context = torch.enable_grad() if training else torch.no_grad()
    with context:
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            logits = model(images)
            loss = loss_fn(logits, labels)
            if training:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total_loss += loss.item() * images.size(0)
            correct += (logits.argmax(1) == labels).sum().item()
            total += images.size(0)
    return total_loss / total, correct / total


best_val_loss = float("inf")
best_state = copy.deepcopy(model.state_dict())
patience_counter = 0
for epoch in range(NUM_EPOCHS):
    if epoch == FINETUNE_START_EPOCH:
        print(f"--- epoch {epoch}: unfreezing layer4, switching to lr={LR_FINETUNE} ---")
        for param in model.layer4.parameters():
            param.requires_grad = True
        optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=LR_FINETUNE)
        print(f"Trainable now: {sum(p.numel() for p in model.parameters() if p.requires_grad):,} / {total:,}")
    train_loss, train_acc = run_epoch(train_loader, training=True)
    val_loss, val_acc = run_epoch(val_loader, training=False)
    print(f"epoch {epoch + 1:2d}/{NUM_EPOCHS} | train loss {train_loss:.4f} acc {train_acc:.4f} | "
          f"val loss {val_loss:.4f} acc {val_acc:.4f}")
    if val_loss < best_val_loss:
        best_val_loss = val_loss
        best_state = copy.deepcopy(model.state_dict())
        patience_counter = 0
    else:
        patience_counter += 1
        if patience_counter >= PATIENCE:
            print(f"Early stopping at epoch {epoch + 1} (no improvement for {PATIENCE} epochs)")
            break

print(model.load_state_dict(best_state))
print(model.conv1.weight.requires_grad, model.layer4[0].weight.requires_grad,
      model.bn1.num_batches_tracked, best_state["bn1.num_batches_tracked"].dtype)
print(model.conv1.weight.grad is None, model.layer4[0].weight.grad is None)

torch.save({"model_state_dict": model.state_dict(), "class_names": class_names,
            "best_val_loss": best_val_loss}, CHECKPOINT_PATH)

model.eval()
all_preds, all_labels = [], []
with torch.no_grad():
    for images, labels in val_loader:
        preds = model(images.to(device)).argmax(dim=1).cpu()
        all_preds.extend(preds.tolist())
        all_labels.extend(labels.tolist())
accuracy = sum(p == l for p, l in zip(all_preds, all_labels)) / len(all_labels)
print(f"Final validation accuracy: {accuracy:.4f}")
cm = np.zeros((num_classes, num_classes), dtype=np.int64)
for t, p in zip(all_labels, all_preds):
    cm[t, p] += 1
print(cm)

loaded = torch.load(CHECKPOINT_PATH, weights_only=True)
print(loaded["class_names"], f"{loaded['best_val_loss']:.4f}", list(loaded["model_state_dict"])[:4])
fresh_model = build_model(2)
fresh_model.load_state_dict(loaded["model_state_dict"])
fresh_model.eval()
sample_images, sample_labels = next(iter(val_loader))
with torch.no_grad():
    original_preds = model(sample_images.to(device)).argmax(dim=1).cpu()
    loaded_preds = fresh_model(sample_images.to(device)).argmax(dim=1).cpu()
    probabilities = torch.softmax(fresh_model(sample_images), dim=1)
print(f"Original model predictions: {original_preds.tolist()}")
print(f"Loaded model predictions:   {loaded_preds.tolist()}")
print(f"Identical: {torch.equal(original_preds, loaded_preds)}")
for i in range(4):
    true_name = class_names[sample_labels[i]]
    pred_name = class_names[loaded_preds[i]]
    confidence = probabilities[i][loaded_preds[i]].item()
    mark = "OK" if loaded_preds[i] == sample_labels[i] else "WRONG"
    print(f"  [{mark}] true={true_name}, predicted={pred_name} (confidence {confidence:.2%})")
os.remove(CHECKPOINT_PATH)
