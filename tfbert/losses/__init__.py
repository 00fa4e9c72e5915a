"""Training losses: a class-weighted cross-entropy for skewed
classification (`WeightedSparseCategoricalCrossentropy`), and the losses
for sentence embeddings (bi-encoders).

Each sentence-embedding loss is a `keras.losses.Loss` whose `y_pred` is what `SentenceEncoder`
returns for a tuple of k text columns: float32 [batch, k, D] embeddings (an
anchor, then its positive / other text, then any negatives). `y_true` is the
per-example label (a score or 0/1) where the loss uses one; the
in-batch-negative loss ignores it. Each equals sentence-transformers' loss
of the same name on the same embeddings.
"""

from tfbert.losses.class_weighted import (
    WeightedSparseCategoricalCrossentropy)
from tfbert.losses.contrastive import ContrastiveLoss, OnlineContrastiveLoss
from tfbert.losses.cosent import CoSENTLoss
from tfbert.losses.cosine_similarity import CosineSimilarityLoss
from tfbert.losses.distillation import EmbeddingMSELoss
from tfbert.losses.multiple_negatives_ranking import (
    MultipleNegativesRankingLoss)
from tfbert.losses.triplet import TripletLoss

__all__ = ["ContrastiveLoss", "OnlineContrastiveLoss", "CoSENTLoss",
           "CosineSimilarityLoss", "EmbeddingMSELoss",
           "MultipleNegativesRankingLoss", "TripletLoss",
           "WeightedSparseCategoricalCrossentropy"]
