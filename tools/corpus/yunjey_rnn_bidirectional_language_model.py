import torch
import torch.nn as nn
import numpy as np

torch.manual_seed(0)

def det_init(model, scale=0.1):
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.71 + i).reshape(p.shape) * scale)

sequence_length = 28
input_size = 28
hidden_size = 32
num_layers = 2
num_classes = 10
batch_size = 6

class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(x.device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(x.device)
        out, _ = self.lstm(x, (h0, c0))
        out = self.fc(out[:, -1, :])
        return out

model = RNN(input_size, hidden_size, num_layers, num_classes)
det_init(model)
print(model)
for name, p in model.named_parameters():
    print(name, tuple(p.shape))
images = torch.cos(torch.arange(batch_size * 28 * 28, dtype=torch.float32) * 0.05).reshape(batch_size, 1, 28, 28)
labels = torch.arange(batch_size)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for i in range(3):
    imgs = images.reshape(-1, sequence_length, input_size)
    outputs = model(imgs)
    loss = criterion(outputs, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print('Step [{}/{}], Loss: {:.4f}'.format(i + 1, 3, loss.item()))

class BiRNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(BiRNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(hidden_size * 2, num_classes)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size)
        c0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size)
        out, _ = self.lstm(x, (h0, c0))
        out = self.fc(out[:, -1, :])
        return out

model = BiRNN(input_size, hidden_size, num_layers, num_classes)
det_init(model)
print(model)
print(model.lstm.weight_hh_l0_reverse.shape, model.lstm.bias_ih_l1.shape)
for i in range(3):
    outputs = model(images.reshape(-1, sequence_length, input_size))
    loss = criterion(outputs, labels)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003) if i == 0 else optimizer
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print('Step [{}/{}], Loss: {:.4f}'.format(i + 1, 3, loss.item()))
with torch.no_grad():
    out = model(images.reshape(-1, sequence_length, input_size))
    _, predicted = torch.max(out.data, 1)
    print(predicted)

# Language model
class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = {}
        self.idx = 0

    def add_word(self, word):
        if not word in self.word2idx:
            self.word2idx[word] = self.idx
            self.idx2word[self.idx] = word
            self.idx += 1

    def __len__(self):
        return len(self.word2idx)

class Corpus(object):
    def __init__(self):
        self.dictionary = Dictionary()

    def get_data(self, text, batch_size=20):
        tokens = 0
        for line in text.split('\n'):
            words = line.split() + ['<eos>']
            tokens += len(words)
            for word in words:
                self.dictionary.add_word(word)
        ids = torch.LongTensor(tokens)
        token = 0
        for line in text.split('\n'):
            words = line.split() + ['<eos>']
            for word in words:
                ids[token] = self.dictionary.word2idx[word]
                token += 1
        num_batches = ids.size(0) // batch_size
        ids = ids[:num_batches * batch_size]
        return ids.view(batch_size, -1)

text = "\n".join(["the quick brown fox jumps over the lazy dog"] * 10 + ["a stitch in time saves nine"] * 10)
corpus = Corpus()
ids = corpus.get_data(text, 4)
vocab_size = len(corpus.dictionary)
num_batches = ids.size(1) // 10
print(ids.shape, ids.dtype, vocab_size, num_batches)
print(ids[:, :10])

class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super(RNNLM, self).__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, h):
        x = self.embed(x)
        out, (h, c) = self.lstm(x, h)
        out = out.reshape(out.size(0) * out.size(1), out.size(2))
        out = self.linear(out)
        return out, (h, c)

model = RNNLM(vocab_size, 16, 32, 1)
det_init(model, 0.2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.002)

def detach(states):
    return [state.detach() for state in states]

seq_length = 10
for epoch in range(2):
    states = (torch.zeros(1, 4, 32), torch.zeros(1, 4, 32))
    for i in range(0, ids.size(1) - seq_length, seq_length):
        inputs = ids[:, i:i + seq_length]
        targets = ids[:, (i + 1):(i + 1) + seq_length]
        states = detach(states)
        outputs, states = model(inputs, states)
        loss = criterion(outputs, targets.reshape(-1))
        model.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        step = (i + 1) // seq_length
        if step % 2 == 0:
            print('Epoch [{}/{}], Step[{}/{}], Loss: {:.4f}, Perplexity: {:5.2f}'
                  .format(epoch + 1, 2, step, num_batches, loss.item(), np.exp(loss.item())))
print(type(states), states[0].requires_grad, states[0].grad_fn is not None)

with torch.no_grad():
    state = (torch.zeros(1, 1, 32), torch.zeros(1, 1, 32))
    prob = torch.ones(vocab_size)
    input = torch.multinomial(prob, num_samples=1).unsqueeze(1)
    print(input.shape, input.dtype)
    words = []
    input = torch.tensor([[0]])
    for i in range(8):
        output, state = model(input, state)
        prob = output.exp()
        word_id = torch.argmax(prob).item()
        input.fill_(word_id)
        word = corpus.dictionary.idx2word[word_id]
        word = '\n' if word == '<eos>' else word + ' '
        words.append(word)
    print(''.join(words))
