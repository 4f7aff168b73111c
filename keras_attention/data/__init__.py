"""Datasets that are not a translation corpus, one module each: bAbI
(`babi`: the v1.2 release's files and generated stories), the chorales,
MNIST digits and what is composed from them (cluttered canvases, clips),
long-range documents.

Each takes a local path or generates its data (NumPy, scikit-learn's
bundled digits): nothing is downloaded, and no module here imports
TensorFlow. Import the modules by their full name, e.g.
`from keras_attention.data import babi`.
"""
