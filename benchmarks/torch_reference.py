"""The PyTorch/HF reference training loop every benchmark compares against.

BERT's fine-tuning recipe in plain torch, as `transformers.Trainer` does it:
AdamW without weight decay on biases and LayerNorm parameters, linear warmup
then linear decay (`get_linear_schedule_with_warmup`), global-norm gradient
clipping, one optimizer step per batch.
"""


def adamw(model, learning_rate, epsilon, weight_decay=0.01):
    """torch AdamW over `model`'s parameters, biases and LayerNorm parameters
    excluded from weight decay."""
    import torch

    def excluded(name):
        return "bias" in name or "LayerNorm" in name

    named = list(model.named_parameters())
    return torch.optim.AdamW(
        [{"params": [p for n, p in named if not excluded(n)],
          "weight_decay": weight_decay},
         {"params": [p for n, p in named if excluded(n)],
          "weight_decay": 0.0}],
        lr=learning_rate, eps=epsilon)


def training_step(model, optimizer, loss_fn, scheduler=None, clip_norm=1.0):
    """One update: `loss_fn()` (a scalar tensor computed with `model`),
    backward, clipping (skipped when `clip_norm` is 0 or None), optimizer
    and scheduler steps. Returns the loss as a float."""
    import torch

    loss = loss_fn()
    loss.backward()
    if clip_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def train(model, batches, loss_fn, *, learning_rate, epsilon,
          weight_decay=0.01, warmup_proportion=0.1, clip_norm=1.0):
    """Trains `model` (training mode) for one step per item of `batches` (a
    sequence), with `loss_fn(model, batch)` the scalar loss of one batch.
    Warmup covers the first `int(warmup_proportion * len(batches))` steps.
    Returns the per-step losses."""
    import transformers

    optimizer = adamw(model, learning_rate, epsilon, weight_decay)
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, int(warmup_proportion * len(batches)), len(batches))
    model.train()
    return [training_step(model, optimizer,
                          lambda batch=batch: loss_fn(model, batch),
                          scheduler, clip_norm)
            for batch in batches]
