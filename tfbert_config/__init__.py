"""tfbert's configuration dataclasses, checked when made: plain Python that
imports no TensorFlow, so the programs (`tfbert_cli`) check a run's values
before TensorFlow starts. The library uses them through its own names
(`tfbert.training.TrainingConfig`)."""
