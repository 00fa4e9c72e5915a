"""The sentence-transformers side of the sentence benchmarks: training a
`SentenceTransformer` with one of its losses by the recipe of its trainer
(AdamW, learning rate 2e-5, weight decay 0.01 off biases and LayerNorm
weights, linear warmup then linear decay, global-norm clipping 1.0,
seeded shuffling), written out in torch because its trainer needs the
`datasets` package."""

import math

import numpy as np

from tfbert.data.sentence_batching import no_duplicate_batches


def train_sentence_transformer(model, loss, columns, labels, *, epochs,
                               batch_size, learning_rate=2e-5,
                               warmup_fraction=0.1, seed=42,
                               no_duplicates=False, max_steps=None,
                               step_times=None):
    """Trains `model` (a `SentenceTransformer`) in place.

    Args:
      loss: a sentence-transformers loss module built on `model`.
      columns: tuple of lists of str (the loss's text columns).
      labels: float array [n] (zeros where the loss takes none).
      epochs, batch_size, learning_rate, warmup_fraction, seed: the recipe.
      no_duplicates: batch as `tfbert.data.sentence_batching` does (no
        text twice in a batch; for in-batch-negative losses), epoch e with
        seed + e, as tfbert's `fit` draws them.
      max_steps: stop after this many steps (timing runs).
      step_times: a list to append each step's wall seconds to.
    """
    import time

    import torch

    torch.manual_seed(seed)
    count = len(columns[0])
    steps_per_epoch = (len(no_duplicate_batches(columns, batch_size, seed))
                       if no_duplicates else math.ceil(count / batch_size))
    total = steps_per_epoch * epochs
    warmup = int(warmup_fraction * total)
    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight")
    parameters = list(loss.named_parameters())
    optimizer = torch.optim.AdamW([
        {"params": [p for n, p in parameters
                    if not any(k in n for k in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in parameters
                    if any(k in n for k in no_decay)],
         "weight_decay": 0.0}], lr=learning_rate)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: (
        step / max(1, warmup) if step < warmup
        else max(0.0, (total - step) / max(1, total - warmup))))
    rng = np.random.default_rng(seed)
    model.train()
    step = 0
    for epoch in range(epochs):
        if no_duplicates:
            batches = no_duplicate_batches(columns, batch_size, seed + epoch)
        else:
            order = rng.permutation(count)
            batches = [order[i:i + batch_size]
                       for i in range(0, count, batch_size)]
        for batch in batches:
            began = time.perf_counter()
            features = [model.tokenize([column[i] for i in batch])
                        for column in columns]
            loss_value = loss(features, torch.tensor(labels[batch],
                                                     dtype=torch.float32))
            optimizer.zero_grad()
            loss_value.backward()
            torch.nn.utils.clip_grad_norm_(loss.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            if step_times is not None:
                step_times.append(time.perf_counter() - began)
            step += 1
            if max_steps is not None and step >= max_steps:
                model.eval()
                return
    model.eval()
