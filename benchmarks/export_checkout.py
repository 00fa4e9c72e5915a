"""Exports the benchmark classifier with whichever tfbert is importable, so
that two checkouts' exports of the same model can be timed against each
other by `benchmarks/serving_graphs.py`:

    PYTHONPATH=OLD python benchmarks/export_checkout.py runs/ab/old
    PYTHONPATH=.   python benchmarks/export_checkout.py runs/ab/new
    PYTHONPATH=. python -m benchmarks.serving_graphs \
      --exports=runs/ab/old/1,runs/ab/new/1 --rounds=5

The model is MiniLM-L6 with a two-class head drawn from a fixed seed (the
same weights in every checkout), packing SST-2 sentences to 128 tokens;
an untrained head computes exactly what a trained one does.
"""

import sys

import keras


def main(export_dir):
    import tfbert
    from tfbert.export import export_task_model
    from tfbert.export.classifier_serving import ClassifierServingModule
    from tfbert.text import Preprocessor

    keras.utils.set_random_seed(0)
    preset = "minilm-l6-h384-uncased"
    model = tfbert.BertClassifier.from_pretrained(preset, num_classes=2)
    preprocessor = Preprocessor.from_pretrained(preset, seq_length=128)
    print(export_task_model(model, export_dir, lambda m: (
        ClassifierServingModule(m, preprocessor, ["negative", "positive"],
                                ("sentence",)))))


if __name__ == "__main__":
    main(sys.argv[1])
