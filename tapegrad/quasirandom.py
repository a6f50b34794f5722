"""torch.quasirandom: the Sobol low-discrepancy sequence (SobolEngine).

Points are 30-bit binary fractions made in Gray-code order: point k+1 is point k with one
direction number per dimension XOR-ed in (the one at the position of the lowest zero bit of k).
The direction numbers are Joe and Kuo's (new-joe-kuo-6.21201, as PyTorch uses): each dimension's
initial numbers are read from tapegrad/data/sobol_directions.npz (made by
tools/sobol_directions.py); its primitive polynomial is not stored, since the table's are every
primitive polynomial over GF(2) in ascending order, found when first needed; the rest follow from
the polynomial's recurrence, so an unscrambled engine draws exactly PyTorch's points.
Scrambling (a random linear matrix scramble of the direction numbers and a random digital shift)
draws its bits from tapegrad's generators, so scrambled points differ from PyTorch's as every
random stream does.
"""
from __future__ import annotations as _annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

import tapegrad as _tg

__all__ = ["SobolEngine"]

_TABLE = Path(__file__).resolve().parent / "data" / "sobol_directions.npz"
_MAXDEGREE = 18         # dimension 21200's polynomial has degree 18


def _prime_factors(n: int) -> list:
    factors, p = [], 2
    while p * p <= n:
        if n % p == 0:
            factors.append(p)
            while n % p == 0:
                n //= p
        p += 1
    return factors + ([n] if n > 1 else [])


@lru_cache(maxsize=1)
def _degrees() -> np.ndarray:
    """The degree of each dimension's polynomial.  Joe and Kuo's table gives dimension 0 none and
    then every primitive polynomial over GF(2) in ascending order, phi(2^n - 1) / n of degree n
    (tools/sobol_directions.py checks this against PyTorch's table)."""
    counts = []
    for n in range(1, _MAXDEGREE + 1):
        totient = (1 << n) - 1
        for q in _prime_factors(totient):
            totient -= totient // q
        counts.append(totient // n)
    return np.concatenate(([0], np.repeat(np.arange(1, _MAXDEGREE + 1), counts)))


# _SPREAD[b]: the byte b with a zero bit after each bit (squaring a polynomial over GF(2)).
_SPREAD = np.zeros(256, dtype=np.int64)
for _bit in range(8):
    _SPREAD |= ((np.arange(256) >> _bit) & 1) << (2 * _bit)


def _reduce(r: np.ndarray, p: np.ndarray, n: int, top: int) -> np.ndarray:
    """r mod p elementwise over GF(2), p of degree n, r below 2^(top + 1)."""
    for i in range(top, n - 1, -1):
        r ^= ((r >> i) & 1) * (p << (i - n))
    return r


def _square(r: np.ndarray, p: np.ndarray, n: int) -> np.ndarray:
    spread = _SPREAD[r & 255] | (_SPREAD[(r >> 8) & 255] << 16) | (_SPREAD[(r >> 16) & 255] << 32)
    return _reduce(spread, p, n, 2 * n - 2)


def _x_power(e: int, p: np.ndarray, n: int) -> np.ndarray:
    """x^e mod p elementwise (left to right: square, then times x for a one bit)."""
    r = np.ones_like(p)
    for bit in bin(e)[2:]:
        r = _square(r, p, n)
        if bit == "1":
            r = _reduce(r << 1, p, n, n)
    return r


@lru_cache(maxsize=None)
def _primitive_polynomials(n: int) -> np.ndarray:
    """The primitive polynomials of degree n over GF(2) in ascending order, as bits (x^n ... 1):
    those in which x has order 2^n - 1, i.e. x^(2^n) = x and x^((2^n - 1) / q) != 1 for each
    prime q dividing 2^n - 1 (a reducible polynomial's x has a smaller order)."""
    assert 1 <= n <= _MAXDEGREE             # the squares' 2n - 1 bits fit in 64
    if n == 1:
        return np.array([3], dtype=np.int64)
    p = (1 << n) | 1 | (np.arange(1 << (n - 1), dtype=np.int64) << 1)
    r = np.full_like(p, 2)
    for _ in range(n):
        r = _square(r, p, n)
    p = p[r == 2]
    order = (1 << n) - 1
    for q in _prime_factors(order):
        if q < order:
            p = p[_x_power(order // q, p, n) != 1]
    return p


def _initial_widths(degrees: np.ndarray) -> np.ndarray:
    """Bits stored per initial number, dimension by dimension: m_k (k = 1..s, s the degree of the
    dimension's polynomial) is odd and below 2^k, so (m_k - 1) / 2 takes k - 1 bits."""
    degrees = np.asarray(degrees[1:], dtype=np.int64)
    starts = np.cumsum(degrees) - degrees            # dimension 0 has no initial numbers
    return np.arange(int(degrees.sum()), dtype=np.int64) - np.repeat(starts, degrees)


def pack_initial(degrees: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """The initial numbers as the table stores them: (m - 1) / 2 in _initial_widths bits each,
    least significant bit first, concatenated and packed into bytes (a third of the size of
    uint32 words deflated, which matters in the wheel: 0.35 instead of 0.65 MB)."""
    initial = np.asarray(initial, dtype=np.int64)
    widths = _initial_widths(degrees)
    assert widths.size == initial.size and (initial % 2 == 1).all()
    values, starts = (initial - 1) >> 1, np.cumsum(widths) - widths
    bits = np.zeros(int(widths.sum()), dtype=np.uint8)
    for b in range(int(widths.max())):
        has = widths > b
        bits[starts[has] + b] = (values[has] >> b) & 1
    return np.packbits(bits, bitorder="little")


def _unpack_initial(degrees: np.ndarray, packed: np.ndarray) -> np.ndarray:
    widths = _initial_widths(degrees)
    starts = np.cumsum(widths) - widths
    # A value spans at most 3 bytes (width <= 17 bits, <= 7 bits into its first byte).
    assert widths.max() + 7 <= 24
    data = np.concatenate((packed, np.zeros(2, dtype=np.uint8))).astype(np.int64)
    first = starts >> 3
    window = data[first] | (data[first + 1] << 8) | (data[first + 2] << 16)
    return 2 * ((window >> (starts & 7)) & ((1 << widths) - 1)) + 1


@lru_cache(maxsize=1)
def _table():
    """(degree of each dimension's polynomial, offset of its initial numbers, the numbers)."""
    degrees = _degrees()
    with np.load(_TABLE) as data:
        initial = _unpack_initial(degrees, data["initial_bits"])
    offsets = np.concatenate(([0], np.cumsum(degrees)))
    return degrees, offsets, initial


def _direction_numbers(dimension: int, maxbit: int) -> np.ndarray:
    """(dimension, maxbit) int64: v[d, j] = m_j << (maxbit - 1 - j), m from the table and the
    Bratley-Fox recurrence m_j = 2 a_1 m_{j-1} ^ ... ^ 2^s m_{j-s} ^ m_{j-s}."""
    degrees, offsets, initial = _table()
    first_of_degree = np.searchsorted(degrees, np.arange(_MAXDEGREE + 1))
    m = np.ones((dimension, maxbit), dtype=np.int64)      # dimension 0: all ones (van der Corput)
    for d in range(1, dimension):
        s = int(degrees[d])
        p = int(_primitive_polynomials(s)[d - first_of_degree[s]])
        row = [int(v) for v in initial[offsets[d]:offsets[d] + s]]
        for j in range(s, maxbit):
            value = row[j - s] ^ (row[j - s] << s)
            for k in range(1, s):
                if (p >> (s - k)) & 1:
                    value ^= row[j - k] << k
            row.append(value)
        m[d] = row[:maxbit]
    return m << (maxbit - 1 - np.arange(maxbit))


def _lowest_zero_bits(start: int, n: int) -> np.ndarray:
    """For k = start .. start + n - 1: the position of k's lowest zero bit."""
    k = np.arange(start, start + n, dtype=np.int64)
    return np.log2(~k & (k + 1)).astype(np.int64)        # a power of two: log2 is exact


class SobolEngine:
    """A generator of Sobol points in [0, 1)^dimension.

    Args:
        dimension (int): the dimensionality of the points, 1 to 21201
        scramble (bool): scramble the sequence (a random linear matrix scramble and digital
            shift) (default: False)
        seed (int, optional): the seed of the scrambling's random bits

    Examples
    --------
    >>> engine = tapegrad.quasirandom.SobolEngine(dimension=2)
    >>> engine.draw(4)
    tensor([[0.0000, 0.0000],
            [0.5000, 0.5000],
            [0.7500, 0.2500],
            [0.2500, 0.7500]])
    """

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self._directions = _direction_numbers(dimension, self.MAXBIT)
        self._shift = np.zeros(dimension, dtype=np.int64)
        if scramble:
            self._scramble()
        self._quasi = self._shift.copy()
        # Computed as PyTorch computes it: an integer tensor divided in the default dtype.
        self._first_point = _tg.tensor(self._quasi) / 2 ** self.MAXBIT
        self._first_point = self._first_point.reshape(1, -1)
        self.num_generated = 0

    @property
    def sobolstate(self):
        """The direction numbers, (dimension, 30) int64, as PyTorch's attribute."""
        return _tg.tensor(self._directions)

    @property
    def shift(self):
        """The digital shift, (dimension,) int64 (zeros unless scrambled)."""
        return _tg.tensor(self._shift)

    @property
    def quasi(self):
        """The integer state: the last point drawn, times 2**30."""
        return _tg.tensor(self._quasi)

    def _scramble(self) -> None:
        generator = _tg.Generator()
        if self.seed is not None:
            generator.manual_seed(self.seed)
        else:
            generator.seed()
        bits = _tg.randint(2, (self.dimension, self.MAXBIT), generator=generator).numpy()
        self._shift = bits.astype(np.int64) @ (1 << np.arange(self.MAXBIT, dtype=np.int64))
        lower = _tg.randint(2, (self.dimension, self.MAXBIT, self.MAXBIT),
                            generator=generator).numpy().astype(np.int64)
        lower = np.tril(lower)
        lower[:, np.arange(self.MAXBIT), np.arange(self.MAXBIT)] = 1
        # Bit p (counted from the most significant) of a scrambled direction number is the
        # parity of row p of the unit lower-triangular matrix with the number's bits: each bit
        # mixes in the more significant ones.
        msb_first = (self._directions[:, :, None] >> (self.MAXBIT - 1 - np.arange(self.MAXBIT))) & 1
        mixed = np.einsum("dpk,djk->djp", lower, msb_first) & 1
        self._directions = mixed @ (1 << (self.MAXBIT - 1 - np.arange(self.MAXBIT,
                                                                      dtype=np.int64)))

    def _advance(self, n: int, counter_start: int) -> np.ndarray:
        """The next n integer points (n, dimension), counting Gray-code steps from
        counter_start; the state moves to the last one."""
        if n <= 0:
            return np.zeros((0, self.dimension), dtype=np.int64)
        steps = self._directions[:, _lowest_zero_bits(counter_start, n)].T
        points = np.bitwise_xor.accumulate(steps, axis=0) ^ self._quasi
        self._quasi = points[-1].copy()
        return points

    def draw(self, n: int = 1, out=None, dtype=None):
        """The next ``n`` points, (n, dimension), in ``dtype`` (default: the default dtype)."""
        dtype = _tg.get_default_dtype() if dtype is None else dtype
        np_dtype = _tg.empty(0, dtype=dtype).numpy().dtype
        if self.num_generated == 0:
            rest = self._advance(n - 1, 0)
            values = np.concatenate((self._first_point.to(dtype).numpy(),
                                     (rest * 2.0 ** -self.MAXBIT).astype(np_dtype)))
            values = values[:max(n, 1)] if n >= 1 else values[:0]
        else:
            values = (self._advance(n, self.num_generated - 1)
                      * 2.0 ** -self.MAXBIT).astype(np_dtype)
        self.num_generated += n
        result = _tg.tensor(values, dtype=dtype)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out=None, dtype=None):
        """The next 2**m points; the total drawn must stay a power of two (the balance
        properties of Sobol' points hold for such counts)."""
        n = 2 ** m
        total_n = self.num_generated + n
        if total_n & (total_n - 1) != 0:
            raise ValueError("The balance properties of Sobol' points require n to be a power "
                             f"of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total_n}. If "
                             "you still want to do this, please use 'SobolEngine.draw()' "
                             "instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> "SobolEngine":
        """Back to the first point."""
        self._quasi = self._shift.copy()
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> "SobolEngine":
        """Skip the next ``n`` points."""
        if self.num_generated == 0:
            self._advance(n - 1, 0)
        else:
            self._advance(n, self.num_generated - 1)
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        settings = [f"dimension={self.dimension}"]
        if self.scramble:
            settings.append("scramble=True")
        if self.seed is not None:
            settings.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(settings)})"
