"""The one exception type the CLI turns into a single line and a non-zero exit."""


class TrainError(ValueError):
    """A user error (bad config value, missing model package, unusable output dir).

    Subclasses ValueError so library callers that caught ValueError keep working.
    """
