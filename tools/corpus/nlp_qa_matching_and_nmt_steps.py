"""Two lyeoni-style NLP training loops on small fixed data: question/answer matching (tf-idf
weighted frozen embeddings, sequences sorted by length (stably) and packed through two
bidirectional LSTMs, cosine similarity by matmul and norms, BCELoss, a top-k search over the
question encodings), and a one-token-at-a-time seq2seq step (a bidirectional LSTM encoder whose
outputs are written row by row into a zeros buffer, its two directions' states concatenated for
the decoder, dot-product attention over the buffer, teacher forcing and greedy top-1 decoding).
Weights are drawn from numpy, so every value printed is seed-independent."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

rng = np.random.default_rng(0)


def set_weights(module, scale=0.3):
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.tensor(rng.uniform(-scale, scale, tuple(p.shape)), dtype=p.dtype))


# -- question / answer matching ---------------------------------------------------------------------
class QAModel(nn.Module):
    def __init__(self, n_words, emb, hidden, tfidf, eval_mode=False):
        super().__init__()
        self.word_embedding = nn.Embedding(n_words, emb)
        self.tfidf_embedding = nn.Embedding(n_words, 1)
        self.tfidf_embedding.weight.data.copy_(torch.from_numpy(tfidf))
        self.tfidf_embedding.weight.requires_grad = False
        self.lstm_q = nn.LSTM(emb, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.lstm_a = nn.LSTM(emb, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.hidden = hidden
        self.eval_mode = eval_mode

    def encode(self, lstm, ids, lengths):
        h0 = torch.zeros(4, ids.size(0), self.hidden)
        x = self.word_embedding(ids) * self.tfidf_embedding(ids)
        packed = pack_padded_sequence(x, lengths.tolist(), batch_first=True)
        out, (h, c) = lstm(packed, (h0, h0.clone()))
        out, out_len = pad_packed_sequence(out, batch_first=True)
        return torch.sum(out, dim=1), out_len

    def forward(self, qus, ans, qus_len, ans_len):
        q, _ = self.encode(self.lstm_q, qus, qus_len)
        if self.eval_mode:
            return q
        a, _ = self.encode(self.lstm_a, ans, ans_len)
        out = torch.matmul(q.unsqueeze(1), a.unsqueeze(-1)).squeeze(-1)
        out /= (torch.norm(q, p=2, dim=1) * torch.norm(a, p=2, dim=1)).unsqueeze(-1)
        return torch.sigmoid(out)


def sort_by_len(seqs, lengths):
    lengths, order = lengths.sort(dim=0, descending=True, stable=True)
    return seqs[order], lengths


n_words, maxlen = 20, 7
lens_q = rng.integers(2, maxlen + 1, 12)
lens_a = rng.integers(2, maxlen + 1, 12)
qus = torch.zeros(12, maxlen, dtype=torch.long)
ans = torch.zeros(12, maxlen, dtype=torch.long)
for i in range(12):
    qus[i, :lens_q[i]] = torch.tensor(rng.integers(1, n_words, lens_q[i]))
    ans[i, :lens_a[i]] = torch.tensor(rng.integers(1, n_words, lens_a[i]))
labels = torch.tensor([[1.0]] * 6 + [[0.0]] * 6)
qus_len, ans_len = (qus != 0).sum(1), (ans != 0).sum(1)
tfidf = rng.uniform(0.2, 1.0, (n_words, 1))

model = QAModel(n_words, 8, 6, tfidf)
set_weights(model)
model.tfidf_embedding.weight.data.copy_(torch.from_numpy(tfidf))
print(model)
print("trainable:", sum(p.numel() for p in model.parameters() if p.requires_grad))
criterion = nn.BCELoss()
optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
for epoch in range(1, 4):
    for start in (0, 6):
        q, ql = sort_by_len(qus[start:start + 6], qus_len[start:start + 6])
        a, al = sort_by_len(ans[start:start + 6], ans_len[start:start + 6])
        optimizer.zero_grad()
        out = model(q, a, ql, al)
        loss = criterion(out, labels[start:start + 6])
        acc = (torch.round(out) == labels[start:start + 6]).sum().item() / len(q)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.5f} acc {acc:.3f}")
print("lstm_q grad norm:", round(model.lstm_q.weight_hh_l1_reverse.grad.norm().item(), 5))
print("tfidf grad:", model.tfidf_embedding.weight.grad)

encoder = QAModel(n_words, 8, 6, tfidf, eval_mode=True)
encoder.load_state_dict(model.state_dict())
encoder.eval()
with torch.no_grad():
    q, ql = sort_by_len(qus, qus_len)
    enc = encoder(q, q, ql, ql)
    sample = enc[3]
    sim = torch.matmul(enc, sample.unsqueeze(-1))
    sim /= (torch.norm(enc, p=2, dim=1) * torch.norm(sample, p=2, dim=0)).unsqueeze(-1)
    topv, topi = torch.topk(sim.squeeze(-1), 3)
print("top-3 similar:", topi.tolist(), [round(v, 4) for v in topv.tolist()])


# -- one-token-at-a-time seq2seq with attention --------------------------------------------------------
MAX_LENGTH, SOS, EOS = 6, 0, 1


class Encoder(nn.Module):
    def __init__(self, n, emb, hidden):
        super().__init__()
        self.hidden_size = hidden
        self.embedding = nn.Embedding(n, emb)
        self.lstm = nn.LSTM(emb, hidden // 2, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, token, hidden):
        return self.lstm(self.embedding(token).view(1, 1, -1), hidden)

    def init_hidden(self):
        return torch.zeros(4, 1, self.hidden_size // 2)


class AttnDecoder(nn.Module):
    def __init__(self, n, emb, hidden):
        super().__init__()
        self.embedding = nn.Embedding(n, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden * 2, n)

    def forward(self, token, hidden, encoder_outputs):
        x = F.relu(self.embedding(token).view(1, 1, -1))
        x, hidden = self.lstm(x, hidden)
        w = F.softmax(torch.bmm(x, encoder_outputs.unsqueeze(0).permute(0, 2, 1)).squeeze(0), dim=1)
        context = torch.bmm(w.unsqueeze(0), encoder_outputs.unsqueeze(0))
        return F.log_softmax(self.out(torch.cat((x, context), -1)[0]), dim=1), hidden, w


def merge_hiddens(hiddens):
    h, c = hiddens
    new_h = torch.stack([torch.cat([h[i], h[i + 1]], dim=-1) for i in range(0, h.size(0), 2)])
    new_c = torch.stack([torch.cat([c[i], c[i + 1]], dim=-1) for i in range(0, c.size(0), 2)])
    return new_h, new_c


encoder, decoder = Encoder(12, 6, 8), AttnDecoder(12, 6, 8)
set_weights(encoder)
set_weights(decoder)
enc_opt = torch.optim.SGD(encoder.parameters(), lr=0.05)
dec_opt = torch.optim.SGD(decoder.parameters(), lr=0.05)
criterion = nn.NLLLoss()
pairs = [([3, 4, 5], [6, 7]), ([5, 9, 2, 8], [10, 11, 6]), ([4, 4], [7])]


def run(src, tgt, teacher_forcing):
    hidden = (encoder.init_hidden(), encoder.init_hidden())
    encoder_outputs = torch.zeros(MAX_LENGTH, encoder.hidden_size)
    src_t = torch.tensor(src + [EOS]).view(-1, 1)
    for ei in range(src_t.size(0)):
        out, hidden = encoder(src_t[ei], hidden)
        encoder_outputs[ei] = out[0, 0]
    token, hidden = torch.tensor([[SOS]]), merge_hiddens(hidden)
    loss, decoded = 0, []
    for t in tgt + [EOS]:
        out, hidden, attn = decoder(token, hidden, encoder_outputs)
        loss += criterion(out, torch.tensor([t]))
        topv, topi = out.topk(1)
        decoded.append(topi.item())
        token = torch.tensor([t]) if teacher_forcing else topi.squeeze().detach()
    return loss, decoded, attn


for it in range(6):
    src, tgt = pairs[it % 3]
    enc_opt.zero_grad()
    dec_opt.zero_grad()
    loss, decoded, attn = run(src, tgt, teacher_forcing=it % 2 == 0)
    loss.backward()
    enc_opt.step()
    dec_opt.step()
    print(f"iter {it} loss/token {loss.item() / (len(tgt) + 1):.5f} decoded {decoded}")
print("last attention:", [round(v, 4) for v in attn.detach()[0].tolist()])
print("encoder_outputs grad_fn:", type(run(*pairs[0], False)[0].grad_fn).__name__)
print("encoder lstm grad:", round(encoder.lstm.weight_ih_l1_reverse.grad.abs().sum().item(), 5))
