# ---------------------------------------------------------------------------------------------
# Neural-network functional ops (tapegrad.nn.functional): softmax, log_softmax, losses, dropout,
# embedding, layer_norm, one_hot, pad.
# ---------------------------------------------------------------------------------------------
