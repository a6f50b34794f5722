"""bentrevett/pytorch-seq2seq legacy/4 "Packed Padded Sequences, Masking, Inference and BLEU":
the bidirectional GRU encoder over pack_padded_sequence / pad_packed_sequence, additive
attention masked with masked_fill(mask == 0, -1e10), the attention GRU decoder with teacher
forcing (random.random), CrossEntropyLoss(ignore_index=pad), clip_grad_norm_, checkpointing the
best state_dict, and greedy translate_sentence with its attention matrix; verbatim but for the data
(a tiny numpy-made parallel corpus and vocabulary for Multi30k/spacy/torchtext), small sizes,
dropout 0, numpy starting weights, no plots or timings, no BLEU (torchtext); then prints of one
packed batch, its unpacked outputs and a pad_sequence (their grad_fn names)."""
import torch
import torch.nn as nn
import torch.optim as optim
import torch.nn.functional as F

import os
import tempfile
import numpy as np
import random
import math
import time

SEED = 1234
random.seed(SEED)
np.random.seed(SEED)
torch.manual_seed(SEED)
torch.backends.cudnn.deterministic = True

# a tiny synthetic parallel corpus (target = reversed source words) for Multi30k + spacy + torchtext
_rng = np.random.default_rng(0)
class _Vocab:
    def __init__(self, words):
        self.itos = ['<unk>', '<pad>', '<sos>', '<eos>'] + words
        self.stoi = {w: i for i, w in enumerate(self.itos)}
    def __len__(self): return len(self.itos)
class _Field:
    init_token, eos_token, pad_token = '<sos>', '<eos>', '<pad>'
    def __init__(self, words): self.vocab = _Vocab(words)
SRC = _Field(['w%d' % i for i in range(12)])
TRG = _Field(['v%d' % i for i in range(14)])
class _Example:
    def __init__(self, src, trg): self.src, self.trg = src, trg
def _make(n):
    out = []
    for _ in range(n):
        k = int(_rng.integers(3, 9))
        ids = _rng.integers(0, 12, size=k)
        out.append(_Example(['w%d' % i for i in ids], ['v%d' % (i + 2) for i in ids[::-1]]))
    return out
class _Data:
    def __init__(self, n): self.examples = _make(n)
    def __iter__(self): return iter(self.examples)
train_data, valid_data, test_data = _Data(48), _Data(16), _Data(16)
class _Batch:
    def __init__(self, exs):
        exs = sorted(exs, key=lambda e: len(e.src), reverse=True)
        def pad(seqs, f):
            ids = [[f.vocab.stoi['<sos>']] + [f.vocab.stoi[w] for w in s] + [f.vocab.stoi['<eos>']] for s in seqs]
            L = max(len(i) for i in ids)
            arr = np.full((L, len(ids)), f.vocab.stoi['<pad>'], dtype=np.int64)
            for j, i in enumerate(ids): arr[:len(i), j] = i
            return torch.from_numpy(arr), torch.tensor([len(i) for i in ids])
        self.src = pad([e.src for e in exs], SRC)
        self.trg = pad([e.trg for e in exs], TRG)[0]
def _iterator(data, bs=16):
    return [_Batch(data.examples[i:i + bs]) for i in range(0, len(data.examples), bs)]
BATCH_SIZE = 16
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
train_iterator, valid_iterator, test_iterator = _iterator(train_data), _iterator(valid_data), _iterator(test_data)

class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout):
        super().__init__()

        self.embedding = nn.Embedding(input_dim, emb_dim)

        self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional = True)

        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)

        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_len):

        embedded = self.dropout(self.embedding(src))

        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, src_len.to('cpu'))

        packed_outputs, hidden = self.rnn(packed_embedded)

        outputs, _ = nn.utils.rnn.pad_packed_sequence(packed_outputs)

        hidden = torch.tanh(self.fc(torch.cat((hidden[-2,:,:], hidden[-1,:,:]), dim = 1)))

        return outputs, hidden

class Attention(nn.Module):
    def __init__(self, enc_hid_dim, dec_hid_dim):
        super().__init__()

        self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
        self.v = nn.Linear(dec_hid_dim, 1, bias = False)

    def forward(self, hidden, encoder_outputs, mask):

        batch_size = encoder_outputs.shape[1]
        src_len = encoder_outputs.shape[0]

        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)

        encoder_outputs = encoder_outputs.permute(1, 0, 2)

        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim = 2)))

        attention = self.v(energy).squeeze(2)

        attention = attention.masked_fill(mask == 0, -1e10)

        return F.softmax(attention, dim = 1)

class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
        super().__init__()

        self.output_dim = output_dim
        self.attention = attention

        self.embedding = nn.Embedding(output_dim, emb_dim)

        self.rnn = nn.GRU((enc_hid_dim * 2) + emb_dim, dec_hid_dim)

        self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)

        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs, mask):

        input = input.unsqueeze(0)

        embedded = self.dropout(self.embedding(input))

        a = self.attention(hidden, encoder_outputs, mask)

        a = a.unsqueeze(1)

        encoder_outputs = encoder_outputs.permute(1, 0, 2)

        weighted = torch.bmm(a, encoder_outputs)

        weighted = weighted.permute(1, 0, 2)

        rnn_input = torch.cat((embedded, weighted), dim = 2)

        output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))

        assert (output == hidden).all()

        embedded = embedded.squeeze(0)
        output = output.squeeze(0)
        weighted = weighted.squeeze(0)

        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim = 1))

        return prediction, hidden.squeeze(0), a.squeeze(1)

class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, src_pad_idx, device):
        super().__init__()

        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx
        self.device = device

    def create_mask(self, src):
        mask = (src != self.src_pad_idx).permute(1, 0)
        return mask

    def forward(self, src, src_len, trg, teacher_forcing_ratio = 0.5):

        batch_size = src.shape[1]
        trg_len = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim

        outputs = torch.zeros(trg_len, batch_size, trg_vocab_size).to(self.device)

        encoder_outputs, hidden = self.encoder(src, src_len)

        input = trg[0,:]

        mask = self.create_mask(src)

        for t in range(1, trg_len):

            output, hidden, _ = self.decoder(input, hidden, encoder_outputs, mask)

            outputs[t] = output

            teacher_force = random.random() < teacher_forcing_ratio

            top1 = output.argmax(1)

            input = trg[t] if teacher_force else top1

        return outputs

INPUT_DIM = len(SRC.vocab)
OUTPUT_DIM = len(TRG.vocab)
ENC_EMB_DIM = 16
DEC_EMB_DIM = 16
ENC_HID_DIM = 24
DEC_HID_DIM = 20
ENC_DROPOUT = 0.0
DEC_DROPOUT = 0.0
SRC_PAD_IDX = SRC.vocab.stoi[SRC.pad_token]

attn = Attention(ENC_HID_DIM, DEC_HID_DIM)
enc = Encoder(INPUT_DIM, ENC_EMB_DIM, ENC_HID_DIM, DEC_HID_DIM, ENC_DROPOUT)
dec = Decoder(OUTPUT_DIM, DEC_EMB_DIM, ENC_HID_DIM, DEC_HID_DIM, DEC_DROPOUT, attn)

model = Seq2Seq(enc, dec, SRC_PAD_IDX, device).to(device)

def init_weights(m):
    for name, param in m.named_parameters():
        if 'weight' in name:
            nn.init.normal_(param.data, mean=0, std=0.01)
        else:
            nn.init.constant_(param.data, 0)

model.apply(init_weights)
# starting weights from numpy (deterministic under both libraries)
_wr = np.random.default_rng(1)
with torch.no_grad():
    for _p in model.parameters():
        _p.copy_(torch.from_numpy((_wr.standard_normal(tuple(_p.shape)) * 0.2).astype(np.float32)))

def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

print(f'The model has {count_parameters(model):,} trainable parameters')

optimizer = optim.Adam(model.parameters())

TRG_PAD_IDX = TRG.vocab.stoi[TRG.pad_token]

criterion = nn.CrossEntropyLoss(ignore_index = TRG_PAD_IDX)

def train(model, iterator, optimizer, criterion, clip):

    model.train()

    epoch_loss = 0

    for i, batch in enumerate(iterator):

        src, src_len = batch.src
        trg = batch.trg

        optimizer.zero_grad()

        output = model(src, src_len, trg)

        output_dim = output.shape[-1]

        output = output[1:].view(-1, output_dim)
        trg = trg[1:].view(-1)

        loss = criterion(output, trg)

        loss.backward()

        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)

        optimizer.step()

        epoch_loss += loss.item()

    return epoch_loss / len(iterator)

def evaluate(model, iterator, criterion):

    model.eval()

    epoch_loss = 0

    with torch.no_grad():

        for i, batch in enumerate(iterator):

            src, src_len = batch.src
            trg = batch.trg

            output = model(src, src_len, trg, 0) #turn off teacher forcing

            output_dim = output.shape[-1]

            output = output[1:].view(-1, output_dim)
            trg = trg[1:].view(-1)

            loss = criterion(output, trg)

            epoch_loss += loss.item()

    return epoch_loss / len(iterator)

def epoch_time(start_time, end_time):
    elapsed_time = end_time - start_time
    elapsed_mins = int(elapsed_time / 60)
    elapsed_secs = int(elapsed_time - (elapsed_mins * 60))
    return elapsed_mins, elapsed_secs

N_EPOCHS = 3
CLIP = 1

best_valid_loss = float('inf')
CHECKPOINT = os.path.join(tempfile.mkdtemp(), 'tut4-model.pt')

for epoch in range(N_EPOCHS):

    start_time = time.time()

    train_loss = train(model, train_iterator, optimizer, criterion, CLIP)
    valid_loss = evaluate(model, valid_iterator, criterion)

    end_time = time.time()

    epoch_mins, epoch_secs = epoch_time(start_time, end_time)

    if valid_loss < best_valid_loss:
        best_valid_loss = valid_loss
        torch.save(model.state_dict(), CHECKPOINT)

    print(f'Epoch: {epoch+1:02}')
    print(f'\tTrain Loss: {train_loss:.3f} | Train PPL: {math.exp(train_loss):7.3f}')
    print(f'\t Val. Loss: {valid_loss:.3f} |  Val. PPL: {math.exp(valid_loss):7.3f}')

print(model.load_state_dict(torch.load(CHECKPOINT)))

test_loss = evaluate(model, test_iterator, criterion)

print(f'| Test Loss: {test_loss:.3f} | Test PPL: {math.exp(test_loss):7.3f} |')

def translate_sentence(sentence, src_field, trg_field, model, device, max_len = 50):

    model.eval()

    if isinstance(sentence, str):
        nlp = spacy.load('de')
        tokens = [token.text.lower() for token in nlp(sentence)]
    else:
        tokens = [token.lower() for token in sentence]

    tokens = [src_field.init_token] + tokens + [src_field.eos_token]

    src_indexes = [src_field.vocab.stoi[token] for token in tokens]

    src_tensor = torch.LongTensor(src_indexes).unsqueeze(1).to(device)

    src_len = torch.LongTensor([len(src_indexes)])

    with torch.no_grad():
        encoder_outputs, hidden = model.encoder(src_tensor, src_len)

    mask = model.create_mask(src_tensor)

    trg_indexes = [trg_field.vocab.stoi[trg_field.init_token]]

    attentions = torch.zeros(max_len, 1, len(src_indexes)).to(device)

    for i in range(max_len):

        trg_tensor = torch.LongTensor([trg_indexes[-1]]).to(device)

        with torch.no_grad():
            output, hidden, attention = model.decoder(trg_tensor, hidden, encoder_outputs, mask)

        attentions[i] = attention

        pred_token = output.argmax(1).item()

        trg_indexes.append(pred_token)

        if pred_token == trg_field.vocab.stoi[trg_field.eos_token]:
            break

    trg_tokens = [trg_field.vocab.itos[i] for i in trg_indexes]

    return trg_tokens[1:], attentions[:len(trg_tokens)-1]

example_idx = 12

src = vars(train_data.examples[example_idx])['src']
trg = vars(train_data.examples[example_idx])['trg']

print(f'src = {src}')
print(f'trg = {trg}')

translation, attention = translate_sentence(src, SRC, TRG, model, device)

print(f'predicted trg = {translation}')

print('attention', tuple(attention.shape), round(attention.sum().item(), 4))

example_idx = 14

src = vars(valid_data.examples[example_idx])['src']
trg = vars(valid_data.examples[example_idx])['trg']

print(f'src = {src}')
print(f'trg = {trg}')

translation, attention = translate_sentence(src, SRC, TRG, model, device)

print(f'predicted trg = {translation}')

print('attention', tuple(attention.shape), round(attention.sum().item(), 4))

example_idx = 10

src = vars(test_data.examples[example_idx])['src']
trg = vars(test_data.examples[example_idx])['trg']

print(f'src = {src}')
print(f'trg = {trg}')

translation, attention = translate_sentence(src, SRC, TRG, model, device)

print(f'predicted trg = {translation}')

print('attention', tuple(attention.shape), round(attention.sum().item(), 4))


# the packed batch and the padded outputs as a script printing them sees them
src, src_len = train_iterator[0].src
emb = model.encoder.embedding(src)
packed = nn.utils.rnn.pack_padded_sequence(emb, src_len.to('cpu'))
print(type(packed).__name__, tuple(packed.data.shape), packed.batch_sizes.tolist())
print(type(packed.data.grad_fn).__name__)
outputs, lengths = nn.utils.rnn.pad_packed_sequence(model.encoder.rnn(packed)[0])
print(tuple(outputs.shape), lengths.tolist(), type(outputs.grad_fn).__name__)
seqs = [emb[:int(n), i] for i, n in enumerate(src_len[:3])]
padded = nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=-1.0)
print(tuple(padded.shape), type(padded.grad_fn).__name__, padded[2, -1, :3])
