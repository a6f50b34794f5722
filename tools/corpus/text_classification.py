"""Text classification tutorial style: EmbeddingBag with offsets, collate_fn, clip_grad_norm_, StepLR."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data.dataset import random_split

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

topics = {
    1: "goal match team score league player coach win season",
    2: "market stock price bank trade profit share growth fund",
    3: "software chip computer data network code cloud device app",
}
gen = torch.Generator().manual_seed(0)
train_iter = []
for i in range(300):
    label = 1 + i % 3
    words = topics[label].split()
    picks = torch.randint(0, len(words), (int(torch.randint(3, 9, (1,), generator=gen)),), generator=gen)
    train_iter.append((label, ' '.join(words[j] for j in picks.tolist())))

vocab = {'<unk>': 0}
for label in sorted(topics):
    for tok in topics[label].split():
        vocab.setdefault(tok, len(vocab))
text_pipeline = lambda x: [vocab.get(tok, 0) for tok in x.split()]
label_pipeline = lambda x: int(x) - 1
print(len(vocab), text_pipeline('score bank zebra'), label_pipeline('3'))


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


num_class = 3
model = TextClassificationModel(len(vocab), 16, num_class).to(device)
bag = nn.EmbeddingBag(5, 2, mode='sum')
with torch.no_grad():
    bag.weight.copy_(torch.arange(10.0).reshape(5, 2))
print(bag(torch.tensor([0, 1, 2, 4]), torch.tensor([0, 2])).detach())
print(nn.EmbeddingBag(5, 2, mode='max')(torch.tensor([[0, 1], [2, 3]])).shape)

EPOCHS = 4
LR = 5
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=LR)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
num_train = int(len(train_iter) * 0.8)
split_train_, split_valid_ = random_split(train_iter, [num_train, len(train_iter) - num_train])
train_dataloader = DataLoader(split_train_, batch_size=16, shuffle=True, collate_fn=collate_batch)
valid_dataloader = DataLoader(split_valid_, batch_size=16, shuffle=True, collate_fn=collate_batch)


def train(dataloader):
    model.train()
    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()


def evaluate(dataloader):
    model.eval()
    total_acc, total_count = 0, 0
    with torch.no_grad():
        for idx, (label, text, offsets) in enumerate(dataloader):
            predicted_label = model(text, offsets)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count


total_accu = None
for epoch in range(1, EPOCHS + 1):
    epoch_start_time = time.time()
    train(train_dataloader)
    accu_val = evaluate(valid_dataloader)
    if total_accu is not None and total_accu > accu_val:
        scheduler.step()
    else:
        total_accu = accu_val
    print('| end of epoch {:3d} | valid accuracy above 0.9: {} '.format(epoch, accu_val > 0.9))

ag_news_label = {1: "Sports", 2: "Business", 3: "Sci/Tec"}


def predict(text, text_pipeline):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


print("This is a %s news" % ag_news_label[predict("the coach said the team will win the league", text_pipeline)])
