"""ZacBi/CS224n-2019-solutions assignments/a4 (Stanford CS224n 2019 homework 4, a student's
solution): utils.pad_sents, vocab.VocabEntry/Vocab, model_embeddings.ModelEmbeddings and
nmt_model.NMT -- a bidirectional-LSTM encoder over pack_padded_sequence/pad_packed_sequence, an
LSTMCell decoder with multiplicative attention (bmm, masked_fill with -inf, softmax), the
combined-output projection, the gold-word log-likelihood with gather, an Adam loop with
clip_grad_norm_, beam search (topk over the flattened scores, index arithmetic), and the
checkpoint round trip of NMT.save/NMT.load (a pickled Vocab: weights_only load refuses it).

Adapted: the Spanish-English corpus replaced by 10 synthetic sentence pairs drawn with numpy;
parameters drawn from numpy; dropout 0. Two lines of the 2019 code no longer run under PyTorch
2 (both libraries raise the same errors, shown first): the attention mask `enc_masks.byte()`
(masked_fill wants a bool mask) and `top_cand_hyp_pos / len(vocab)` used as a list index (true
division gives floats); the model uses `.bool()` and floor division instead. docstrings,
comments and the vocabulary's json save/load dropped.
"""
import math
import sys
from collections import Counter, namedtuple
from itertools import chain
from typing import Dict, List, Set, Tuple, Union

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

def pad_sents(sents, pad_token):
    sents_padded = []
    max_len = max([len(sent) for sent in sents])
    for sent in sents:
        sent_len = len(sent)
        sents_padded.append(sent + (max_len - sent_len) * [pad_token])
    return sents_padded



class VocabEntry(object):

    def __init__(self, word2id=None):
        if word2id:
            self.word2id = word2id
        else:
            self.word2id = dict()
            self.word2id['<pad>'] = 0
            self.word2id['<s>'] = 1
            self.word2id['</s>'] = 2
            self.word2id['<unk>'] = 3
        self.unk_id = self.word2id['<unk>']
        self.id2word = {v: k for k, v in self.word2id.items()}

    def __getitem__(self, word):
        return self.word2id.get(word, self.unk_id)

    def __contains__(self, word):
        return word in self.word2id

    def __setitem__(self, key, value):
        raise ValueError('vocabulary is readonly')

    def __len__(self):
        return len(self.word2id)

    def __repr__(self):
        return 'Vocabulary[size=%d]' % len(self)

    def id2word(self, wid):
        return self.id2word[wid]

    def add(self, word):
        if word not in self:
            wid = self.word2id[word] = len(self)
            self.id2word[wid] = word
            return wid
        else:
            return self[word]

    def words2indices(self, sents):
        if type(sents[0]) == list:
            return [[self[w] for w in s] for s in sents]
        else:
            return [self[w] for w in sents]

    def indices2words(self, word_ids):
        return [self.id2word[w_id] for w_id in word_ids]

    def to_input_tensor(self, sents: List[List[str]], device: torch.device) -> torch.Tensor:
        word_ids = self.words2indices(sents)
        sents_t = pad_sents(word_ids, self['<pad>'])
        sents_var = torch.tensor(sents_t, dtype=torch.long, device=device)
        return torch.t(sents_var)

    @staticmethod
    def from_corpus(corpus, size, freq_cutoff=2):
        vocab_entry = VocabEntry()
        word_freq = Counter(chain(*corpus))
        valid_words = [w for w, v in word_freq.items() if v >= freq_cutoff]
        print('number of word types: {}, number of word types w/ frequency >= {}: {}'.format(len(word_freq), freq_cutoff, len(valid_words)))
        top_k_words = sorted(valid_words, key=lambda w: word_freq[w], reverse=True)[:size]
        for word in top_k_words:
            vocab_entry.add(word)
        return vocab_entry

class Vocab(object):

    def __init__(self, src_vocab: VocabEntry, tgt_vocab: VocabEntry):
        self.src = src_vocab
        self.tgt = tgt_vocab

    @staticmethod
    def build(src_sents, tgt_sents, vocab_size, freq_cutoff) -> 'Vocab':
        assert len(src_sents) == len(tgt_sents)
        print('initialize source vocabulary ..')
        src = VocabEntry.from_corpus(src_sents, vocab_size, freq_cutoff)
        print('initialize target vocabulary ..')
        tgt = VocabEntry.from_corpus(tgt_sents, vocab_size, freq_cutoff)
        return Vocab(src, tgt)

    def __repr__(self):
        return 'Vocab(source %d words, target %d words)' % (len(self.src), len(self.tgt))


class ModelEmbeddings(nn.Module):

    def __init__(self, embed_size, vocab):
        super(ModelEmbeddings, self).__init__()
        self.embed_size = embed_size
        self.source = None
        self.target = None
        src_pad_token_idx = vocab.src['<pad>']
        tgt_pad_token_idx = vocab.tgt['<pad>']
        self.source = nn.Embedding(len(vocab.src), embed_size, src_pad_token_idx)
        self.target = nn.Embedding(len(vocab.tgt), embed_size, tgt_pad_token_idx)

# ==== 


Hypothesis = namedtuple('Hypothesis', ['value', 'score'])

class NMT(nn.Module):

    def __init__(self, embed_size, hidden_size, vocab, dropout_rate=0.2):
        super(NMT, self).__init__()
        self.model_embeddings = ModelEmbeddings(embed_size, vocab)
        self.hidden_size = hidden_size
        self.dropout_rate = dropout_rate
        self.vocab = vocab
        self.encoder = None
        self.decoder = None
        self.h_projection = None
        self.c_projection = None
        self.att_projection = None
        self.combined_output_projection = None
        self.target_vocab_projection = None
        self.dropout = None
        self.encoder = nn.LSTM(embed_size, self.hidden_size, dropout=self.dropout_rate, bidirectional=True)
        self.decoder = nn.LSTMCell(embed_size + self.hidden_size, self.hidden_size)
        self.h_projection = nn.Linear(2 * self.hidden_size, self.hidden_size, bias=False)
        self.c_projection = nn.Linear(2 * self.hidden_size, self.hidden_size, bias=False)
        self.att_projection = nn.Linear(2 * self.hidden_size, self.hidden_size, bias=False)
        self.combined_output_projection = nn.Linear(3 * self.hidden_size, self.hidden_size, bias=False)
        self.target_vocab_projection = nn.Linear(self.hidden_size, self.model_embeddings.target.weight.shape[0])
        self.dropout = nn.Dropout(self.dropout_rate)

    def forward(self, source: List[List[str]], target: List[List[str]]) -> torch.Tensor:
        source_lengths = [len(s) for s in source]
        source_padded = self.vocab.src.to_input_tensor(source, device=self.device)
        target_padded = self.vocab.tgt.to_input_tensor(target, device=self.device)
        enc_hiddens, dec_init_state = self.encode(source_padded, source_lengths)
        enc_masks = self.generate_sent_masks(enc_hiddens, source_lengths)
        combined_outputs = self.decode(enc_hiddens, enc_masks, dec_init_state, target_padded)
        P = F.log_softmax(self.target_vocab_projection(combined_outputs), dim=-1)
        target_masks = (target_padded != self.vocab.tgt['<pad>']).float()
        target_gold_words_log_prob = torch.gather(P, index=target_padded[1:].unsqueeze(-1), dim=-1).squeeze(-1) * target_masks[1:]
        scores = target_gold_words_log_prob.sum(dim=0)
        return scores

    def encode(self, source_padded: torch.Tensor, source_lengths: List[int]) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        enc_hiddens, dec_init_state = (None, None)
        X = self.model_embeddings.source(source_padded)
        enc_hiddens, (last_hidden, last_cell) = self.encoder(pack_padded_sequence(X, source_lengths))
        enc_hiddens = pad_packed_sequence(enc_hiddens, batch_first=True)[0]
        last_hidden = torch.cat((last_hidden[0, :], last_hidden[1, :]), 1)
        init_decoder_hidden = self.h_projection(last_hidden)
        last_cell = torch.cat((last_cell[0, :], last_cell[1, :]), 1)
        init_decoder_cell = self.c_projection(last_cell)
        dec_init_state = (init_decoder_hidden, init_decoder_cell)
        return (enc_hiddens, dec_init_state)

    def decode(self, enc_hiddens: torch.Tensor, enc_masks: torch.Tensor, dec_init_state: Tuple[torch.Tensor, torch.Tensor], target_padded: torch.Tensor) -> torch.Tensor:
        target_padded = target_padded[:-1]
        dec_state = dec_init_state
        batch_size = enc_hiddens.size(0)
        o_prev = torch.zeros(batch_size, self.hidden_size, device=self.device)
        combined_outputs = []
        enc_hiddens_proj = self.att_projection(enc_hiddens)
        Y = self.model_embeddings.target(target_padded)
        for Y_t in torch.split(Y, 1):
            Y_t = torch.squeeze(Y_t)
            Ybar_t = torch.cat((o_prev, Y_t), dim=1)
            dec_state, o_t, e_t = self.step(Ybar_t, dec_state, enc_hiddens, enc_hiddens_proj, enc_masks)
            combined_outputs.append(o_t)
            o_prev = o_t
        combined_outputs = torch.stack(combined_outputs)
        return combined_outputs

    def step(self, Ybar_t: torch.Tensor, dec_state: Tuple[torch.Tensor, torch.Tensor], enc_hiddens: torch.Tensor, enc_hiddens_proj: torch.Tensor, enc_masks: torch.Tensor) -> Tuple[Tuple, torch.Tensor, torch.Tensor]:
        combined_output = None
        dec_state = self.decoder(Ybar_t, dec_state)
        dec_hidden, dec_cell = dec_state
        e_t = torch.squeeze(torch.bmm(enc_hiddens_proj, torch.unsqueeze(dec_hidden, 2)), 2)
        if enc_masks is not None:
            e_t.data.masked_fill_(enc_masks.bool(), -float('inf'))
        alpha_t = F.softmax(e_t, dim=1)
        a_t = torch.squeeze(torch.bmm(torch.unsqueeze(alpha_t, 1), enc_hiddens), 1)
        U_t = torch.cat((a_t, dec_hidden), 1)
        V_t = self.combined_output_projection(U_t)
        O_t = self.dropout(torch.tanh(V_t))
        combined_output = O_t
        return (dec_state, combined_output, e_t)

    def generate_sent_masks(self, enc_hiddens: torch.Tensor, source_lengths: List[int]) -> torch.Tensor:
        enc_masks = torch.zeros(enc_hiddens.size(0), enc_hiddens.size(1), dtype=torch.float)
        for e_id, src_len in enumerate(source_lengths):
            enc_masks[e_id, src_len:] = 1
        return enc_masks.to(self.device)

    def beam_search(self, src_sent: List[str], beam_size: int=5, max_decoding_time_step: int=70) -> List[Hypothesis]:
        src_sents_var = self.vocab.src.to_input_tensor([src_sent], self.device)
        src_encodings, dec_init_vec = self.encode(src_sents_var, [len(src_sent)])
        src_encodings_att_linear = self.att_projection(src_encodings)
        h_tm1 = dec_init_vec
        att_tm1 = torch.zeros(1, self.hidden_size, device=self.device)
        eos_id = self.vocab.tgt['</s>']
        hypotheses = [['<s>']]
        hyp_scores = torch.zeros(len(hypotheses), dtype=torch.float, device=self.device)
        completed_hypotheses = []
        t = 0
        while len(completed_hypotheses) < beam_size and t < max_decoding_time_step:
            t += 1
            hyp_num = len(hypotheses)
            exp_src_encodings = src_encodings.expand(hyp_num, src_encodings.size(1), src_encodings.size(2))
            exp_src_encodings_att_linear = src_encodings_att_linear.expand(hyp_num, src_encodings_att_linear.size(1), src_encodings_att_linear.size(2))
            y_tm1 = torch.tensor([self.vocab.tgt[hyp[-1]] for hyp in hypotheses], dtype=torch.long, device=self.device)
            y_t_embed = self.model_embeddings.target(y_tm1)
            x = torch.cat([y_t_embed, att_tm1], dim=-1)
            (h_t, cell_t), att_t, _ = self.step(x, h_tm1, exp_src_encodings, exp_src_encodings_att_linear, enc_masks=None)
            log_p_t = F.log_softmax(self.target_vocab_projection(att_t), dim=-1)
            live_hyp_num = beam_size - len(completed_hypotheses)
            contiuating_hyp_scores = (hyp_scores.unsqueeze(1).expand_as(log_p_t) + log_p_t).view(-1)
            top_cand_hyp_scores, top_cand_hyp_pos = torch.topk(contiuating_hyp_scores, k=live_hyp_num)
            prev_hyp_ids = torch.div(top_cand_hyp_pos, len(self.vocab.tgt), rounding_mode='floor')
            hyp_word_ids = top_cand_hyp_pos % len(self.vocab.tgt)
            new_hypotheses = []
            live_hyp_ids = []
            new_hyp_scores = []
            for prev_hyp_id, hyp_word_id, cand_new_hyp_score in zip(prev_hyp_ids, hyp_word_ids, top_cand_hyp_scores):
                prev_hyp_id = prev_hyp_id.item()
                hyp_word_id = hyp_word_id.item()
                cand_new_hyp_score = cand_new_hyp_score.item()
                hyp_word = self.vocab.tgt.id2word[hyp_word_id]
                new_hyp_sent = hypotheses[prev_hyp_id] + [hyp_word]
                if hyp_word == '</s>':
                    completed_hypotheses.append(Hypothesis(value=new_hyp_sent[1:-1], score=cand_new_hyp_score))
                else:
                    new_hypotheses.append(new_hyp_sent)
                    live_hyp_ids.append(prev_hyp_id)
                    new_hyp_scores.append(cand_new_hyp_score)
            if len(completed_hypotheses) == beam_size:
                break
            live_hyp_ids = torch.tensor(live_hyp_ids, dtype=torch.long, device=self.device)
            h_tm1 = (h_t[live_hyp_ids], cell_t[live_hyp_ids])
            att_tm1 = att_t[live_hyp_ids]
            hypotheses = new_hypotheses
            hyp_scores = torch.tensor(new_hyp_scores, dtype=torch.float, device=self.device)
        if len(completed_hypotheses) == 0:
            completed_hypotheses.append(Hypothesis(value=hypotheses[0][1:], score=hyp_scores[0].item()))
        completed_hypotheses.sort(key=lambda hyp: hyp.score, reverse=True)
        return completed_hypotheses

    @property
    def device(self) -> torch.device:
        return self.model_embeddings.source.weight.device

    @staticmethod
    def load(model_path: str):
        params = torch.load(model_path, map_location=lambda storage, loc: storage)
        args = params['args']
        model = NMT(vocab=params['vocab'], **args)
        model.load_state_dict(params['state_dict'])
        return model



rng = np.random.RandomState(0)
src_words = ["el", "la", "gato", "perro", "come", "bebe", "agua", "pan", "rojo", "azul", "y"]
tgt_words = ["the", "cat", "dog", "eats", "drinks", "water", "bread", "red", "blue", "and"]
src_sents = [list(rng.choice(src_words, rng.randint(3, 9))) for _ in range(10)]
tgt_sents = [["<s>"] + list(rng.choice(tgt_words, rng.randint(3, 9))) + ["</s>"] for _ in range(10)]
order = sorted(range(10), key=lambda i: -len(src_sents[i]))
src_sents = [[str(w) for w in src_sents[i]] for i in order]
tgt_sents = [[str(w) for w in tgt_sents[i]] for i in order]
vocab = Vocab.build(src_sents, tgt_sents, 200, 1)
print(vocab)

model = NMT(embed_size=6, hidden_size=5, dropout_rate=0.0, vocab=vocab)
print(model)
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.tensor(rng.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=torch.float32))
print([(name, tuple(p.shape)) for name, p in model.named_parameters()])

lengths = [len(s) for s in src_sents]
src_padded = model.vocab.src.to_input_tensor(src_sents, device=model.device)
tgt_padded = model.vocab.tgt.to_input_tensor(tgt_sents, device=model.device)
print("src_padded", src_padded.shape, src_padded.dtype, model.device)
with torch.no_grad():
    enc_hiddens, dec_init = model.encode(src_padded, lengths)
    masks = model.generate_sent_masks(enc_hiddens, lengths)
    combined = model.decode(enc_hiddens, masks, dec_init, tgt_padded)
print("enc_hiddens", enc_hiddens.shape, round(enc_hiddens.sum().item(), 4))
print("dec_init", [tuple(t.shape) for t in dec_init], round(dec_init[0].sum().item(), 4),
      round(dec_init[1].sum().item(), 4))
print("masks", masks.dtype, masks.sum().item())
print("combined", combined.shape, round(combined.sum().item(), 4))

# The 2019 code's byte mask and float division, as PyTorch 2 reports them
e_t = torch.zeros(masks.shape)
try:
    e_t.data.masked_fill_(masks.byte(), -float("inf"))
except RuntimeError as e:
    print("RuntimeError:", e)
pos = torch.tensor([7, 12])
try:
    print([["a"], ["b"]][(pos / 5)[0]])
except TypeError as e:
    print("TypeError:", e)
print(pos / 5, torch.div(pos, 5, rounding_mode="floor"), pos % 5)

optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
model.train()
for it in range(4):
    optimizer.zero_grad()
    example_losses = -model(src_sents, tgt_sents)
    loss = example_losses.sum() / len(src_sents)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    print(it, "loss %.4f" % loss.item(), "grad norm %.4f" % grad_norm, tuple(example_losses.shape))

model.eval()
with torch.no_grad():
    hypotheses = model.beam_search(src_sents[-1], beam_size=3, max_decoding_time_step=6)
for h in hypotheses:
    print(" ".join(h.value), "%.3f" % h.score)

path = "/tmp/zacbi_cs224n_nmt_checkpoint.bin"
torch.save({"args": dict(embed_size=6, hidden_size=5, dropout_rate=0.0), "vocab": model.vocab,
            "state_dict": model.state_dict()}, path)
try:
    NMT.load(path)
except Exception as e:
    print("NMT.load:", type(e).__name__)
params = torch.load(path, map_location=lambda storage, loc: storage, weights_only=False)
restored = NMT(vocab=params["vocab"], **params["args"])
print(restored.load_state_dict(params["state_dict"]))
with torch.no_grad():
    print(torch.allclose(restored(src_sents, tgt_sents), model(src_sents, tgt_sents)))
