"""fit(task="classify"): being built (see issues); until then it refuses with a clear message."""


def fit_classify(X, y, **options):
    raise ValueError("task='classify' is not built yet")
