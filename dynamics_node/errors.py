"""The one exception type the library raises for bad descriptions, bad inputs and failed solves."""


class ModelError(ValueError):
    """A robot description, state or request the library cannot use; the message says what to fix."""


class SingularConfigurationError(ModelError):
    """A cluster's constraint split or articulated inertia is singular at the given configuration."""
