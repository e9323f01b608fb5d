"""0.2.0's `middleware` (0.4 only): each name warns where it is now."""

from ._moved import moved as _moved

__all__: list[str] = []
__getattr__ = _moved(__name__)
