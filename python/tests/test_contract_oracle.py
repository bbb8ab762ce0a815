"""The NumPy port of the contract is itself checked before it judges the library."""

import numpy as np

import contract_oracle as O


def test_philox_known_answers():
    # Random123's known-answer vectors for philox4x32-10.
    zero = O.philox4x32_10([0], [0], [0], [0], [0], [0])
    assert [int(w[0]) for w in zero] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = O.philox4x32_10(*([[0xFFFFFFFF]] * 6))
    assert [int(w[0]) for w in ones] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def test_log_f32_within_one_ulp():
    x = np.random.default_rng(0).uniform(1e-30, 1e30, 20000).astype(np.float32)
    x = np.concatenate([x, np.float32([1.0, 2.0, 0.5, 2.0 ** -24, 1 - 2.0 ** -24])])
    got = O.log_f32(x).astype(np.float64)
    ref = np.log(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    ulp[ulp == 0] = np.spacing(np.float32(0))
    assert np.all(np.abs(got - ref) <= 1.0 * np.maximum(ulp, 1e-45))
    assert O.log_f32(np.float32([1.0]))[0] == 0.0


def test_fma32_is_single_rounding():
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(5000).astype(np.float32) for _ in range(3))
    got = O.fma32(a, b, c)
    from fractions import Fraction

    for i in range(0, 5000, 97):  # spot-check against exact rationals
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        lo = np.float32(float(exact))
        cands = [lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))]
        best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.float32(v).view(np.uint32)) & 1))
        assert got[i] == best


def test_min_p_log_rounds_once():
    assert O.ln_min_p(1.0) == 0.0
    assert O.ln_min_p(0.0) == -np.inf
    assert abs(float(O.ln_min_p(0.1)) - np.log(np.float64(np.float32(0.1)))) < 1e-7
