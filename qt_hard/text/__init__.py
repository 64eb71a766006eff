"""The text pipeline: sentences from books / Wiki-N / a synthetic corpus, the bag-of-words,
Quick-Thoughts and transformer encoders, the Quick-Thoughts context loss and the two-view pair
loss. ``qt_hard.text.pipeline.PIPELINE`` is what the training loop sees
(``qt_hard.training.pipeline``)."""
