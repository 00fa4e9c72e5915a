"""CRF against brute force over every tag sequence (tiny random cases), under
the TensorFlow backend and, in a subprocess, the JAX backend."""

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from tfbert.layers.crf import CRF, FORBIDDEN, compact, iob2_constraints

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _crf(seed, constrained):
    rng = np.random.default_rng(seed)
    allowed, allowed_start = (iob2_constraints(LABELS) if constrained
                              else (None, None))
    crf = CRF(len(LABELS), allowed, allowed_start)
    crf.build((None, None, len(LABELS)))
    crf.transitions.assign(rng.normal(size=(5, 5)).astype(np.float32))
    crf.start_scores.assign(rng.normal(size=5).astype(np.float32))
    crf.end_scores.assign(rng.normal(size=5).astype(np.float32))
    return crf, allowed, allowed_start


def _score(crf, emissions, tags, allowed, allowed_start, use_start):
    """Independent path score; None if the path is forbidden."""
    trans = np.asarray(crf.transitions)
    if allowed is not None:
        if any(not allowed[a, b] for a, b in zip(tags, tags[1:])):
            return None
        if use_start and not allowed_start[tags[0]]:
            return None
    total = np.asarray(crf.start_scores)[tags[0]] + np.asarray(crf.end_scores)[tags[-1]]
    total += sum(emissions[t, tag] for t, tag in enumerate(tags))
    total += sum(trans[a, b] for a, b in zip(tags, tags[1:]))
    return total


@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_loss_and_viterbi_equal_brute_force(seed, constrained):
    rng = np.random.default_rng(100 + seed)
    crf, allowed, allowed_start = _crf(seed, constrained)
    batch, n = 3, 4
    emissions = rng.normal(scale=2.0, size=(batch, n, 5)).astype(np.float32)
    lengths = np.array([4, 2, 1])
    gold = rng.integers(0, 5, size=(batch, n))
    if constrained:
        gold[:] = [[1, 2, 0, 3], [3, 4, 0, 0], [2, 0, 0, 0]]  # valid inside
    log_likelihood = np.asarray(crf.log_likelihood(emissions, gold, lengths))
    decoded = np.asarray(crf.decode(emissions, lengths))
    for b in range(batch):
        length = lengths[b]
        paths = list(itertools.product(range(5), repeat=length))
        loss_scores = [_score(crf, emissions[b], p, allowed, allowed_start,
                              use_start=False) for p in paths]
        loss_scores = np.array([s for s in loss_scores if s is not None])
        log_z = np.logaddexp.reduce(loss_scores)
        expected = _score(crf, emissions[b], tuple(gold[b, :length]),
                          allowed, allowed_start, use_start=False) - log_z
        np.testing.assert_allclose(log_likelihood[b], expected, rtol=1e-5,
                                   atol=1e-4)
        decode_scores = [_score(crf, emissions[b], p, allowed, allowed_start,
                                use_start=True) for p in paths]
        best = max((s, p) for s, p in zip(decode_scores, paths)
                   if s is not None)[1]
        assert tuple(decoded[b, :length]) == best
        assert (decoded[b, length:] == 0).all()


def test_constrained_decoding_never_emits_invalid_moves():
    allowed, allowed_start = iob2_constraints(LABELS)
    crf, _, _ = _crf(7, True)
    rng = np.random.default_rng(7)
    # Emissions that strongly prefer I- tags everywhere.
    emissions = rng.normal(size=(64, 9, 5)).astype(np.float32)
    emissions[..., [2, 4]] += 5.0
    lengths = rng.integers(1, 10, size=64)
    decoded = np.asarray(crf.decode(emissions, lengths))
    for row, length in zip(decoded, lengths):
        tags = row[:length]
        assert allowed_start[tags[0]]
        assert all(allowed[a, b] for a, b in zip(tags, tags[1:]))


def test_iob2_constraints():
    allowed, allowed_start = iob2_constraints(LABELS)
    names = {(LABELS[a], LABELS[b]) for a, b in zip(*np.nonzero(~allowed))}
    assert names == {("O", "I-PER"), ("O", "I-LOC"), ("B-LOC", "I-PER"),
                     ("I-LOC", "I-PER"), ("B-PER", "I-LOC"),
                     ("I-PER", "I-LOC")}
    assert list(allowed_start) == [True, True, False, True, False]


def test_a_forbidden_move_makes_a_path_improbable():
    constrained, _, _ = _crf(3, True)
    free, _, _ = _crf(3, False)  # the same weights, no constraints
    emissions = np.random.default_rng(3).normal(size=(1, 3, 5)).astype(
        np.float32)
    path = np.array([[0, 2, 2]])  # O -> I-PER is not valid IOB2
    lengths = np.array([3])
    free_ll = np.asarray(free.log_likelihood(emissions, path, lengths))[0]
    constrained_ll = np.asarray(constrained.log_likelihood(
        emissions, path, lengths))[0]
    assert free_ll > -20  # an ordinary path among 125
    # The penalty makes its probability vanish (exp(FORBIDDEN) = 0 in float32).
    assert constrained_ll < free_ll + FORBIDDEN / 2


def test_compact():
    values = np.arange(10).reshape(2, 5)
    keep = np.array([[0, 1, 0, 1, 1], [1, 0, 0, 0, 0]], bool)
    compacted, lengths = compact(values, keep)
    assert list(np.asarray(lengths)) == [3, 1]
    assert list(np.asarray(compacted)[0, :3]) == [1, 3, 4]
    assert np.asarray(compacted)[1, 0] == 5


@pytest.mark.slow
def test_every_crf_test_passes_under_jax():
    pytest.importorskip("jax")
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         __file__, "-k", "not under_jax"],
        capture_output=True, text=True, timeout=300, cwd=root,
        env=dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu",
                 TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stdout[-3000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout
