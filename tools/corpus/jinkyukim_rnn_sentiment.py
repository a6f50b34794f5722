"""jinkyukim-me/pytorch-tutorials 과제1.ipynb (bentrevett's "Simple Sentiment Analysis"): an
nn.Embedding -> nn.RNN -> nn.Linear classifier whose forward asserts torch.equal(output[-1],
hidden.squeeze(0)), BCEWithLogitsLoss, SGD, binary_accuracy by rounding sigmoid outputs, train and
evaluate loops (model.train()/eval(), no_grad), best-validation state_dict saved and reloaded.

Adapted: the torchtext IMDB fields and BucketIterators replaced by synthetic batches of token ids
[sent len, batch] whose last three tokens give the label (numpy, seeded); sizes 100/256 -> 16/32,
lr 1e-3 -> 1e-1 so five epochs learn; parameters drawn from numpy; the checkpoint kept in an
io.BytesIO instead of a file; the epoch wall-time print dropped.
"""
import io
import time

import numpy as np
import torch

SEED = 1234
torch.manual_seed(SEED)
device = torch.device('cpu')

VOCAB = 200
_rng = np.random.default_rng(0)


class Batch:
    """What a torchtext BucketIterator yields: .text [sent len, batch size], .label [batch size]."""
    def __init__(self, text, label):
        self.text, self.label = text, label


def synthetic_batches(n_batches, batch_size=16, sent_len=12):
    batches = []
    for _ in range(n_batches):
        label = _rng.integers(0, 2, batch_size)
        text = _rng.integers(2, VOCAB, (sent_len, batch_size))
        text[-3:, :] = np.where(label == 1, 1, 0)        # the sentiment lives in the last tokens
        batches.append(Batch(torch.from_numpy(text.astype(np.int64)),
                             torch.from_numpy(label.astype(np.float32))))
    return batches


train_iterator, valid_iterator, test_iterator = synthetic_batches(8), synthetic_batches(3), synthetic_batches(3)


class Vocab:
    itos = list(range(VOCAB))

    def __len__(self):
        return VOCAB


class Field:
    vocab = Vocab()


TEXT = Field()


def np_init(module, seed=0):
    """Every parameter drawn from one numpy stream (uniform +-1/sqrt(fan_in)), copied under no_grad."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in module.parameters():
            fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else p.shape[0]
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32)))


import torch.nn as nn

class RNN(nn.Module):
    def __init__(self, input_dim, embedding_dim, hidden_dim, output_dim):
        
        super().__init__()
        
        self.embedding = nn.Embedding(input_dim, embedding_dim)
        
        self.rnn = nn.RNN(embedding_dim, hidden_dim)
        
        self.fc = nn.Linear(hidden_dim, output_dim)
        
    def forward(self, text):

        #text = [sent len, batch size]
        
        embedded = self.embedding(text)
        
        #embedded = [sent len, batch size, emb dim]
        
        output, hidden = self.rnn(embedded)
        
        #output = [sent len, batch size, hid dim]
        #hidden = [1, batch size, hid dim]
        
        assert torch.equal(output[-1,:,:], hidden.squeeze(0))
        
        return self.fc(hidden.squeeze(0))

INPUT_DIM = len(TEXT.vocab)
EMBEDDING_DIM = 16
HIDDEN_DIM = 32
OUTPUT_DIM = 1

model = RNN(INPUT_DIM, EMBEDDING_DIM, HIDDEN_DIM, OUTPUT_DIM)
np_init(model)

def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

print(f'The model has {count_parameters(model):,} trainable parameters')

import torch.optim as optim

optimizer = optim.SGD(model.parameters(), lr=1e-1)

criterion = nn.BCEWithLogitsLoss()

model = model.to(device)
criterion = criterion.to(device)

def binary_accuracy(preds, y):
    """
    Returns accuracy per batch, i.e. if you get 8/10 right, this returns 0.8, NOT 8
    """

    #round predictions to the closest integer
    rounded_preds = torch.round(torch.sigmoid(preds))
    correct = (rounded_preds == y).float() #convert into float for division 
    acc = correct.sum() / len(correct)
    return acc

def train(model, iterator, optimizer, criterion):
    
    epoch_loss = 0
    epoch_acc = 0
    
    model.train()
    
    for batch in iterator:
        
        optimizer.zero_grad()
                
        predictions = model(batch.text).squeeze(1)
        
        loss = criterion(predictions, batch.label)
        
        acc = binary_accuracy(predictions, batch.label)
        
        loss.backward()
        
        optimizer.step()
        
        epoch_loss += loss.item()
        epoch_acc += acc.item()
        
    return epoch_loss / len(iterator), epoch_acc / len(iterator)

def evaluate(model, iterator, criterion):
    
    epoch_loss = 0
    epoch_acc = 0
    
    model.eval()
    
    with torch.no_grad():
    
        for batch in iterator:

            predictions = model(batch.text).squeeze(1)
            
            loss = criterion(predictions, batch.label)
            
            acc = binary_accuracy(predictions, batch.label)

            epoch_loss += loss.item()
            epoch_acc += acc.item()
        
    return epoch_loss / len(iterator), epoch_acc / len(iterator)

def epoch_time(start_time, end_time):
    elapsed_time = end_time - start_time
    elapsed_mins = int(elapsed_time / 60)
    elapsed_secs = int(elapsed_time - (elapsed_mins * 60))
    return elapsed_mins, elapsed_secs

N_EPOCHS = 5

best_valid_loss = float('inf')

for epoch in range(N_EPOCHS):

    start_time = time.time()
    
    train_loss, train_acc = train(model, train_iterator, optimizer, criterion)
    valid_loss, valid_acc = evaluate(model, valid_iterator, criterion)
    
    end_time = time.time()

    epoch_mins, epoch_secs = epoch_time(start_time, end_time)
    
    if valid_loss < best_valid_loss:
        best_valid_loss = valid_loss
        checkpoint = io.BytesIO()
        torch.save(model.state_dict(), checkpoint)
    
    print(f'Epoch: {epoch+1:02}')
    print(f'\tTrain Loss: {train_loss:.3f} | Train Acc: {train_acc*100:.2f}%')
    print(f'\t Val. Loss: {valid_loss:.3f} |  Val. Acc: {valid_acc*100:.2f}%')

checkpoint.seek(0)
model.load_state_dict(torch.load(checkpoint))

test_loss, test_acc = evaluate(model, test_iterator, criterion)

print(f'Test Loss: {test_loss:.3f} | Test Acc: {test_acc*100:.2f}%')
