# ---------------------------------------------------------------------------------------------
# Shape ops: reshape, view, flatten, transpose, permute, squeeze, unsqueeze, expand, repeat, cat,
# stack, split, chunk, contiguous, clone.
# ---------------------------------------------------------------------------------------------
