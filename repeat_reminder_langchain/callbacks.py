"""0.2.0's `callbacks` (until 0.6.0): each name warns where it is now."""

from ._moved import moved as _moved

__all__: list[str] = []
__getattr__ = _moved(__name__)
