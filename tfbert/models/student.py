"""A smaller student of a task model: K of the teacher's transformer blocks,
evenly spaced, with the teacher's embeddings, pooler and task head
(DistilBERT's initialisation, which kept every other layer)."""

import dataclasses


def kept_layers(num_teacher_layers, num_student_layers):
    """The teacher blocks a K-layer student starts from: `i * N // K` for
    `i < K`, so every other block when K = N / 2, as DistilBERT did.

    Raises:
      ValueError: if K is not in [1, N].
    """
    if not 1 <= num_student_layers <= num_teacher_layers:
        raise ValueError(
            f"a student needs 1 to {num_teacher_layers} layers (the "
            f"teacher's), got {num_student_layers}")
    return [i * num_teacher_layers // num_student_layers
            for i in range(num_student_layers)]


def student_from_teacher(teacher, num_layers, **task_config):
    """A new task model of the teacher's class and configuration, with
    `num_layers` transformer blocks, whose weights are copies of the
    teacher's: block i is teacher block `kept_layers(N, K)[i]`, every other
    layer (embeddings, projection, pooler, heads) the teacher's of the same
    name. Call in the strategy scope the student trains in.

    Args:
      teacher: an `EncoderTaskModel` (`BertClassifier`, `BertSpanLabeler`,
        `BertTokenClassifier`) on a `BertEncoder` of any family whose blocks
        are not shared (not ALBERT's).
      num_layers: K, the student's transformer blocks.
      **task_config: constructor arguments that replace the teacher's
        `task_config()` (e.g. `dropout=0.2`).

    Raises:
      ValueError: if K is out of range or the teacher shares its blocks.
    """
    encoder = teacher.encoder
    if encoder.config.share_layers:
        raise ValueError("the teacher's transformer blocks are one shared "
                         "block (ALBERT): there are no layers to keep")
    kept = kept_layers(encoder.config.num_layers, num_layers)
    student_encoder = type(encoder)(dataclasses.replace(
        encoder.config, num_layers=num_layers), name=encoder.name)
    student = type(teacher)(student_encoder,
                            **{**teacher.task_config(), **task_config},
                            name=teacher.name)
    blocks = {f"transformer_block_{i}": f"transformer_block_{j}"
              for i, j in enumerate(kept)}
    for layer in student.encoder.layers:
        source = encoder.get_layer(blocks.get(layer.name, layer.name))
        layer.set_weights(source.get_weights())
    for layer in student.layers:
        if layer is not student.encoder:
            layer.set_weights(teacher.get_layer(layer.name).get_weights())
    return student
