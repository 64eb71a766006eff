"""The graph pipeline (``pipeline: graph``): InfoGraph with the core's negatives on TU datasets.

``tu`` (reader of the TU format), ``model`` (GIN + InfoGraph discriminators on torch_geometric),
``evaluate`` (nested-CV SVM accuracy), ``config`` (its config sections), ``pipeline`` (``PIPELINE``).
"""
