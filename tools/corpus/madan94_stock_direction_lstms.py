"""Madan94/lstm-stock-prediction (a student's stock-direction predictor): backend/models/
attention_lstm.py (LSTM + view/transpose multi-head attention + Bahdanau attention through bmm),
backend/models/tcn_lstm.py (dilated Conv1d TCN with Chomp1d slicing, bidirectional LSTM, softmax
attention pooling), backend/models/transformer_lstm.py (multi-scale Conv1d fusion,
nn.MultiheadAttention blocks, regime heads stacked and mixed by a softmax), backend/losses/
asymmetric.py (BCELoss(reduction='none') weighted through torch.where of cached 0-d tensors) and
backend/training/trainer.py (Adam with weight_decay, ReduceLROnPlateau, clip_grad_norm_,
deepcopy of the best state_dict, load_state_dict). Ends with the repository's own slip: the
ensemble's forward returns a tensor where the caller expects a dict, and extras['confidence']
on that tensor is PyTorch's "too many indices" IndexError (a str key is a sequence to it).

Adapted: yfinance prices and indicators replaced by a numpy sequence table; parameters set from
a numpy stream; dropout 0 and shuffle off so the training is deterministic; small sizes and 3
epochs; ReduceLROnPlateau's verbose=True dropped (removed from PyTorch); logging to stdout.
"""
import copy
import logging
import math
import sys
from typing import Dict, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
logger = logging.getLogger(__name__)


class MultiHeadAttention(nn.Module):

    def __init__(self, hidden_size: int, num_heads: int=4):
        super(MultiHeadAttention, self).__init__()
        assert hidden_size % num_heads == 0, 'hidden_size must be divisible by num_heads'
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.fc_out = nn.Linear(hidden_size, hidden_size)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        batch_size, seq_len, _ = x.shape
        Q = self.query(x)
        K = self.key(x)
        V = self.value(x)
        Q = Q.view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        K = K.view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        V = V.view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / self.head_dim ** 0.5
        attention_weights = F.softmax(scores, dim=-1)
        attended = torch.matmul(attention_weights, V)
        attended = attended.transpose(1, 2).contiguous().view(batch_size, seq_len, self.hidden_size)
        output = self.fc_out(attended)
        avg_attention = attention_weights.mean(dim=1).mean(dim=1)
        return (output, avg_attention)


class AttentionLayer(nn.Module):

    def __init__(self, hidden_size: int):
        super(AttentionLayer, self).__init__()
        self.hidden_size = hidden_size
        self.attention_weights = nn.Linear(hidden_size, hidden_size)
        self.context_vector = nn.Linear(hidden_size, 1, bias=False)

    def forward(self, lstm_output: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        attention_scores = self.attention_weights(lstm_output)
        attention_scores = torch.tanh(attention_scores)
        attention_scores = self.context_vector(attention_scores)
        attention_scores = attention_scores.squeeze(-1)
        attention_weights = F.softmax(attention_scores, dim=1)
        context = torch.bmm(attention_weights.unsqueeze(1), lstm_output).squeeze(1)
        return (context, attention_weights)


class AttentionLSTM(nn.Module):

    def __init__(self, input_size: int, hidden_size: int=256, num_layers: int=3, dropout: float=0.3, use_multihead: bool=True, num_heads: int=4):
        super(AttentionLSTM, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.use_multihead = use_multihead
        self.lstm = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers, dropout=dropout if num_layers > 1 else 0, batch_first=True)
        self.lstm_norm = nn.LayerNorm(hidden_size)
        if use_multihead:
            self.attention = MultiHeadAttention(hidden_size, num_heads)
            self.attention_norm = nn.LayerNorm(hidden_size)
        else:
            self.attention = AttentionLayer(hidden_size)
        self.context_attention = AttentionLayer(hidden_size)
        self.fc = nn.Sequential(nn.Linear(hidden_size, hidden_size // 2), nn.LayerNorm(hidden_size // 2), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden_size // 2, hidden_size // 4), nn.LayerNorm(hidden_size // 4), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden_size // 4, 1), nn.Sigmoid())

    def forward(self, x: torch.Tensor, return_attention: bool=False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        lstm_out, _ = self.lstm(x)
        lstm_out = self.lstm_norm(lstm_out)
        if self.use_multihead:
            attended_out, attention_weights = self.attention(lstm_out)
            lstm_out = self.attention_norm(lstm_out + attended_out)
        context, final_attention_weights = self.context_attention(lstm_out)
        output = self.fc(context)
        if return_attention:
            return (output, final_attention_weights)
        return (output, None)


class TemporalBlock(nn.Module):

    def __init__(self, n_inputs: int, n_outputs: int, kernel_size: int, stride: int, dilation: int, padding: int, dropout: float=0.2):
        super(TemporalBlock, self).__init__()
        self.conv1 = nn.Conv1d(n_inputs, n_outputs, kernel_size, stride=stride, padding=padding, dilation=dilation)
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)
        self.conv2 = nn.Conv1d(n_outputs, n_outputs, kernel_size, stride=stride, padding=padding, dilation=dilation)
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1, self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        self.init_weights()

    def init_weights(self):
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class Chomp1d(nn.Module):

    def __init__(self, chomp_size: int):
        super(Chomp1d, self).__init__()
        self.chomp_size = chomp_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :, :-self.chomp_size].contiguous()


class TCN(nn.Module):

    def __init__(self, num_inputs: int, num_channels: list, kernel_size: int=2, dropout: float=0.2):
        super(TCN, self).__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2 ** i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1, dilation=dilation_size, padding=(kernel_size - 1) * dilation_size, dropout=dropout)]
        self.network = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


class TCNLSTM(nn.Module):

    def __init__(self, input_size: int, tcn_channels: list=[64, 128, 256], lstm_hidden_size: int=256, lstm_num_layers: int=2, dropout: float=0.3, kernel_size: int=3):
        super(TCNLSTM, self).__init__()
        self.tcn = TCN(num_inputs=input_size, num_channels=tcn_channels, kernel_size=kernel_size, dropout=dropout)
        tcn_output_size = tcn_channels[-1]
        self.lstm = nn.LSTM(input_size=tcn_output_size, hidden_size=lstm_hidden_size, num_layers=lstm_num_layers, dropout=dropout if lstm_num_layers > 1 else 0, batch_first=True, bidirectional=True)
        self.attention = nn.Sequential(nn.Linear(lstm_hidden_size * 2, lstm_hidden_size), nn.Tanh(), nn.Linear(lstm_hidden_size, 1))
        self.output_layers = nn.Sequential(nn.Linear(lstm_hidden_size * 2, lstm_hidden_size), nn.LayerNorm(lstm_hidden_size), nn.GELU(), nn.Dropout(dropout), nn.Linear(lstm_hidden_size, lstm_hidden_size // 2), nn.LayerNorm(lstm_hidden_size // 2), nn.GELU(), nn.Dropout(dropout * 0.5), nn.Linear(lstm_hidden_size // 2, 1), nn.Sigmoid())

    def forward(self, x: torch.Tensor, return_attention: bool=False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        batch_size, seq_len, _ = x.size()
        x_tcn = x.transpose(1, 2)
        tcn_out = self.tcn(x_tcn)
        tcn_out = tcn_out.transpose(1, 2)
        lstm_out, _ = self.lstm(tcn_out)
        attention_scores = self.attention(lstm_out)
        attention_weights = F.softmax(attention_scores, dim=1)
        context = (attention_weights * lstm_out).sum(dim=1)
        output = self.output_layers(context)
        if return_attention:
            attention_weights = attention_weights.squeeze(-1)
            return (output, attention_weights)
        return (output, None)


class TransformerEncoderBlock(nn.Module):

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float=0.1):
        super(TransformerEncoderBlock, self).__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        attn_output, _ = self.self_attn(x, x, x)
        x = x + self.dropout1(attn_output)
        x = self.norm1(x)
        ff_output = self.linear2(self.dropout(F.relu(self.linear1(x))))
        x = x + self.dropout2(ff_output)
        x = self.norm2(x)
        return x


class TemporalFusionBlock(nn.Module):

    def __init__(self, input_size: int, hidden_size: int, dropout: float=0.3):
        super(TemporalFusionBlock, self).__init__()
        self.conv_short = nn.Conv1d(input_size, hidden_size, kernel_size=3, padding=1)
        self.conv_medium = nn.Conv1d(input_size, hidden_size, kernel_size=5, padding=2)
        self.conv_long = nn.Conv1d(input_size, hidden_size, kernel_size=7, padding=3)
        self.fusion = nn.Linear(hidden_size * 3, hidden_size)
        self.norm = nn.LayerNorm(hidden_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_t = x.transpose(1, 2)
        short = F.relu(self.conv_short(x_t))
        medium = F.relu(self.conv_medium(x_t))
        long = F.relu(self.conv_long(x_t))
        short = short.transpose(1, 2)
        medium = medium.transpose(1, 2)
        long = long.transpose(1, 2)
        combined = torch.cat([short, medium, long], dim=-1)
        fused = self.fusion(combined)
        fused = self.norm(fused)
        fused = self.dropout(fused)
        return fused


class AdvancedTransformerLSTM(nn.Module):

    def __init__(self, input_size: int, hidden_size: int=512, num_transformer_layers: int=4, num_lstm_layers: int=3, num_heads: int=8, dim_feedforward: int=2048, dropout: float=0.3):
        super(AdvancedTransformerLSTM, self).__init__()
        self.hidden_size = hidden_size
        self.temporal_fusion = TemporalFusionBlock(input_size, hidden_size, dropout)
        self.transformer_layers = nn.ModuleList([TransformerEncoderBlock(hidden_size, num_heads, dim_feedforward, dropout) for _ in range(num_transformer_layers)])
        self.lstm = nn.LSTM(input_size=hidden_size, hidden_size=hidden_size, num_layers=num_lstm_layers, dropout=dropout if num_lstm_layers > 1 else 0, batch_first=True, bidirectional=True)
        self.lstm_norm = nn.LayerNorm(hidden_size * 2)
        self.attention_query = nn.Linear(hidden_size * 2, hidden_size)
        self.attention_key = nn.Linear(hidden_size * 2, hidden_size)
        self.attention_value = nn.Linear(hidden_size * 2, hidden_size)
        self.regime_detector = nn.Sequential(nn.Linear(hidden_size * 2, 64), nn.ReLU(), nn.Dropout(dropout), nn.Linear(64, 3), nn.Softmax(dim=-1))
        self.pred_heads = nn.ModuleList([nn.Sequential(nn.Linear(hidden_size, hidden_size // 2), nn.LayerNorm(hidden_size // 2), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden_size // 2, hidden_size // 4), nn.LayerNorm(hidden_size // 4), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden_size // 4, 1), nn.Sigmoid()) for _ in range(3)])
        self.confidence = nn.Sequential(nn.Linear(hidden_size, 64), nn.ReLU(), nn.Dropout(dropout), nn.Linear(64, 1), nn.Sigmoid())

    def forward(self, x: torch.Tensor, return_attention: bool=False, return_confidence: bool=False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        batch_size, seq_len, _ = x.shape
        x = self.temporal_fusion(x)
        for transformer in self.transformer_layers:
            x = transformer(x)
        lstm_out, _ = self.lstm(x)
        lstm_out = self.lstm_norm(lstm_out)
        Q = self.attention_query(lstm_out)
        K = self.attention_key(lstm_out)
        V = self.attention_value(lstm_out)
        attention_scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.hidden_size)
        attention_weights = F.softmax(attention_scores, dim=-1)
        context = torch.matmul(attention_weights, V)
        final_hidden = context[:, -1, :]
        regime_probs = self.regime_detector(lstm_out[:, -1, :])
        regime_predictions = []
        for head in self.pred_heads:
            regime_predictions.append(head(final_hidden))
        regime_predictions = torch.stack(regime_predictions, dim=1)
        output = torch.sum(regime_predictions.squeeze(-1) * regime_probs, dim=1, keepdim=True)
        pred_confidence = self.confidence(final_hidden)
        extras = {}
        if return_attention:
            extras['attention'] = attention_weights.mean(dim=1).mean(dim=1)
        if return_confidence:
            extras['confidence'] = pred_confidence
            extras['regime'] = regime_probs
        if extras:
            return (output, extras)
        return (output, None)


class EnsembleTransformerLSTM(nn.Module):

    def __init__(self, input_size: int, num_models: int=5, hidden_size: int=512, dropout: float=0.3):
        super(EnsembleTransformerLSTM, self).__init__()
        configs = [{'num_transformer_layers': 4, 'num_lstm_layers': 3, 'num_heads': 8}, {'num_transformer_layers': 3, 'num_lstm_layers': 4, 'num_heads': 4}, {'num_transformer_layers': 6, 'num_lstm_layers': 2, 'num_heads': 16}, {'num_transformer_layers': 2, 'num_lstm_layers': 4, 'num_heads': 4}, {'num_transformer_layers': 4, 'num_lstm_layers': 2, 'num_heads': 8}]
        self.models = nn.ModuleList([AdvancedTransformerLSTM(input_size=input_size, hidden_size=hidden_size, dropout=dropout, **config) for config in configs[:num_models]])
        self.ensemble_weights = nn.Parameter(torch.ones(num_models) / num_models)

    def forward(self, x: torch.Tensor, return_confidence: bool=False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        predictions = []
        confidences = []
        for model in self.models:
            pred, extras = model(x, return_confidence=return_confidence)
            predictions.append(pred)
            if return_confidence and extras:
                confidences.append(extras['confidence'])
        predictions = torch.stack(predictions, dim=1)
        weights = F.softmax(self.ensemble_weights, dim=0)
        output = torch.sum(predictions.squeeze(-1) * weights, dim=1, keepdim=True)
        if return_confidence and confidences:
            avg_confidence = torch.stack(confidences, dim=1).mean(dim=1)
            return (output, avg_confidence)
        return (output, None)


class AsymmetricDirectionalLoss(nn.Module):

    def __init__(self, upward_penalty: float=2.0, downward_penalty: float=1.0):
        super(AsymmetricDirectionalLoss, self).__init__()
        self.upward_penalty = upward_penalty
        self.downward_penalty = downward_penalty
        self.bce = nn.BCELoss(reduction='none')
        self._upward_penalty_tensor = None
        self._downward_penalty_tensor = None

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if predictions.dim() > 1:
            predictions = predictions.view(-1)
        elif predictions.dim() == 0:
            predictions = predictions.unsqueeze(0)
        targets = targets.float()
        if targets.dim() == 0:
            targets = targets.unsqueeze(0)
        if predictions.shape != targets.shape:
            min_len = min(len(predictions), len(targets))
            predictions = predictions[:min_len]
            targets = targets[:min_len]
        bce_loss = self.bce(predictions, targets)
        if self._upward_penalty_tensor is None or self._upward_penalty_tensor.device != predictions.device:
            self._upward_penalty_tensor = torch.tensor(self.upward_penalty, device=predictions.device, dtype=predictions.dtype)
            self._downward_penalty_tensor = torch.tensor(self.downward_penalty, device=predictions.device, dtype=predictions.dtype)
        weights = torch.where(targets == 1, self._upward_penalty_tensor, self._downward_penalty_tensor)
        weighted_loss = weights * bce_loss
        return weighted_loss.mean()


def train_model(model: nn.Module, X_train: np.ndarray, y_train: np.ndarray, X_val: np.ndarray, y_val: np.ndarray, loss_fn: nn.Module, num_epochs: int=100, batch_size: int=32, learning_rate: float=0.0005, device: str='cpu', return_attention: bool=False, use_scheduler: bool=True, scheduler_patience: int=5, early_stopping_patience: int=15, gradient_clip: float=1.0) -> Tuple[nn.Module, Dict]:
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=learning_rate, weight_decay=1e-05)
    if use_scheduler:
        scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=scheduler_patience, min_lr=1e-06)
    X_train_t = torch.FloatTensor(X_train).to(device)
    y_train_t = torch.LongTensor(y_train).to(device)
    X_val_t = torch.FloatTensor(X_val).to(device)
    y_val_t = torch.LongTensor(y_val).to(device)
    train_dataset = TensorDataset(X_train_t, y_train_t)
    train_loader = DataLoader(train_dataset, batch_size=batch_size, shuffle=False, drop_last=True)
    history = {'train_loss': [], 'val_loss': [], 'val_accuracy': [], 'learning_rates': []}
    best_val_loss = float('inf')
    best_model_state = None
    patience_counter = 0
    for epoch in range(num_epochs):
        model.train()
        train_loss = 0.0
        for X_batch, y_batch in train_loader:
            optimizer.zero_grad()
            if return_attention:
                output, _ = model(X_batch, return_attention=True)
            else:
                output, _ = model(X_batch, return_attention=False)
            loss = loss_fn(output, y_batch)
            loss.backward()
            if gradient_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clip)
            optimizer.step()
            train_loss += loss.item()
        train_loss /= len(train_loader)
        model.eval()
        with torch.no_grad():
            if return_attention:
                val_output, _ = model(X_val_t, return_attention=True)
            else:
                val_output, _ = model(X_val_t, return_attention=False)
            val_loss = loss_fn(val_output, y_val_t).item()
            predictions = (val_output.squeeze() > 0.5).long()
            val_accuracy = (predictions == y_val_t).float().mean().item()
        current_lr = optimizer.param_groups[0]['lr']
        if use_scheduler:
            scheduler.step(val_loss)
        history['train_loss'].append(train_loss)
        history['val_loss'].append(val_loss)
        history['val_accuracy'].append(val_accuracy)
        history['learning_rates'].append(current_lr)
        if val_loss < best_val_loss:
            best_val_loss = val_loss
            best_model_state = copy.deepcopy(model.state_dict())
            patience_counter = 0
        else:
            patience_counter += 1
            if patience_counter >= early_stopping_patience:
                logger.info(f'Early stopping at epoch {epoch + 1}')
                break
        if (epoch + 1) % 10 == 0:
            logger.info(f'Epoch {epoch + 1}/{num_epochs} - Train Loss: {train_loss:.4f}, Val Loss: {val_loss:.4f}, Val Acc: {val_accuracy:.4f}, LR: {current_lr:.6f}')
    if best_model_state is not None:
        model.load_state_dict(best_model_state)
        logger.info(f'Loaded best model with val_loss: {best_val_loss:.4f}')
    return (model, history)

def set_from_numpy(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(np.asarray(rng.standard_normal(tuple(p.shape)) * 0.1,
                                                dtype=np.float32)))
    return model


rng = np.random.default_rng(5)
F_IN, T = 6, 12
X = rng.standard_normal((80, T, F_IN)).astype(np.float32)
y = (X[:, -1, 0] + 0.3 * X[:, -2, 1] > 0).astype(np.int64)
Xtr, ytr, Xva, yva = X[:64], y[:64], X[64:], y[64:]
loss_fn = AsymmetricDirectionalLoss(upward_penalty=2.0, downward_penalty=1.0)
builders = [
    ("AttentionLSTM", lambda: AttentionLSTM(F_IN, hidden_size=16, num_layers=2, num_heads=4, dropout=0.0)),
    ("AttentionLSTM single-head", lambda: AttentionLSTM(F_IN, hidden_size=16, num_layers=1, use_multihead=False, dropout=0.0)),
    ("TCNLSTM", lambda: TCNLSTM(F_IN, tcn_channels=[8, 16], lstm_hidden_size=16, lstm_num_layers=2, dropout=0.0)),
    ("AdvancedTransformerLSTM", lambda: AdvancedTransformerLSTM(F_IN, hidden_size=16, num_transformer_layers=1, num_lstm_layers=2, num_heads=4, dim_feedforward=32, dropout=0.0)),
]
for k, (name, build) in enumerate(builders):
    model = set_from_numpy(build(), k)
    print("==", name, sum(p.numel() for p in model.parameters()))
    model.eval()
    with torch.no_grad():
        out, attn = model(torch.FloatTensor(Xva[:4]), return_attention=True)
    if isinstance(attn, dict):
        attn = attn["attention"]
    print(tuple(out.shape), out.dtype, out.squeeze().numpy().round(5).tolist())
    print(tuple(attn.shape), attn[0].numpy().round(4).tolist())
    print("loss", round(loss_fn(out, torch.LongTensor(yva[:4])).item(), 6))
    model, hist = train_model(model, Xtr, ytr, Xva, yva, loss_fn, num_epochs=3, batch_size=16,
                              learning_rate=1e-3)
    print({key: [round(v, 4) for v in vs] for key, vs in hist.items()})

ensemble = set_from_numpy(EnsembleTransformerLSTM(F_IN, num_models=2, hidden_size=16, dropout=0.0), 9)
ensemble.eval()
with torch.no_grad():
    out, extras = ensemble(torch.FloatTensor(Xva[:4]), return_confidence=True)
print("ensemble", out.squeeze().numpy().round(5).tolist(), tuple(extras.shape))
try:
    extras["confidence"]
except Exception as e:
    print(type(e).__name__, e)
