"""vampireLibrarianMonk/pytorch-exercises, exercises/exercise_4.py (sarcasm headline classifier):
the padded-sequence Dataset, Embedding(padding_idx=0) -> Conv1d -> MaxPool1d -> bidirectional LSTM
-> AdaptiveAvgPool1d -> Linear -> sigmoid model, trained with BCELoss and Adam, with the accuracy
loop on rounded outputs.  The headlines (downloaded and tokenised with torchtext in the original)
are replaced by fixed token-id sequences of the same kind, the weights are set from a fixed numpy
stream instead of drawn, dropout is 0 and the loaders do not shuffle, so the output is the same
under any seed."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset


class SarcasmDataset(Dataset):
    def __init__(self, sentences, labels):
        self.sentences = sentences
        self.labels = labels

    def __len__(self):
        return len(self.sentences)

    def __getitem__(self, idx):
        return self.sentences[idx], self.labels[idx]


def pad_sequences(sequences, max_length):
    padded_sequences = torch.zeros((len(sequences), max_length), dtype=torch.long)
    for i, seq in enumerate(sequences):
        length = min(max_length, len(seq))
        padded_sequences[i, :length] = torch.tensor(seq[:length], dtype=torch.long)
    return padded_sequences


class SarcasmModel(nn.Module):
    def __init__(self, vocab_size, embedding_dim, output_dim, max_length):
        super(SarcasmModel, self).__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.dropout = nn.Dropout(0.0)
        self.conv1d = nn.Conv1d(embedding_dim, 32, kernel_size=5)
        self.maxpool = nn.MaxPool1d(kernel_size=4)
        self.lstm = nn.LSTM(32, 64, batch_first=True, bidirectional=True)
        self.global_avg_pool = nn.AdaptiveAvgPool1d(1)
        self.fc1 = nn.Linear(128, 128)
        self.fc2 = nn.Linear(128, output_dim)

    def forward(self, x):
        x = self.embedding(x)
        x = x.permute(0, 2, 1)
        x = self.dropout(x)
        x = F.relu(self.conv1d(x))
        x = self.maxpool(x)
        x = x.permute(0, 2, 1)
        x, _ = self.lstm(x)
        x = x.permute(0, 2, 1)
        x = self.global_avg_pool(x).squeeze(2)
        x = F.relu(self.fc1(x))
        x = self.dropout(x)
        x = torch.sigmoid(self.fc2(x))
        return x


def set_weights(model, seed, scale=0.15):
    rng = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))
        model.embedding.weight[0].zero_()       # the padding row, as nn.Embedding leaves it


def train_model(model, train_loader, val_loader, device, epochs=3):
    criterion = nn.BCELoss()
    optimizer = optim.Adam(model.parameters())
    model.to(device)
    for epoch in range(epochs):
        model.train()
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            outputs = model(inputs).squeeze(1)
            loss = criterion(outputs, labels.float())
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print(f"Epoch {epoch + 1}, Loss: {running_loss / len(train_loader):.5f}")
        model.eval()
        total = 0
        correct = 0
        with torch.no_grad():
            for inputs, labels in val_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                outputs = model(inputs).squeeze(1)
                predicted = outputs.round()
                total += labels.size(0)
                correct += (predicted == labels).sum().item()
        print(f'Accuracy after epoch {epoch + 1}: {100 * correct / total}%')


rs = np.random.RandomState(1)
encoded = [list(rs.randint(1, 200, rs.randint(5, 40))) for _ in range(160)]
# the label depends on the tokens, so there is something to learn
labels = [int(sum(t < 60 for t in s) * 3 > len(s)) for s in encoded]
padded = pad_sequences(encoded, 40)
print(padded.dtype, padded.shape, padded[0, :10])
labels = torch.tensor(labels, dtype=torch.float32)
print(labels.dtype, labels.sum().item())
train_data = SarcasmDataset(padded[:128], labels[:128])
test_data = SarcasmDataset(padded[128:], labels[128:])
print(len(train_data), train_data[3][0].shape, train_data[3][1], train_data[3][1].dtype)
train_loader = DataLoader(train_data, batch_size=32, shuffle=False)
val_loader = DataLoader(test_data, batch_size=32, shuffle=False)

model = SarcasmModel(200, 24, 1, 40)
set_weights(model, 0)
print(model)
print(sum(p.numel() for p in model.parameters()))
with torch.no_grad():
    first = model(padded[:4])
print(first.shape, first.squeeze(1))
train_model(model, train_loader, val_loader, torch.device("cpu"))
print(model.embedding.weight[0].abs().sum().item(), model.embedding.weight.grad[0].abs().sum().item())
with torch.no_grad():
    print(model(padded[128:134]).squeeze(1))
