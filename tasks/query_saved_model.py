"""Query any exported SavedModel with raw text (see `tfbert_cli.query`).

    python tasks/query_saved_model.py saved_models/NAME --sentence "a sentence"
    python tasks/query_saved_model.py saved_models/squad --question Q --context C
"""

from tfbert_cli.query import main

if __name__ == "__main__":
    main()
