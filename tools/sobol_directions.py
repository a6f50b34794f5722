"""Derive the Sobol direction-number table tapegrad.quasirandom uses from PyTorch's (the
specification): PyTorch's SobolEngine uses Joe and Kuo's table new-joe-kuo-6.21201 (primitive
polynomial and initial direction numbers m_1..m_s of each dimension).  This reads the full
direction numbers PyTorch builds (torch._sobol_engine_initialize_state_), recovers each
dimension's polynomial degree s and coefficients from the recurrence they satisfy (a GF(2)
linear solve), checks that the polynomials are what tapegrad.quasirandom generates instead of
storing them (every primitive polynomial over GF(2) in ascending order), keeps the s initial
numbers, and writes tapegrad/data/sobol_directions.npz:

    initial_bits  uint8       m_1..m_s of every dimension, concatenated in dimension order and
                              bit-packed (tapegrad.quasirandom.pack_initial: m_k is odd and
                              below 2^k, so (m_k - 1) / 2 is stored in k - 1 bits); stored, not
                              deflated (random bits: deflate makes them larger)

    python tools/sobol_directions.py        # needs torch; rerun only to regenerate the table
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tapegrad.quasirandom import _degrees, _primitive_polynomials, pack_initial

MAXBIT = 30
OUT = Path(__file__).resolve().parent.parent / "tapegrad" / "data" / "sobol_directions.npz"


def recurrence_value(m: list, j: int, s: int, poly: int) -> int:
    """m_j from the s before it (Bratley and Fox): the polynomial's bits pick the terms."""
    value = m[j - s] ^ (m[j - s] << s)
    for k in range(1, s):
        if (poly >> (s - k)) & 1:
            value ^= m[j - k] << k
    return value


def solve_polynomial(m: list) -> int:
    """The lowest-degree polynomial whose recurrence reproduces m (bits of x^s ... 1)."""
    width = 64
    for s in range(1, MAXBIT):
        # Unknowns a_1..a_{s-1}: column k is the concatenation over j >= s of m_{j-k} << k.
        target = 0
        columns = [0] * (s - 1)
        for row, j in enumerate(range(s, MAXBIT)):
            target |= (m[j] ^ m[j - s] ^ (m[j - s] << s)) << (row * width)
            for k in range(1, s):
                columns[k - 1] |= (m[j - k] << k) << (row * width)
        # Gaussian elimination over GF(2) on the big-integer columns.
        pivots = []                      # (pivot bit, reduced column, unknown combination)
        for k, col in enumerate(columns):
            combo = 1 << k
            for bit, pcol, pcombo in pivots:
                if (col >> bit) & 1:
                    col ^= pcol
                    combo ^= pcombo
            if col:
                pivots.append((col.bit_length() - 1, col, combo))
        chosen = 0
        for bit, pcol, pcombo in pivots:
            if (target >> bit) & 1:
                target ^= pcol
                chosen ^= pcombo
        if target == 0:
            poly = (1 << s) | 1
            for k in range(1, s):
                if (chosen >> (k - 1)) & 1:
                    poly |= 1 << (s - k)
            assert all(recurrence_value(m, j, s, poly) == m[j] for j in range(s, MAXBIT))
            return poly
    raise ValueError("no polynomial reproduces these direction numbers")


def main() -> None:
    import torch
    dims = 21201
    state = torch.zeros(dims, MAXBIT, dtype=torch.long)
    torch._sobol_engine_initialize_state_(state, dims)
    m = (state.numpy() >> (MAXBIT - 1 - np.arange(MAXBIT))).tolist()
    polys, initial = [1], []
    for d in range(1, dims):
        poly = solve_polynomial(m[d])
        s = poly.bit_length() - 1
        polys.append(poly)
        initial.extend(m[d][:s])
    degrees = _degrees()
    generated = [1] + [int(p) for n in range(1, int(degrees.max()) + 1)
                       for p in _primitive_polynomials(n)]
    assert polys == generated, "the table's polynomials are not the primitive ones in order"
    np.savez(OUT, initial_bits=pack_initial(degrees, initial))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
