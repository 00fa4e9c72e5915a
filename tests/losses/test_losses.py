"""Each sentence loss against sentence-transformers' on the same
embeddings and labels (its `compute_loss_from_embeddings`), and the
no-duplicate batch sampler."""

import numpy as np
import pytest
import tensorflow as tf
import torch
from sentence_transformers.sentence_transformer import losses as st

from tfbert import losses
from tfbert.data.sentence_batching import no_duplicate_batches

BATCH, DIM = 12, 16


def _embeddings(columns, seed=0):
    return np.random.default_rng(seed).normal(
        size=(BATCH, columns, DIM)).astype(np.float32)


def _ours(loss, embeddings, labels=None):
    labels = np.zeros(BATCH, np.float32) if labels is None else labels
    return float(loss(tf.constant(labels), tf.constant(embeddings)))


def _theirs(loss, embeddings, labels=None):
    columns = [torch.tensor(embeddings[:, i])
               for i in range(embeddings.shape[1])]
    labels = torch.zeros(BATCH) if labels is None else torch.tensor(labels)
    return float(loss.compute_loss_from_embeddings(columns, labels))


@pytest.mark.parametrize("columns", [2, 4])
@pytest.mark.parametrize("scale", [20.0, 7.5])
def test_multiple_negatives_ranking(columns, scale):
    embeddings = _embeddings(columns)
    ours = _ours(losses.MultipleNegativesRankingLoss(scale=scale), embeddings)
    theirs = _theirs(st.MultipleNegativesRankingLoss(None, scale=scale),
                     embeddings)
    assert abs(ours - theirs) <= 1e-5 * max(1.0, abs(theirs))


@pytest.mark.parametrize("columns", [2, 3])
def test_symmetric_multiple_negatives_ranking(columns):
    embeddings = _embeddings(columns, seed=1)
    ours = _ours(losses.MultipleNegativesRankingLoss(symmetric=True),
                 embeddings)
    theirs = _theirs(st.MultipleNegativesSymmetricRankingLoss(None),
                     embeddings)
    assert abs(ours - theirs) <= 1e-5 * max(1.0, abs(theirs))


def test_cosine_similarity():
    embeddings = _embeddings(2, seed=2)
    scores = np.random.default_rng(3).uniform(size=BATCH).astype(np.float32)
    assert _ours(losses.CosineSimilarityLoss(), embeddings, scores) == \
        pytest.approx(_theirs(st.CosineSimilarityLoss(None), embeddings,
                              scores), abs=1e-5)


@pytest.mark.parametrize("scale", [20.0, 5.0])
def test_cosent(scale):
    embeddings = _embeddings(2, seed=4)
    # Ties in the labels: tied pairs add no term.
    scores = np.random.default_rng(5).integers(0, 4, BATCH).astype(
        np.float32)
    ours = _ours(losses.CoSENTLoss(scale=scale), embeddings, scores)
    theirs = _theirs(st.CoSENTLoss(None, scale=scale), embeddings, scores)
    assert abs(ours - theirs) <= 1e-5 * max(1.0, abs(theirs))


@pytest.mark.parametrize("metric,margin", [
    ("euclidean", 5.0), ("cosine", 0.3), ("manhattan", 20.0)])
def test_triplet(metric, margin):
    embeddings = _embeddings(3, seed=6)
    theirs_metric = {"euclidean": st.TripletDistanceMetric.EUCLIDEAN,
                     "cosine": st.TripletDistanceMetric.COSINE,
                     "manhattan": st.TripletDistanceMetric.MANHATTAN}[metric]
    ours = _ours(losses.TripletLoss(margin=margin, distance_metric=metric),
                 embeddings)
    theirs = _theirs(st.TripletLoss(None, distance_metric=theirs_metric,
                                    triplet_margin=margin), embeddings)
    assert theirs > 0   # the margin is active for some triplets
    assert abs(ours - theirs) <= 1e-5 * max(1.0, abs(theirs))


# torch's pairwise_distance adds 1e-6 to each difference before the norm;
# on these embeddings that moves a distance by ~1e-6.
_SIAMESE = {"cosine": (st.SiameseDistanceMetric.COSINE_DISTANCE, 0.5),
            "euclidean": (st.SiameseDistanceMetric.EUCLIDEAN, 6.0),
            "manhattan": (st.SiameseDistanceMetric.MANHATTAN, 20.0)}


@pytest.mark.parametrize("metric", sorted(_SIAMESE))
def test_contrastive(metric):
    embeddings = _embeddings(2, seed=7)
    labels = np.random.default_rng(8).integers(0, 2, BATCH).astype(
        np.float32)
    theirs_metric, margin = _SIAMESE[metric]
    ours = _ours(losses.ContrastiveLoss(margin=margin, distance_metric=metric),
                 embeddings, labels)
    theirs = _theirs(st.ContrastiveLoss(None, distance_metric=theirs_metric,
                                        margin=margin), embeddings, labels)
    assert abs(ours - theirs) <= 1e-5 * max(1.0, abs(theirs))


@pytest.mark.parametrize("metric", sorted(_SIAMESE))
@pytest.mark.parametrize("labels", ["mixed", "only_positives",
                                    "only_negatives"])
def test_online_contrastive(metric, labels):
    embeddings = _embeddings(2, seed=9)
    values = {"mixed": np.random.default_rng(10).integers(0, 2, BATCH),
              "only_positives": np.ones(BATCH),
              "only_negatives": np.zeros(BATCH)}[labels].astype(np.float32)
    theirs_metric, margin = _SIAMESE[metric]
    ours = _ours(losses.OnlineContrastiveLoss(margin=margin,
                                              distance_metric=metric),
                 embeddings, values)
    theirs = _theirs(st.OnlineContrastiveLoss(
        None, distance_metric=theirs_metric, margin=margin), embeddings,
        values)
    assert abs(ours - theirs) <= 1e-5 * max(1.0, abs(theirs))


def test_embedding_mse_to_teacher():
    embeddings = _embeddings(2, seed=11)
    teacher = _embeddings(2, seed=12)
    ours = float(losses.EmbeddingMSELoss()(tf.constant(teacher),
                                           tf.constant(embeddings)))
    theirs = float(st.MSELoss(None).compute_loss_from_embeddings(
        [torch.tensor(embeddings[:, i]) for i in range(2)],
        [torch.tensor(teacher[:, i]) for i in range(2)]))
    assert ours == pytest.approx(theirs, abs=1e-6)


def test_gradients_match_sentence_transformers():
    """The gradient of the loss with respect to the embeddings (what
    training back-propagates into the encoder), MNRL with a hard
    negative."""
    embeddings = _embeddings(3, seed=13)
    tensor = tf.Variable(embeddings)
    with tf.GradientTape() as tape:
        value = losses.MultipleNegativesRankingLoss()(
            tf.zeros(BATCH), tensor)
    ours = tape.gradient(value, tensor).numpy()
    columns = [torch.tensor(embeddings[:, i], requires_grad=True)
               for i in range(3)]
    st.MultipleNegativesRankingLoss(None).compute_loss_from_embeddings(
        columns, torch.zeros(BATCH)).backward()
    theirs = np.stack([c.grad.numpy() for c in columns], axis=1)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="distance_metric must be one of"):
        losses.TripletLoss(distance_metric="hamming")
    with pytest.raises(ValueError, match="scale must be > 0"):
        losses.MultipleNegativesRankingLoss(scale=0)
    with pytest.raises(ValueError, match="takes 3 text columns, got 2"):
        _ours(losses.TripletLoss(), _embeddings(2))


def test_no_duplicate_batches():
    rng = np.random.default_rng(0)
    # 200 pairs over 60 distinct texts: many repeats.
    texts = [f"text {i}" for i in range(60)]
    anchors = [texts[i] for i in rng.integers(0, 60, 200)]
    positives = [texts[i] for i in rng.integers(0, 60, 200)]
    batches = no_duplicate_batches((anchors, positives), 8, seed=1)
    indices = np.concatenate(batches)
    assert sorted(indices.tolist()) == list(range(200))
    for batch in batches:
        batch_texts = [anchors[i] for i in batch] + [
            positives[i] for i in batch if positives[i] != anchors[i]]
        assert len(batch_texts) == len(set(batch_texts))
    assert all(len(b) == 8 for b in batches[:10])
    other = no_duplicate_batches((anchors, positives), 8, seed=2)
    assert [b.tolist() for b in other] != [b.tolist() for b in batches]
