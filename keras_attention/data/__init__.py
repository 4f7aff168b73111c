"""Data that is not text: composed pictures and clips for the examples.

Generators here use NumPy and scikit-learn's bundled digits only (no
download, no TensorFlow). Import the modules by their full name, e.g.
`from keras_attention.data import digit_clips`.
"""
