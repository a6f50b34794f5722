# ---------------------------------------------------------------------------------------------
# More elementwise ops: math functions, activations, clamp, maximum/minimum, where, comparisons,
# dtype conversions.
# ---------------------------------------------------------------------------------------------
