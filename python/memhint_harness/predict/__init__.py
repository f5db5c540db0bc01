"""Prediction of a step's CUDA memory on meta tensors (`memhint predict`); see docs/predict.md.
Importing the package imports no torch: allocator.py is usable (and tested) on its own."""
